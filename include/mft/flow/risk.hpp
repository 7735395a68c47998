// The risks of docs/model.md ('Sequences as distributions') and their gradients dR/dx(1).
//   token:  R = (1/M) sum_m (1/N) sum_i 1/2 |x[m,i](1) - y[m,i]|^2
//   pooled: R = (1/M) sum_m 1/2 |W xbar[m](1) - z[m]|^2,  xbar[m] = (1/N) sum_i x[m,i]
// With weighted tokens (TokenLayout::weights, 'Token measures') every 1/N
// is token i's weight w[m,i].
#pragma once

#include "mft/settings/settings.hpp"
#include "mft/layout/tokens.hpp"

#include <vector>

namespace mft {

struct Targets {
  LossKind kind = LossKind::token;
  Vec y = nullptr;           // token: (M, N, d) in the state layout
  PetscInt c = 0;            // pooled: outputs per sequence
  std::vector<double> z;     // pooled: (M, c), on every rank
  std::vector<double> W;     // pooled: readout (c, d), on every rank
};

// Collective on the targets' comm.
PetscErrorCode TargetsDestroy(Targets *t);

// Per-sequence means xbar (M x d, on every rank) of a state vector.
// Collective on x's comm.
PetscErrorCode SequenceMeans(const TokenLayout &t, Vec x, std::vector<double> &xbar);

// Pooled outputs W xbar[m] (M x c, on every rank).
// Collective on x's comm.
PetscErrorCode PooledOutputs(const TokenLayout &t, const std::vector<double> &W, PetscInt c, Vec x,
                             std::vector<double> &out);

// The fraction of sequences whose largest output is where their target is
// largest (pooled outputs and targets, M x c).
// Not collective.
double ClassAccuracy(const std::vector<double> &outputs, const std::vector<double> &targets, PetscInt c);

// R at x1 over the sequences of a batch (active[m] != 0; null: all M, and
// (1/M) becomes 1/|batch|); when dRdx is not null, also dR/dx(1) into it;
// when dRdw is not null (weighted tokens), the risk's own derivative in the
// weights at fixed x1, (M, N) on every rank.
// Collective on x1's comm.
// per_model (an ensemble's, sized to its models on entry): the risk of each
// model, its sequences m / (M / models), over its own batch, and dR/dx of
// each model's own risk; *R is then the first model's.
PetscErrorCode RiskEvaluate(const TokenLayout &t, const Targets &y, const std::vector<char> *active, Vec x1, Vec dRdx,
                            double *R, std::vector<double> *dRdw = nullptr, std::vector<double> *per_model = nullptr);

} // namespace mft
