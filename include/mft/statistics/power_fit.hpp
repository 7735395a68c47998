// A power law in two sizes, err = C L^-p H^-q, fitted to cells with
// standard errors and correlations: generalised least squares of log err on
// log L and log H (gls.hpp), with the covariance rho_ij (se_i / err_i)
// (se_j / err_j) of log err (cells that share one limit draw or reference
// set are correlated through it: SharedCovariance, two_sample.hpp). In
// logarithms a cell's variance does not grow with its error (its
// first-order part is se / err times a constant), so the weights do not
// follow the data's noise, as they would for the squares. The rates' 95%
// intervals are the fit's (the model is linear in log C, p and q), the
// misfit chi^2 of the whitened residuals and its p-value, and the verdict
// in the one meaning of "decided" (expansion.hpp). The cells fitted are the
// resolved ones: tests/calibration/verdicts.cpp calibrates the intervals and
// the misfit, that selection included, on studies in law whose cells share
// one limit draw, at the effect sizes the studies logged.
//
// Against a finite reference of sizes (L_ref, H_ref) a cell's gap is the
// difference of two points of one convergence, err = C |L^-p H^-q - L_ref^-p
// H_ref^-q|, not C L^-p H^-q: the plain law steepens near the reference
// (the gap closes at it) and reads a rate too large. That model is fitted
// there (Gauss-Newton in GLS from the plain law's fit), its intervals from
// its gradient at the fit; the calibration holds it as the plain one.
// Not collective.
#pragma once

#include "mft/statistics/expansion.hpp"

#include <petscsys.h>

#include <cmath>
#include <string>
#include <vector>

namespace mft {

struct PowerFit {
  PetscInt cells = 0;
  double C = 0, p = 0, q = 0;                 // err = C L^-p H^-q
  double p_lo = 0, p_hi = 0, q_lo = 0, q_hi = 0; // 95% intervals
  bool fits_p = false, fits_q = false;        // L (H) varies among the cells fitted
  bool reference = false;                     // the finite reference's term is in the model
  double L_ref = INFINITY, H_ref = INFINITY;  // its sizes
  // The reference's term was asked for and does not fit (Gauss-Newton does
  // not converge: a gap that does not close at the reference, e.g. flat in
  // the size); the plain law is fitted instead, and the verdict says so.
  bool reference_failed = false;
  // The misfit: chi^2 of the whitened residuals in logarithms on dof =
  // cells - parameters, and its p-value (NaN without a degree of freedom);
  // a fit with p_value < 0.05 is rejected, its rates describe no convergence.
  double chi2 = 0, p_value = NAN;
  PetscInt dof = 0;
  bool rejected() const { return p_value < 0.05; }
  // Decided (statistics/expansion.hpp): the fit not rejected, the rate's
  // interval no wider than kDecidedWidth and inside a free order's range
  // [kOrderMin, kOrderMax] (an error flat in a size, its rate's interval
  // holding 0, decides no order).
  bool decided_p() const { return cells > 0 && fits_p && p_lo >= kOrderMin && p_hi <= kOrderMax && Decided(p_lo, p_hi, p_value); }
  bool decided_q() const { return cells > 0 && fits_q && q_lo >= kOrderMin && q_hi <= kOrderMax && Decided(q_lo, q_hi, p_value); }
};

// The fit over the cells with `use` set, err > 0 and se > 0; rho: the
// cells' correlations (n x n over all the cells given, row-major; empty:
// independent); widen: the intervals' half widths times this (a
// calibration's correction: LawFitPoints::widen); L_ref, H_ref: the
// reference's sizes (infinite: a limit). The reference's term enters when
// it is finite in every size that varies among the cells and equal to the
// cells' in a size that does not (a reference at another fixed size is no
// point of this law: the plain one is fitted); a cell of the reference's
// own sizes is left out; where the reference's term does not fit, the plain
// law (reference_failed). Fewer than 3 cells (4 when both L and H vary), or
// no convergence of the plain law: cells = 0. Not collective.
PowerFit PowerFitOf(const std::vector<double> &L, const std::vector<double> &H, const std::vector<double> &err,
                    const std::vector<double> &se, const std::vector<char> &use, const std::vector<double> &rho = {},
                    double widen = 1, double L_ref = INFINITY, double H_ref = INFINITY);

// Its verdict as words: "chi^2 3.1 on 2 (p 0.21): p decided, q not
// decided", or "...: the power law is rejected". Not collective.
std::string PowerFitVerdict(const PowerFit &f, const char *p_name = "p", const char *q_name = "q");

} // namespace mft
