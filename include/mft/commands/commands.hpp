// The subcommands of the mft program, one file each in src/commands/.
#pragma once

#include <petscsys.h>

#include <string>
#include <vector>

namespace mft {

// Each returns a PETSc error code; *status is the exit code of a run that
// ended without error (0, or kExitResubmit after a signal).
// Every command is collective on comm: every rank of it runs the command with
// the same arguments.

// mft forward: x(1) and the risk at the initial heads; --gradient adds g.
// Collective on comm.
PetscErrorCode CommandForward(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft train: training, checkpoints and restart, progress, run file, summary line.
// Collective on comm.
PetscErrorCode CommandTrain(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft ntk: the NTK at the initial heads (or --params.file), its spectrum.
// Collective on comm.
PetscErrorCode CommandNtk(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft limit: the mean-field reference (shared ensemble, adaptive depth).
// Collective on comm.
PetscErrorCode CommandLimit(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft study: the cases of a convergence study, or their aggregation.
// Collective on comm.
PetscErrorCode CommandStudy(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft bench: timed steps at the standard sizes, rates, memory, time split.
// Collective on comm.
PetscErrorCode CommandBench(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft info FILE: what an mft file is and holds; exit 2 when it is damaged.
// Collective on comm.
PetscErrorCode CommandInfo(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft worst: the input of largest error of a model against references.
// Collective on comm.
PetscErrorCode CommandWorst(MPI_Comm comm, const std::vector<std::string> &args, int *status);

// mft lse: the log-sum-exp independence test of the token distributions.
// Collective on comm.
PetscErrorCode CommandLse(MPI_Comm comm, const std::vector<std::string> &args, int *status);

} // namespace mft
