// Training updates of the heads from g = L H dR/dtheta (docs/model.md, 'Training').
//
//   gd:          theta <- theta - lr g, the conditional Wasserstein gradient
//                flow explicit in training time;
//   adamw:       per entry, m <- b1 m + (1-b1) g, v <- b2 v + (1-b2) g^2,
//                theta <- theta - lr (mhat / (sqrt(vhat) + eps) + lambda theta),
//                mhat = m / (1 - b1^t), vhat = v / (1 - b2^t);
//   adamw-block: the same with one second moment per block (one matrix Q, K,
//                V or O of one head): v_b <- b2 v_b + (1-b2) |g_b|^2 / size(b).
// Each block b (Q, K, V, O) steps at lr L^-x H^-y k^-e_b, x and y =
// train.lr_depth_exponent and lr_head_exponent, e = train.block_lr_exponents
// (all 0: lr, bitwise); the factors multiply. The infinite head (model.k = inf, gd; docs/model.md,
// 'The infinite head') steps its K = W at lr (q_gain^2 + k_gain^2) / d at
// g = 1/2 and 0 above, and keeps Q = I: the limit of the finite heads' steps.
// Heads never change layer: the marginal of the parameter law over depth is
// preserved. The moments live in Vecs of theta's layout (whole heads per
// rank), so that blocks are never split and the state is checkpointed whole.
// MLP sublayers' neurons (neurons.hpp) have an optimizer of their own, `mlp`,
// stepped with the heads': the same kind and schedule, blocks u, b and w, at
// lr L^-x' m^-y' (train.mlp_lr_depth_exponent and mlp_lr_width_exponent),
// block b times m^-e'_b (train.mlp_block_lr_exponents).
#pragma once

#include "mft/layout/heads.hpp"
#include "mft/layout/neurons.hpp"
#include "mft/settings/settings.hpp"

#include <petscvec.h>

#include <array>
#include <vector>

namespace mft {

struct Optimizer {
  TrainSettings settings;
  OptimizerKind kind = OptimizerKind::gd;
  // The units of theta (heads, or neurons) and their blocks: offset in a
  // unit, entries, and the factor of the rate (lr k^-e_b times block_scale).
  struct Block {
    PetscInt offset = 0, size = 0;
    double factor = 1;
  };
  std::vector<Block> blocks;
  PetscInt unit = 0;    // entries a unit
  PetscInt heads = 0;   // units owned by this rank (of theta)
  PetscInt step = 0;    // updates done: t of the bias corrections is step + 1
  std::array<double, 4> block_scale{1, 1, 1, 1}; // per block, times the rate (the infinite head's)
  double rate_scale = 1;  // L^-x H^-y of the model (1 when both exponents are 0)
  Vec m = nullptr;      // first moment, theta's layout (adamw, adamw-block)
  Vec v = nullptr;      // second moment: theta's layout (adamw), or one entry per block (adamw-block)
  std::vector<char> frozen; // per owned head: not updated (an ensemble's diverged models); empty: none
  Optimizer *mlp = nullptr; // the neurons' (MLP sublayers), owned; null: none
};

// The optimizer of s.train for the heads h. Create and Destroy are collective on
// theta's comm (its moment vectors).
// With neurons n (MLP sublayers), also their optimizer o->mlp.
PetscErrorCode OptimizerCreate(const Settings &s, const Heads &h, Optimizer *o, const Neurons *n = nullptr);
PetscErrorCode OptimizerDestroy(Optimizer *o);

// The learning rate of update number `step` (0-based): linear warm-up over
// train.warmup steps, then constant or cosine down to train.lr_min at train.steps.
// Not collective.
double learning_rate(const TrainSettings &s, PetscInt step);

// The rate of update number `step` before the block factors: learning_rate
// times L^-x H^-y. Not collective.
double OptimizerRate(const Optimizer &o, PetscInt step);

// One update of theta from the gradient g (at learning rate OptimizerRate(step)).
// Not collective: each rank updates the heads it owns (call it on every rank).
PetscErrorCode OptimizerStep(Optimizer *o, Vec theta, Vec g);

// One update of the heads and, with MLP sublayers, of the neurons (o->mlp,
// from their gradient g_m), each by OptimizerStep.
// Not collective, as OptimizerStep.
PetscErrorCode OptimizerStepAll(Optimizer *o, Heads *h, Vec g, Neurons *n, Vec g_m);

} // namespace mft
