// Generalised least squares by whitening (gls.hpp).
#include "mft/statistics/gls.hpp"

#include <boost/math/distributions/chi_squared.hpp>

namespace mft {

bool Cholesky(std::vector<double> &C, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double d = C[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= C[j * n + k] * C[j * n + k];
    if (!(d > 0)) return false;
    C[j * n + j] = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double s = C[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= C[i * n + k] * C[j * n + k];
      C[i * n + j] = s / C[j * n + j];
    }
    for (size_t k = j + 1; k < n; ++k) C[j * n + k] = 0;
  }
  return true;
}

void Whiten(const std::vector<double> &R, size_t n, std::vector<double> &b, size_t columns) {
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < columns; ++c) {
      double s = b[i * columns + c];
      for (size_t k = 0; k < i; ++k) s -= R[i * n + k] * b[k * columns + c];
      b[i * columns + c] = s / R[i * n + i];
    }
}

double Chi2PValue(double chi2, int dof) {
  if (dof <= 0 || !std::isfinite(chi2)) return NAN;
  return boost::math::cdf(boost::math::complement(boost::math::chi_squared((double)dof), std::max(chi2, 0.0)));
}

std::vector<double> CovarianceOf(const std::vector<double> &se, const std::vector<double> &rho) {
  const size_t n = se.size();
  std::vector<double> C(n * n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      C[i * n + j] = (i == j ? 1.0 : rho.empty() ? 0.0 : rho[i * n + j]) * se[i] * se[j];
  return C;
}

GlsFit GlsFitOf(const std::vector<double> &X, size_t k, const std::vector<double> &y, const std::vector<double> &C) {
  GlsFit f;
  const size_t n = y.size();
  if (n < k + 1 || X.size() != n * k || C.size() != n * n) return f;
  std::vector<double> R = C, Xw = X, yw = y;
  if (!Cholesky(R, n)) return f;
  Whiten(R, n, Xw, k), Whiten(R, n, yw, 1);
  // Normal equations of the whitened points, inverted (k is 2 or 3 here).
  std::vector<double> A(k * k, 0.0), b(k, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t r = 0; r < k; ++r) {
      b[r] += Xw[i * k + r] * yw[i];
      for (size_t c = 0; c < k; ++c) A[r * k + c] += Xw[i * k + r] * Xw[i * k + c];
    }
  std::vector<double> L = A, inv(k * k, 0.0);
  if (!Cholesky(L, k)) return f;
  for (size_t c = 0; c < k; ++c) { // A^-1, column by column: L L^T x = e_c
    std::vector<double> e(k, 0.0);
    e[c] = 1;
    Whiten(L, k, e, 1);
    for (size_t i = k; i-- > 0;) {
      double s = e[i];
      for (size_t j = i + 1; j < k; ++j) s -= L[j * k + i] * e[j];
      e[i] = s / L[i * k + i];
    }
    for (size_t r = 0; r < k; ++r) inv[r * k + c] = e[r];
  }
  f.beta.assign(k, 0.0);
  for (size_t r = 0; r < k; ++r)
    for (size_t c = 0; c < k; ++c) f.beta[r] += inv[r * k + c] * b[c];
  f.cov = inv;
  f.chi2 = 0;
  for (size_t i = 0; i < n; ++i) {
    double r = yw[i];
    for (size_t c = 0; c < k; ++c) r -= Xw[i * k + c] * f.beta[c];
    f.chi2 += r * r;
  }
  f.dof = (int)(n - k);
  f.p_value = Chi2PValue(f.chi2, f.dof);
  f.ok = true;
  return f;
}

} // namespace mft
