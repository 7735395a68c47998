// One-line error reports and exit codes.
#include "mft/settings/error.hpp"

#include <cstdio>

namespace mft {

PetscErrorCode ErrorHandler(MPI_Comm comm, int line, const char *fun, const char *file, PetscErrorCode n,
                            PetscErrorType p, const char *mess, void *ctx) {
  if (p != PETSC_ERROR_INITIAL) return n;
  int rank = 0;
  if (comm != MPI_COMM_NULL) MPI_Comm_rank(comm, &rank);
  if (rank != 0) return n;
  const char *text = mess;
  if (!text || !*text) PetscErrorMessage(n, &text, nullptr);
  if (exit_code(n) == kExitInternal)
    std::fprintf(stderr, "mft: error: %s (PETSc error %d in %s at %s:%d)\n", text ? text : "", (int)n, fun, file, line);
  else
    std::fprintf(stderr, "mft: error: %s\n", text ? text : "");
  std::fflush(stderr);
  return n;
}

static char captured[512];

PetscErrorCode ErrorCapture(MPI_Comm comm, int line, const char *fun, const char *file, PetscErrorCode n,
                            PetscErrorType p, const char *mess, void *ctx) {
  if (p == PETSC_ERROR_INITIAL) std::snprintf(captured, sizeof captured, "%s", mess ? mess : "");
  return n;
}

const char *captured_error() { return captured; }

int exit_code(PetscErrorCode err) {
  switch (err) {
  case 0: return kExitOk;
  case PETSC_ERR_USER_INPUT:
  case PETSC_ERR_FILE_OPEN:
  case PETSC_ERR_FILE_READ:
  case PETSC_ERR_FILE_UNEXPECTED:
  case PETSC_ERR_FILE_WRITE: return kExitInput;
  case PETSC_ERR_NOT_CONVERGED: return kExitDiverged;
  default: return kExitInternal;
  }
}

} // namespace mft
