// GoogleTest under MPI: every rank runs every test; rank 0 prints; a test
// fails when it fails on any rank.
#include <gtest/gtest.h>
#include <petscsys.h>

#include "mft/error.hpp"
#include "mft/linalg.hpp"

int main(int argc, char **argv) {
  mft::BlasSetup(argv); // the tests check the numerics under the kernels mft runs with
  ::testing::InitGoogleTest(&argc, argv);
  PetscCall(PetscInitialize(&argc, &argv, nullptr, nullptr));
  PetscCall(PetscPushErrorHandler(mft::ErrorHandler, nullptr));
  int rank;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  int failed = RUN_ALL_TESTS(), any;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, PETSC_COMM_WORLD);
  PetscCall(PetscFinalize());
  return any;
}
