// The training loop (docs/model.md, 'Training'): one for `mft train` and for the
// trained cases of convergence studies.
//
// From `start` updates to train.steps: each step the risk and the gradient on
// the step's batch, a check that both are finite, progress on rank 0 every
// train.log_every steps, the update. A checkpoint every checkpoint.every
// steps; on SIGUSR1/SIGTERM a checkpoint at once and a stop. `record` (may be
// empty) is called with the number of updates done before each update and
// once after the last, at the heads of that moment: a study records its probe
// outputs there. `columns` (may be null) adds columns to the progress table:
// its row is called at every logged step, before the update (mft train: the
// held-out risk and the accuracies).
#pragma once

#include "mft/flow/optimizer.hpp"
#include "mft/files/runfile.hpp"

#include <functional>

namespace mft {

struct TrainingStop {
  int signal = 0;      // SIGUSR1 or SIGTERM when stopped by one, else 0
  PetscInt done = 0;   // updates done
  PetscInt saved = -1; // step of the newest checkpoint written (or read)
  double seconds_start = 0; // when the loop started (MPI_Wtime)
};

struct TrainingColumns {
  std::string header;                                          // printed after the table's own
  std::function<PetscErrorCode(PetscInt step, std::string *row)> row; // the columns at this step
};

// Where a run resumes: the newest valid checkpoint (checkpoint.dir, or
// --restart), checked against the run's settings and read into p, opt and
// history; *start and *saved are its step (left alone when there is none).
// Says so, after `who` (empty for mft train, the case for a study).
// Collective on the problem's comm.
PetscErrorCode TrainResume(Problem *p, Optimizer *opt, History *history, const std::string &who, PetscInt *start,
                           PetscInt *saved);

// Collective on the problem's comm.
PetscErrorCode TrainLoop(Problem *p, Optimizer *opt, History *history, PetscInt start, PetscInt saved,
                         const std::function<PetscErrorCode(PetscInt)> &record, TrainingStop *stop,
                         const TrainingColumns *columns = nullptr);

// An ensemble's (ensemble.hpp) resume and loop, as TrainResume and
// TrainLoop: every model's step at once, its checkpoints with the seeds axis
// (EnsembleFileWrite); a model that diverges is flagged and frozen, and the
// loop stops with an error only when every model has. Collective on e's comm.
PetscErrorCode EnsembleTrainResume(Ensemble *e, Optimizer *opt, History *history, const std::string &who,
                                   PetscInt *start, PetscInt *saved);
PetscErrorCode EnsembleTrainLoop(Ensemble *e, Optimizer *opt, History *history, PetscInt start, PetscInt saved,
                                 const std::function<PetscErrorCode(PetscInt)> &record, TrainingStop *stop);

} // namespace mft
