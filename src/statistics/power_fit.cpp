// A power law in two sizes fitted to cells (power_fit.hpp).
#include "mft/statistics/power_fit.hpp"

#include "mft/statistics/gls.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mft {

namespace {

// The cells' sizes in logarithms and what the model takes of them: column a
// of the exponents (p, q) the fit frees, and the reference's sizes.
struct Sizes {
  std::vector<std::vector<double>> log_n; // per freed exponent, the cells' log sizes
  std::vector<double> log_ref;            // per freed exponent, the reference's (+inf: a limit)
  bool reference = false;                 // a finite reference enters the model
};

// The model log|n^-e - n_ref^-e| (theta = log C, e) at cell i, and its
// gradient in theta; the reference's term is n_ref^-e = 0 for a limit.
double ModelAt(const Sizes &z, const std::vector<double> &theta, size_t i, double *grad) {
  double cell = 0, ref = 0;
  for (size_t a = 0; a < z.log_n.size(); ++a) cell -= theta[a + 1] * z.log_n[a][i], ref -= theta[a + 1] * z.log_ref[a];
  const double u = std::exp(cell) - (z.reference ? std::exp(ref) : 0);
  grad[0] = 1;
  for (size_t a = 0; a < z.log_n.size(); ++a)
    grad[a + 1] = (-z.log_n[a][i] * std::exp(cell) + (z.reference ? z.log_ref[a] * std::exp(ref) : 0)) / u;
  return theta[0] + std::log(std::fabs(u));
}

// Gauss-Newton in generalised least squares from theta: each step the GLS
// fit of the residuals on the model's gradient, halved until the whitened
// sum of squares falls; the last fit (its step below 1e-10) gives the
// covariance and the misfit. Not ok when it does not converge.
GlsFit GaussNewton(const Sizes &z, const std::vector<double> &y, const std::vector<double> &cov,
                   std::vector<double> *theta) {
  const size_t n = y.size(), k = theta->size();
  std::vector<double> R = cov;
  GlsFit g;
  if (!Cholesky(R, n)) return g;
  std::vector<double> X(n * k), r(n);
  auto residuals = [&](const std::vector<double> &t) { // the whitened sum of squares (inf: undefined)
    for (size_t i = 0; i < n; ++i) r[i] = y[i] - ModelAt(z, t, i, &X[i * k]);
    std::vector<double> w = r;
    Whiten(R, n, w, 1);
    double s2 = 0;
    for (double v : w) s2 += v * v;
    return std::isfinite(s2) ? s2 : INFINITY;
  };
  double s2 = residuals(*theta);
  for (int it = 0; it < 200 && std::isfinite(s2); ++it) {
    g = GlsFitOf(X, k, r, cov);
    if (!g.ok) return g;
    double largest = 0;
    for (double b : g.beta) largest = std::max(largest, std::fabs(b));
    if (largest < 1e-10) return g;
    double step = 1;
    for (; step > 1e-6; step /= 2) {
      std::vector<double> t = *theta;
      for (size_t j = 0; j < k; ++j) t[j] += step * g.beta[j];
      const double next = residuals(t);
      if (next <= s2 * (1 + 1e-12)) {
        *theta = t, s2 = next;
        break;
      }
    }
    if (step <= 1e-6) break;
  }
  g.ok = false;
  return g;
}

} // namespace

PowerFit PowerFitOf(const std::vector<double> &L, const std::vector<double> &H, const std::vector<double> &err,
                    const std::vector<double> &se, const std::vector<char> &use, const std::vector<double> &rho,
                    double widen, double L_ref, double H_ref) {
  PowerFit f;
  std::vector<size_t> at;
  for (size_t i = 0; i < err.size(); ++i)
    if (use[i] && err[i] > 0 && se[i] > 0 && !(L[i] == L_ref && H[i] == H_ref)) at.push_back(i);
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
  // The reference enters when it is finite in every size the fit frees
  // and equal to the cells' in a size it holds fixed (else its term is 0 or
  // no term of this model, and the plain power law is fitted).
  Sizes z;
  const double logs[2][2] = {{std::log(l[0]), std::log(L_ref)}, {std::log(h[0]), std::log(H_ref)}};
  const bool frees[2] = {f.fits_p, f.fits_q};
  z.reference = true;
  for (int a = 0; a < 2; ++a) {
    if (frees[a]) {
      z.log_n.emplace_back(n), z.log_ref.push_back(logs[a][1]);
      for (size_t i = 0; i < n; ++i) z.log_n.back()[i] = std::log(a == 0 ? l[i] : h[i]);
      z.reference &= std::isfinite(logs[a][1]);
    } else
      z.reference &= logs[a][0] == logs[a][1];
  }
  const std::vector<double> C = CovarianceOf(rel, r);
  std::vector<double> theta(k, 0.0);
  GlsFit g;
  { // the plain power law: linear in logarithms, the start of the reference's model
    Sizes plain = z;
    plain.reference = false;
    g = GaussNewton(plain, y, C, &theta);
    std::vector<double> with = theta;
    const GlsFit h = z.reference && g.ok ? GaussNewton(z, y, C, &with) : GlsFit{};
    if (h.ok) g = h, theta = with;
    f.reference_failed = z.reference && g.ok && !h.ok; // a gap that does not close at the reference
    z.reference = h.ok;
  }
  if (!g.ok) return f;
  const double zq = 1.959963984540054 * widen;
  f.cells = (PetscInt)n, f.C = std::exp(theta[0]), f.chi2 = g.chi2, f.dof = g.dof, f.p_value = g.p_value;
  f.reference = z.reference, f.L_ref = L_ref, f.H_ref = H_ref;
  if (f.fits_p) f.p = theta[1], f.p_lo = f.p - zq * g.se(1), f.p_hi = f.p + zq * g.se(1);
  if (f.fits_q) f.q = theta[k - 1], f.q_lo = f.q - zq * g.se(k - 1), f.q_hi = f.q + zq * g.se(k - 1);
  return f;
}

std::string PowerFitVerdict(const PowerFit &f, const char *p_name, const char *q_name) {
  char text[160];
  snprintf(text, sizeof text, "chi^2 %.3g on %" PetscInt_FMT " (p %.3g)", f.chi2, f.dof, f.p_value);
  std::string v = text;
  if (f.reference_failed) v += ", the plain law (the gap does not close at the reference: its term does not fit)";
  if (f.rejected()) return v + ": the power law is rejected";
  std::string rates;
  if (f.fits_p) rates += std::string(p_name) + (f.decided_p() ? " decided" : " not decided");
  if (f.fits_q) rates += (rates.empty() ? "" : ", ") + std::string(q_name) + (f.decided_q() ? " decided" : " not decided");
  return v + ": " + rates;
}

} // namespace mft
