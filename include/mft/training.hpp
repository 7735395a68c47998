// The training loop (docs/model.md, 'Training'): one for `mft train` and for the
// trained cases of convergence studies.
//
// From `start` updates to train.steps: each step the risk and the gradient on
// the step's batch, a check that both are finite, progress on rank 0 every
// train.log_every steps, the update. A checkpoint every checkpoint.every
// steps; on SIGUSR1/SIGTERM a checkpoint at once and a stop. `record` (may be
// empty) is called with the number of updates done before each update and
// once after the last, at the heads of that moment: a study records its probe
// outputs there.
#pragma once

#include "mft/optimizer.hpp"
#include "mft/runfile.hpp"

#include <functional>

namespace mft {

struct TrainingStop {
  int signal = 0;      // SIGUSR1 or SIGTERM when stopped by one, else 0
  PetscInt done = 0;   // updates done
  PetscInt saved = -1; // step of the newest checkpoint written (or read)
  double seconds_start = 0; // when the loop started (MPI_Wtime)
};

PetscErrorCode TrainLoop(Problem *p, Optimizer *opt, History *history, PetscInt start, PetscInt saved,
                         const std::function<PetscErrorCode(PetscInt)> &record, TrainingStop *stop);

} // namespace mft
