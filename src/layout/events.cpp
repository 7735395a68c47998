// The program's PETSc log events and stages (-log_view; mft bench reads them).
#include "mft/layout/events.hpp"

namespace mft {

PetscLogEvent MFT_KERNELS = 0, MFT_EXCHANGE = 0, MFT_MLP = 0;
PetscLogStage MFT_FORWARD = 0, MFT_ADJOINT = 0;

PetscErrorCode EventsRegister() {
  static PetscBool registered = PETSC_FALSE;
  PetscClassId id;
  PetscFunctionBeginUser;
  if (registered) PetscFunctionReturn(0);
  PetscCall(PetscClassIdRegister("MFT", &id));
  PetscCall(PetscLogEventRegister("MftKernels", id, &MFT_KERNELS));
  PetscCall(PetscLogEventRegister("MftExchange", id, &MFT_EXCHANGE));
  PetscCall(PetscLogEventRegister("MftMlp", id, &MFT_MLP));
  PetscCall(PetscLogStageRegister("MftForward", &MFT_FORWARD));
  PetscCall(PetscLogStageRegister("MftAdjoint", &MFT_ADJOINT));
  registered = PETSC_TRUE;
  PetscFunctionReturn(0);
}

double seconds() { return MPI_Wtime(); }

} // namespace mft
