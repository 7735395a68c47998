// A power law in two sizes fitted to cells (power_fit.hpp).
#include "mft/statistics/power_fit.hpp"

#include "mft/statistics/gls.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mft {

PowerFit PowerFitOf(const std::vector<double> &L, const std::vector<double> &H, const std::vector<double> &err,
                    const std::vector<double> &se, const std::vector<char> &use, const std::vector<double> &rho,
                    double widen) {
  std::vector<size_t> at;
  for (size_t i = 0; i < err.size(); ++i)
    if (use[i] && err[i] > 0 && se[i] > 0) at.push_back(i);
  PowerFit f;
  if (at.empty()) return f;
  const size_t n = at.size();
  std::vector<double> l(n), h(n), y(n), rel(n), r(rho.empty() ? 0 : n * n);
  for (size_t i = 0; i < n; ++i) {
    l[i] = L[at[i]], h[i] = H[at[i]], y[i] = std::log(err[at[i]]), rel[i] = se[at[i]] / err[at[i]];
    for (size_t j = 0; j < n && !rho.empty(); ++j) r[i * n + j] = rho[at[i] * err.size() + at[j]];
  }
  f.fits_p = *std::max_element(l.begin(), l.end()) > *std::min_element(l.begin(), l.end());
  f.fits_q = *std::max_element(h.begin(), h.end()) > *std::min_element(h.begin(), h.end());
  const size_t k = 1 + (f.fits_p ? 1 : 0) + (f.fits_q ? 1 : 0);
  if (n < k + 1 || k == 1) return f;
  std::vector<double> X;
  for (size_t i = 0; i < n; ++i) {
    X.push_back(1);
    if (f.fits_p) X.push_back(-std::log(l[i]));
    if (f.fits_q) X.push_back(-std::log(h[i]));
  }
  const GlsFit g = GlsFitOf(X, k, y, CovarianceOf(rel, r));
  if (!g.ok) return f;
  const double z = 1.959963984540054 * widen;
  f.cells = (PetscInt)n, f.C = std::exp(g.beta[0]), f.chi2 = g.chi2, f.dof = g.dof, f.p_value = g.p_value;
  if (f.fits_p) f.p = g.beta[1], f.p_lo = f.p - z * g.se(1), f.p_hi = f.p + z * g.se(1);
  if (f.fits_q) f.q = g.beta[k - 1], f.q_lo = f.q - z * g.se(k - 1), f.q_hi = f.q + z * g.se(k - 1);
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
