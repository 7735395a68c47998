// Straight-line least squares.
#include "mft/statistics/fit.hpp"

#include <cmath>

namespace mft {

LineFit fit_line(const std::vector<double> &x, const std::vector<double> &y) {
  LineFit f;
  const size_t n = x.size();
  f.points = n;
  if (n < 2) return f;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i] / (double)n, my += y[i] / (double)n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double r2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = y[i] - f.intercept - f.slope * x[i];
    r2 += r * r;
  }
  f.rms = std::sqrt(r2 / (double)n);
  return f;
}

} // namespace mft
