// Signal flags, and their collective query.
#include "mft/settings/signals.hpp"

#include <csignal>

namespace mft {

static volatile std::sig_atomic_t received = 0;

static void on_signal(int sig) { received = sig; }

void SignalsInstall() {
  static bool installed = false;
  if (installed) return; // a signal caught before (between a study's cases) stays pending
  installed = true;
  std::signal(SIGUSR1, on_signal);
  std::signal(SIGTERM, on_signal);
}

PetscErrorCode SignalsPending(MPI_Comm comm, int *signal) {
  int mine = (int)received;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(&mine, signal, 1, MPI_INT, MPI_MAX, comm));
  PetscFunctionReturn(0);
}

} // namespace mft
