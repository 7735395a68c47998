// Requests to stop: SIGUSR1 (Slurm's --signal) and SIGTERM (preemption, scancel)
// set a flag; the training loop asks every rank at the end of each step, writes
// a checkpoint and exits with kExitResubmit.
#pragma once

#include <petscsys.h>

namespace mft {

// Installs the handlers (once: a signal already caught stays pending).
// Not collective.
void SignalsInstall();

// Collective on comm: the signal any rank of comm has received since the
// install, or 0.
PetscErrorCode SignalsPending(MPI_Comm comm, int *signal);

} // namespace mft
