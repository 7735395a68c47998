// Least-squares fits of straight lines: rates of decay (log R against
// training time) and convergence exponents (log-log).
// Every routine here is not collective.
#pragma once

#include <cstddef>
#include <vector>

namespace mft {

struct LineFit {
  double slope = 0, intercept = 0;
  double rms = 0;   // root mean square of the residuals
  size_t points = 0;
};

// y ~ intercept + slope x over the pairs (x[i], y[i]).
LineFit fit_line(const std::vector<double> &x, const std::vector<double> &y);

} // namespace mft
