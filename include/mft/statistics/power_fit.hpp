// A power law in two sizes, err = C L^-p H^-q, fitted to cells with
// standard errors: weighted least squares in logarithms, the rates' 95%
// intervals from a parametric bootstrap of the cells, the misfit (chi^2 and
// its p-value) and the verdict in the one meaning of "decided"
// (expansion.hpp). Not collective.
#pragma once

#include "mft/statistics/expansion.hpp"

#include <petscsys.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mft {

struct PowerFit {
  PetscInt cells = 0;
  double C = 0, p = 0, q = 0;                 // err = C L^-p H^-q
  double p_lo = 0, p_hi = 0, q_lo = 0, q_hi = 0; // 95% intervals (bootstrap)
  bool fits_p = false, fits_q = false;        // L (H) varies among the cells fitted
  // The misfit: chi^2 of the residuals (weighted by the cells' standard
  // errors, in logarithms) on dof = cells - parameters, and its p-value
  // (NaN without a degree of freedom); a fit with p_value < 0.05 is
  // rejected, its rates describe no convergence.
  double chi2 = 0, p_value = NAN;
  PetscInt dof = 0;
  bool rejected() const { return p_value < 0.05; }
  // Decided (statistics/expansion.hpp): the fit not rejected, the rate's
  // interval no wider than kDecidedWidth.
  bool decided_p() const { return cells > 0 && fits_p && Decided(p_lo, p_hi, p_value); }
  bool decided_q() const { return cells > 0 && fits_q && Decided(q_lo, q_hi, p_value); }
};

// The fit over the cells with `resolved` set; se: each cell's standard
// error (GramGap::se()). Fewer than 2 cells (3 when both
// L and H vary): cells = 0. `seed` draws the bootstrap.
// Not collective.
PowerFit PowerFitOf(const std::vector<double> &L, const std::vector<double> &H, const std::vector<double> &err,
                    const std::vector<double> &se, const std::vector<char> &resolved, std::uint64_t seed);

// Its verdict as words: "chi^2 3.1 on 2 (p 0.21): p decided, q not
// decided", or "...: the power law is rejected". Not collective.
std::string PowerFitVerdict(const PowerFit &f, const char *p_name = "p", const char *q_name = "q");

} // namespace mft
