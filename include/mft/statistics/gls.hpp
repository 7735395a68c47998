// Generalised least squares: y = X beta + e with e ~ N(0, C), C the points'
// full covariance (not only their variances). Where the points share
// randomness (one set of samples read at every depth, one limit draw or
// reference set behind every cell of a study) their errors are correlated,
// and weighing each point by its own variance alone both misweighs them and
// leaves chi^2 on a wrong scale: the residuals about a line through
// positively correlated points are smaller than their variances say, so the
// misfit test never rejects and the slope's interval misses. Whitening by
// the Cholesky factor of C (C = R R^T; y' = R^-1 y, X' = R^-1 X) makes the
// errors independent of unit variance; ordinary least squares on the whitened
// points is then the best linear unbiased fit, (X'^T X')^-1 its covariance,
// and |y' - X' beta|^2 follows chi^2 on n - k degrees of freedom.
// tests/calibration/verdicts.cpp measures both on synthetic data of the
// studies' dependence. Every routine here is not collective.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace mft {

struct GlsFit {
  bool ok = false;          // false: fewer points than k + 1, or X or C singular
  std::vector<double> beta; // the k coefficients
  std::vector<double> cov;  // their covariance (k x k, row-major)
  double chi2 = NAN, p_value = NAN;
  int dof = 0;
  double se(size_t j) const { return std::sqrt(cov[j * beta.size() + j]); }
};

// The fit of y (n) on the k columns of X (n x k, row-major) with the points'
// covariance C (n x n, row-major; symmetric positive definite). Not
// collective.
GlsFit GlsFitOf(const std::vector<double> &X, size_t k, const std::vector<double> &y, const std::vector<double> &C);

// The lower Cholesky factor R of the n x n matrix C (C = R R^T), in place;
// false when C is not positive definite. Not collective.
bool Cholesky(std::vector<double> &C, size_t n);

// Solves R z = b in place for the lower triangular R (n x n): whitens b
// (n x columns, row-major) by C's Cholesky factor. Not collective.
void Whiten(const std::vector<double> &R, size_t n, std::vector<double> &b, size_t columns);

// The covariance of the points as their standard errors and correlations:
// C_ij = rho_ij se_i se_j (rho: n x n, row-major, 1 on its diagonal; empty:
// the identity, independent points). Not collective.
std::vector<double> CovarianceOf(const std::vector<double> &se, const std::vector<double> &rho);

// The p-value of chi^2 on dof degrees of freedom (NaN without one).
// Not collective.
double Chi2PValue(double chi2, int dof);

} // namespace mft
