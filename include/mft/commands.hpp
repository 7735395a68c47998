// The subcommands of the mft program, one file each in src/commands/.
#pragma once

#include <petscsys.h>

#include <string>
#include <vector>

namespace mft {

// mft forward: x(1) and the risk at the initial heads; --gradient adds g.
PetscErrorCode CommandForward(MPI_Comm comm, const std::vector<std::string> &args);

// mft train: gradient-flow training, progress, run file, summary line.
PetscErrorCode CommandTrain(MPI_Comm comm, const std::vector<std::string> &args);

} // namespace mft
