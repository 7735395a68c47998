// Checkpoints and restart.
//
// A checkpoint is a run file holding the whole training state (data, targets,
// params, optimizer moments, step, history, every setting), written as
// checkpoint.dir/checkpoint-<step>.h5 through a temporary name, verified
// against its checksum, then renamed; the newest checkpoint.keep are kept.
// A restart continues bitwise the run it interrupted on the same number of
// ranks, and to round-off on another: the state is read, not regenerated.
#pragma once

#include "mft/files/runfile.hpp"

#include <functional>
#include <string>

namespace mft {

// The path of the checkpoint of `step`. Not collective.
std::string CheckpointPath(const CheckpointSettings &s, PetscInt step);

// Writes the checkpoint of `step` updates and removes the oldest beyond checkpoint.keep.
// Collective on the problem's comm.
PetscErrorCode CheckpointWrite(const Problem &p, const History &h, const Optimizer &opt, PetscInt step);
// The same for any writer (an ensemble's): write(path) makes the file.
// Collective on comm.
PetscErrorCode CheckpointSave(MPI_Comm comm, const CheckpointSettings &s, PetscInt step,
                              const std::function<PetscErrorCode(const std::string &)> &write);

// The checkpoint to restart from: --restart FILE (verified, or an error), or
// --restart auto: the newest checkpoint in checkpoint.dir that verifies,
// skipping damaged ones with a warning; empty for a fresh start.
// Collective on comm.
PetscErrorCode CheckpointResolve(MPI_Comm comm, const Settings &s, std::string *path);

// Refuses a checkpoint whose run-defining settings (model, data, init, loss,
// optimizer and schedule) differ from s; steps, output, logging, checkpoint
// cadence and the process grid may change.
// Collective on comm.
PetscErrorCode CheckpointCompatible(MPI_Comm comm, const Settings &s, const std::string &path);

} // namespace mft
