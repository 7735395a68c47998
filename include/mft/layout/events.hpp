// The program's PETSc log events and stages: the attention kernels and the
// exchanges as events, the forward and adjoint solves as stages, so that
// -log_view (and mft bench, which reads them) splits a step's time; and the
// wall clock the program's own timings read.
#pragma once

#include <petscsys.h>

namespace mft {

extern PetscLogEvent MFT_KERNELS, MFT_EXCHANGE, MFT_MLP; // MFT_MLP: the MLP sublayers' kernels
extern PetscLogStage MFT_FORWARD, MFT_ADJOINT;

// Registers them, once (later calls do nothing).
// Not collective.
PetscErrorCode EventsRegister();

// Wall-clock seconds (MPI_Wtime).
// Not collective.
double seconds();

} // namespace mft
