// A power law in two sizes fitted to cells (power_fit.hpp).
#include "mft/statistics/power_fit.hpp"

#include "mft/layout/random.hpp"
#include "mft/statistics/bootstrap.hpp"

#include <boost/math/distributions/chi_squared.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mft {

namespace {

// Weighted least squares of y on [1, log L, log H] (the columns that vary):
// C, p, q from the coefficients.
bool SolvePowerFit(const std::vector<double> &L, const std::vector<double> &H, const std::vector<double> &y,
                   const std::vector<double> &w, bool fp, bool fq, double *C, double *p, double *q) {
  const int k = 1 + (fp ? 1 : 0) + (fq ? 1 : 0);
  double A[3][3] = {{0}}, b[3] = {0};
  for (size_t i = 0; i < y.size(); ++i) {
    double row[3] = {1, 0, 0};
    int c = 1;
    if (fp) row[c++] = -std::log(L[i]);
    if (fq) row[c++] = -std::log(H[i]);
    for (int r = 0; r < k; ++r) {
      b[r] += w[i] * row[r] * y[i];
      for (int s = 0; s < k; ++s) A[r][s] += w[i] * row[r] * row[s];
    }
  }
  for (int c = 0; c < k; ++c) { // Gauss-Jordan, no pivoting needed for a positive definite A
    if (std::fabs(A[c][c]) < 1e-300) return false;
    for (int r = 0; r < k; ++r)
      if (r != c) {
        const double f = A[r][c] / A[c][c];
        for (int s = 0; s < k; ++s) A[r][s] -= f * A[c][s];
        b[r] -= f * b[c];
      }
  }
  double x[3] = {0, 0, 0};
  for (int c = 0; c < k; ++c) x[c] = b[c] / A[c][c];
  *C = std::exp(x[0]);
  *p = fp ? x[1] : 0;
  *q = fq ? x[fp ? 2 : 1] : 0;
  return true;
}

} // namespace

PowerFit PowerFitOf(const std::vector<double> &L, const std::vector<double> &H, const std::vector<double> &err,
                    const std::vector<double> &se, const std::vector<char> &resolved, std::uint64_t seed) {
  std::vector<double> l, h, e, s;
  for (size_t i = 0; i < err.size(); ++i)
    if (resolved[i] && err[i] > 0) l.push_back(L[i]), h.push_back(H[i]), e.push_back(err[i]), s.push_back(se[i]);
  PowerFit f;
  if (l.empty()) return f;
  f.fits_p = *std::max_element(l.begin(), l.end()) > *std::min_element(l.begin(), l.end());
  f.fits_q = *std::max_element(h.begin(), h.end()) > *std::min_element(h.begin(), h.end());
  const size_t need = 1 + (f.fits_p ? 1 : 0) + (f.fits_q ? 1 : 0) + 1;
  if (l.size() < need || (!f.fits_p && !f.fits_q)) return f;
  std::vector<double> y(e.size()), w(e.size());
  for (size_t i = 0; i < e.size(); ++i) y[i] = std::log(e[i]), w[i] = std::pow(e[i] / s[i], 2); // var(log e) = (s/e)^2
  if (!SolvePowerFit(l, h, y, w, f.fits_p, f.fits_q, &f.C, &f.p, &f.q)) return f;
  f.cells = (PetscInt)l.size();
  // The misfit: chi^2 of the weighted residuals in logarithms on the
  // degrees of freedom left, and the chance of one as large under the fit.
  f.dof = f.cells - (PetscInt)(1 + (f.fits_p ? 1 : 0) + (f.fits_q ? 1 : 0));
  for (size_t i = 0; i < y.size(); ++i) {
    const double r = y[i] - (std::log(f.C) - f.p * std::log(l[i]) - f.q * std::log(h[i]));
    f.chi2 += w[i] * r * r;
  }
  f.p_value = f.dof > 0 ? boost::math::cdf(boost::math::complement(boost::math::chi_squared((double)f.dof), f.chi2)) : NAN;
  const int draws = 2000;
  std::vector<double> ps, qs;
  Stream st(seed, 0);
  for (int b = 0; b < draws; ++b) {
    std::vector<double> yb(e.size());
    for (size_t i = 0; i < e.size(); ++i) yb[i] = std::log(std::max(e[i] + s[i] * st.normal(), 1e-3 * e[i]));
    double C, p, q;
    if (SolvePowerFit(l, h, yb, w, f.fits_p, f.fits_q, &C, &p, &q)) ps.push_back(p), qs.push_back(q);
  }
  const std::array<double, 2> pi = Percentiles95(ps), qi = Percentiles95(qs);
  f.p_lo = pi[0], f.p_hi = pi[1], f.q_lo = qi[0], f.q_hi = qi[1];
  return f;
}

std::string PowerFitVerdict(const PowerFit &f, const char *p_name, const char *q_name) {
  char text[160];
  snprintf(text, sizeof text, "chi^2 %.3g on %" PetscInt_FMT " (p %.3g)", f.chi2, f.dof, f.p_value);
  std::string v = text;
  if (f.rejected()) return v + ": the power law is rejected";
  std::string rates;
  if (f.fits_p) rates += std::string(p_name) + (f.decided_p() ? " decided" : " not decided");
  if (f.fits_q) rates += (rates.empty() ? "" : ", ") + std::string(q_name) + (f.decided_q() ? " decided" : " not decided");
  return v + ": " + rates;
}

} // namespace mft
