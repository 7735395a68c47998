// Training updates of the heads from g = L H dR/dtheta (MODEL.md, 'Training').
//   gd: the conditional Wasserstein gradient flow, explicit in training time,
//       theta <- theta - lr g. Each head moves within its own layer: the
//       marginal of the parameter law over depth never changes.
#pragma once

#include "mft/settings.hpp"

#include <petscvec.h>

namespace mft {

struct Optimizer {
  TrainSettings settings;
  PetscInt step = 0;  // updates done
};

PetscErrorCode OptimizerCreate(const TrainSettings &s, Vec theta, Optimizer *o);
PetscErrorCode OptimizerDestroy(Optimizer *o);

// One update of theta from the gradient g.
PetscErrorCode OptimizerStep(Optimizer *o, Vec theta, Vec g);

} // namespace mft
