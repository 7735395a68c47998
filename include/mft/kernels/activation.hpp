// The MLP sublayer's activations sigma and their kernels (docs/model.md,
// 'The MLP sublayer'): identity, relu, gelu (x Phi(x)), tanh and erf, their
// slopes, and the kernel E[sigma(p) sigma(q)] of a centred Gaussian pair
// (p, q), which at p = u . x + b, q = u . y + b with u ~ N(0, s_u^2 / d I)
// and b ~ N(0, s_b^2) is the activation's kernel of the tokens x and y:
// var p = s_u^2 |x|^2 / d + s_b^2, cov(p, q) = s_u^2 x . y / d + s_b^2.
// Every routine here is not collective: plain arithmetic.
#pragma once

#include "mft/kernels/shape.hpp"

namespace mft {

// sigma(z) and sigma'(z).
// Not collective.
double Activate(Activation a, double z);
double ActivateSlope(Activation a, double z);

// s[e] = sigma(z[e]) and, when ds is not null, ds[e] = sigma'(z[e]), e < n:
// the erf, erfc, tanh and exp by SLEEF's vector functions where the build
// has it (within a few units in the last place of Activate's libm), every
// entry by the same path wherever it sits in z.
// Not collective.
void ActivateAll(Activation a, const double *z, PetscInt n, double *s, double *ds);

// E[sigma(p) sigma(q)] for (p, q) centred Gaussian of variances pp, qq and
// covariance pq: in closed form for the identity (pq), relu (the arc-cosine
// kernel of degree 1) and erf (the arcsine kernel); by Gauss-Hermite
// quadrature of ActivationKernelNodes nodes a dimension for gelu and tanh
// (and for any activation when `quadrature`).
// Not collective.
double ActivationKernel(Activation a, double pp, double pq, double qq, bool quadrature = false);
constexpr int ActivationKernelNodes = 96;

// E[sigma(p)] for p ~ N(0, pp): the mean-field drift's factor with w of mean
// w_mean (closed form for identity, relu and erf; quadrature otherwise).
// Not collective.
double ActivationMean(Activation a, double pp);
// d/dpp ActivationMean(a, pp), pp > 0.
// Not collective.
double ActivationMeanSlope(Activation a, double pp);

} // namespace mft
