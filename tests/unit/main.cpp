// GoogleTest under MPI: every rank runs every test; rank 0 prints; a test
// fails when it fails on any rank.
#include <gtest/gtest.h>
#include <petscsys.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "mft/settings/error.hpp"
#include "mft/kernels/linalg.hpp"

int main(int argc, char **argv) {
  mft::BlasSetup(argv); // the tests check the numerics under the kernels mft runs with
  ::testing::InitGoogleTest(&argc, argv);
  int provided; // threads run kernels only, as in mft (src/main.cpp)
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  PetscCall(PetscInitialize(&argc, &argv, nullptr, nullptr));
  PetscCall(PetscPushErrorHandler(mft::ErrorHandler, nullptr));
  int rank;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  // Every file a test writes goes into one new temporary folder, removed at
  // the end: never into the source tree, whichever folder the tests run from.
  char dir[4096] = "";
  if (rank == 0) {
    const char *tmp = std::getenv("TMPDIR");
    std::snprintf(dir, sizeof dir, "%s/mft-tests-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) dir[0] = 0;
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, PETSC_COMM_WORLD);
  if (!dir[0] || chdir(dir) != 0) {
    if (rank == 0) std::fprintf(stderr, "mft_tests: cannot make a temporary folder\n");
    PetscFinalize();
    MPI_Finalize();
    return 1;
  }
  auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  int failed = RUN_ALL_TESTS(), any;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, PETSC_COMM_WORLD);
  MPI_Barrier(PETSC_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);
  PetscCall(PetscFinalize());
  MPI_Finalize();
  return any;
}
