// Fits of an error expansion in one size x (a depth, a width, a head
// dimension) to measured values with standard errors, and the one meaning of
// "decided" (docs/results.md, 'What "decided" means').
//
// The expansion: y(x) = sum_{j < terms} c_j x^-(p + j), the order p free (or
// fixed), the coefficients of either sign. For a given p it is linear in c:
// weighted least squares, weights 1 / se^2 (generalised, with the points'
// correlations where they share samples: gls.hpp), its chi^2(p). The order is the p
// of least chi^2 on [kOrderMin, kOrderMax]; its 95% interval the profile's,
// {p : chi^2(p) <= chi^2_min + 3.84}, which needs no linearisation (the
// order of a two-term fit is far from linear in the data). The misfit: chi^2
// on points - terms - 1 degrees of freedom (points - terms with p fixed) and
// its p-value; a fit with p-value below 0.05 is rejected.
//
// One term is the power law C x^-p; `a/x + b/x^2` is two terms with p fixed
// at 1; `a x^-p + b x^-(p+1)` two terms with p free. tests/unit/test_statistics
// measures the misfit flag's power and false alarms, and the intervals'
// coverage, on truths the fitted model does and does not contain.
// Every routine here is not collective.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace mft {

constexpr double kOrderMin = 0, kOrderMax = 4; // where a free order is searched

struct Expansion {
  int terms = 0;            // 0: no fit (too few points for its parameters plus one)
  bool free_order = false;  // p fitted (else given)
  size_t points = 0;
  double p = NAN, p_lo = NAN, p_hi = NAN; // the order and its 95% profile interval (p fixed: all three p)
  bool at_bound = false;    // the interval reaches the search range's end: the range, not the data
  std::vector<double> c, c_se; // the coefficients at p, and their standard errors at that p
  double chi2 = NAN, p_value = NAN;
  int dof = 0;
  bool rejected() const { return p_value < 0.05; }
};

// The fit over the points with x > 0 and se > 0 (at least terms + free_order
// + 1 of them, and as many distinct x). order: p when fixed (ignored when
// free). rho: the points' correlations (n x n over every point given,
// row-major; empty: independent), as points that share samples have: the
// fit is then generalised least squares (gls.hpp) with the covariance rho_ij
// se_i se_j, and chi^2 the whitened residuals'. Not collective.
Expansion ExpansionFit(const std::vector<double> &x, const std::vector<double> &y, const std::vector<double> &se,
                       int terms, bool free_order, double order = 1, const std::vector<double> &rho = {});

// A free order's interval from a bootstrap instead of the profile
// (statistics/bootstrap.hpp): the order of least chi^2 on each source's
// replicates of y (over the same x and se as the fit; a replicate that
// loses a point is left out), BootstrapInterval's, held to [kOrderMin,
// kOrderMax] (at_bound when it reaches an end). Without a replicate, e is
// left. The studies keep the profile: on synthetic studies along one size
// this interval, from a joint resample of the seeds and references,
// undercovers with few seeds (tests/calibration --design expansion prints
// both). Not collective.
struct Resample;
void ExpansionResampled(Expansion *e, const std::vector<double> &x, const std::vector<double> &se,
                        const std::vector<Resample> &sources);

// "Decided": the fit has a degree of freedom and is not rejected (p-value >=
// 0.05), and the rate's 95% interval is finite and no wider than `width`
// (kDecidedWidth: a rate known to +-0.1). Not collective.
constexpr double kDecidedWidth = 0.2;
bool Decided(double lo, double hi, double p_value, double width = kDecidedWidth);
// A free order's: also not at the search range's end. Not collective.
bool Decided(const Expansion &e, double width = kDecidedWidth);

// The fit's form: "a x^-p + b x^-(p+1)", "a x^-1 + b x^-2", ...; `x` names
// the size. Not collective.
std::string ExpansionForm(const Expansion &e, const std::string &x);

// A fit as one line: "C x^-p: p = 0.90 [0.88, 0.92], chi^2 19.5 on 2 (p-value
// 5.8e-05, rejected)", the coefficients for more terms; `x` names the size.
// Not collective.
std::string ExpansionLine(const Expansion &e, const std::string &x);

// An exponential rate in depth: y(s) = y0 e^(-lambda s) fitted to means y
// at depths s > 0 with their covariance cov (n x n, row-major: one set of
// samples is read at every depth, so the depths' errors are correlated;
// points without spread, a variance below (1e-12 y)^2, such as the inputs'
// depth 0 or samples that are all one model, are left out; too few points:
// no fit, NaN): the line log y = log y0 - lambda s by generalised least
// squares (gls.hpp) with log y's covariance cov_ij / (y_i y_j). lambda > 0:
// the mean decays. Its 95% interval is lambda +- 1.96 of its standard error;
// chi^2 is the whitened residuals' on points - 2 degrees of freedom;
// `decided` is Decided's (the line not rejected, the interval no wider than
// 0.2). With logarithmic = false, the line y = y0 - lambda s itself (y a
// logarithm already: a mean log-distance), covariance cov. On random-walk
// and geometric-walk means at 8 depths the interval covers and chi^2's
// p-values are uniform (tests/calibration/verdicts.cpp); weighing each depth
// by its variance alone gives chi^2 about a sixth of its degrees of freedom.
// Not collective.
struct DepthRate {
  double rate = NAN, lo = NAN, hi = NAN;
  double chi2 = NAN, p_value = NAN;
  int dof = 0;
  size_t points = 0;
  bool decided = false;
};
DepthRate DepthRateFit(const std::vector<double> &s, const std::vector<double> &y, const std::vector<double> &cov,
                       bool logarithmic = true);

} // namespace mft
