// Errors: one clear line, and an exit code that says what kind of error it was.
//
// PETSc's default handler prints a stack of every frame; a researcher wants
// the cause. This handler prints the first message of an error once, on rank
// 0 of the communicator it was raised on, as `mft: error: <message>`.
#pragma once

#include <petscsys.h>

namespace mft {

// Exit codes of the mft program.
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,  // a bug or a system failure (reported with its PETSc origin)
  kExitInput = 2,     // bad option, bad size, missing or damaged file
  kExitDiverged = 3,  // NaN or Inf in the risk or the gradient during training
  kExitResubmit = 75, // stopped by SIGUSR1/SIGTERM after writing a checkpoint: resubmit with --restart auto
};

// Not collective (PETSc calls it on the rank that raised the error).
PetscErrorCode ErrorHandler(MPI_Comm comm, int line, const char *fun, const char *file, PetscErrorCode n,
                            PetscErrorType p, const char *mess, void *ctx);

// The exit code for an error code returned up to main.
// Not collective.
int exit_code(PetscErrorCode err);

// While pushed (PetscPushErrorHandler(ErrorCapture, nullptr)), errors are not
// printed: the first message is kept for the caller, who decides what to say.
// Not collective.
PetscErrorCode ErrorCapture(MPI_Comm comm, int line, const char *fun, const char *file, PetscErrorCode n,
                            PetscErrorType p, const char *mess, void *ctx);
const char *captured_error();

} // namespace mft
