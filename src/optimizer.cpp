// gd: theta <- theta - lr g.
#include "mft/optimizer.hpp"

namespace mft {

PetscErrorCode OptimizerCreate(const TrainSettings &s, Vec theta, Optimizer *o) {
  PetscFunctionBeginUser;
  o->settings = s;
  o->step = 0;
  PetscFunctionReturn(0);
}

PetscErrorCode OptimizerDestroy(Optimizer *o) {
  PetscFunctionBeginUser;
  PetscFunctionReturn(0);
}

PetscErrorCode OptimizerStep(Optimizer *o, Vec theta, Vec g) {
  PetscFunctionBeginUser;
  PetscCall(VecAXPY(theta, -o->settings.lr, g));
  ++o->step;
  PetscFunctionReturn(0);
}

} // namespace mft
