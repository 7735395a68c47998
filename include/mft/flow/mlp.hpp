// The MLP sublayer of a layer and its transposed Jacobians, on the owned
// tokens of a state (docs/model.md, 'The MLP sublayer'):
//
//   f_m(y)_i = scale sum_j w_j sigma(u_j . y_i + b_j),   scale = L^(1-a') m^-c'
//
// a token at a time, so that no token crosses the network: each rank takes
// its owned tokens through every neuron of the layer (neurons.hpp), in
// blocks of kMlpRows tokens, as BLAS products (Z = Y U^T + b, f += scale
// sigma(Z) W), every one a plain product (U^T and W^T copied once a layer)
// with the small-product path's unit factor (the scale taken by sigma(Z)). The reverse makes, with the same lam, both (df_m/dy)^T lam
// and the layer's parameter part, kept until it is added with its weight.
// An ensemble's folded models (Neurons::models) take their own tokens, the
// s-th part of the rank's, through their own neurons.
//
// The mean-field ODE's sublayer at initialisation (`expected`, no neurons):
// the law's drift itself, w independent of (u, b),
//   f_m(y)_i = w_mean 1_d E[sigma(p)],  p ~ N(0, u_gain^2 |y_i|^2 / d + b_gain^2),
// exact where an ensemble of neurons would carry its sampling error.
#pragma once

#include "mft/layout/neurons.hpp"

#include <petscvec.h>

#include <vector>

namespace mft {

constexpr PetscInt kMlpRows = 128;

struct Mlp {
  Neurons *neurons = nullptr;    // null: the expected drift
  Activation activation = Activation::relu;
  PetscInt d = 0;                // token dimension
  double u2 = 0, b2 = 0, w_mean = 0; // the expected drift's u_gain^2, b_gain^2 and w_mean
  std::vector<double> z, s, g;   // a block's pre-activations, activations, their adjoints (rows x m)
  std::vector<double> ut, wt, bias; // a layer's U^T and W^T (d x m) and biases, as the products take them
  std::vector<double> layer_grad; // the last reverse's parameter part (one layer's neurons, unweighted)
  PetscInt layer = -1;           // its layer
};

// Not collective.
void MlpCreate(Neurons *n, Mlp *mlp);
// The expected drift of the neurons' initial law (model m, init s).
// Not collective.
void MlpCreateExpected(const ModelSettings &m, const InitSettings &s, Mlp *mlp);

// f += f_m(y) of layer l on the owned tokens (y and f share a layout).
// Not collective: the rank's own tokens, its replica of the neurons.
PetscErrorCode MlpEvaluate(Mlp *mlp, PetscInt l, Vec y, Vec f);

// dy = (df_m/dy)^T lam at y, layer l; keeps (df_m/dtheta)^T lam of the
// rank's tokens in layer_grad.
// Not collective.
PetscErrorCode MlpReverse(Mlp *mlp, PetscInt l, Vec y, Vec lam, Vec dy);

// Neurons::grad[layer] += weight * layer_grad, the last reverse's layer.
// Not collective: this rank's partial sums only.
void MlpReverseParameters(Mlp *mlp, double weight);

} // namespace mft
