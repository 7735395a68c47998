// mft: the mean-field transformer solver.
//
//   mft forward [options]   forward pass (and gradient) at the initial heads
//   mft train   [options]   training, checkpoints, restart
//   mft ntk     [options]   the NTK and its spectrum
//   mft lse     [options]   the log-sum-exp independence test
//
// Options: `mft CMD --help`. Arguments with one dash go to PETSc.
#include "mft/commands.hpp"
#include "mft/error.hpp"
#include "mft/linalg.hpp"
#include "mft/settings.hpp"

#include <cstdio>
#include <cstring>

static const char help[] = "mft: simulates and trains attention-only transformers in the mean-field limit.\n";

static void usage(FILE *out) {
  std::fprintf(out, "usage: mft COMMAND [--config FILE] [--section.key VALUE ...] [PETSc options]\n"
                    "commands:\n"
                    "  forward   forward pass x(1), risk (and --gradient g) at the initial heads\n"
                    "  train     train the heads (gd, adamw, adamw-block), checkpoints, restart\n"
                    "  ntk       the NTK Gram matrix and its spectrum (full or value part)\n"
                    "  lse       the log-sum-exp independence test of the token distributions\n"
                    "  limit     the mean-field reference: a shared head ensemble, adaptive depth\n"
                    "  study     convergence studies: run cases (all or one), or --aggregate a folder\n"
                    "  bench     time a training step and the forward pass at the standard sizes\n"
                    "  info      what an mft HDF5 file is and holds (mft info FILE)\n"
                    "`mft COMMAND --help` lists every option with its default.\n");
}

int main(int argc, char **argv) {
  mft::BlasSetup(argv);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    if (argc < 2) std::fprintf(stderr, "mft: error: no command given (forward, train, ntk, lse, limit, study, bench, info)\n");
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? mft::kExitInput : mft::kExitOk;
  }
  const std::string command = argv[1];
  std::vector<std::string> petsc_args;
  const std::vector<std::string> args = mft::split_arguments(argc - 1, argv + 1, petsc_args);
  std::vector<char *> pargv;
  for (auto &a : petsc_args) pargv.push_back(const_cast<char *>(a.c_str()));
  pargv.push_back(nullptr);
  int pargc = (int)petsc_args.size();
  char **pargvp = pargv.data();

  PetscCall(PetscInitialize(&pargc, &pargvp, nullptr, help));
  PetscCall(PetscPushErrorHandler(mft::ErrorHandler, nullptr));
  PetscErrorCode err;
  int status = mft::kExitOk;
  if (command == "forward") err = mft::CommandForward(PETSC_COMM_WORLD, args, &status);
  else if (command == "train") err = mft::CommandTrain(PETSC_COMM_WORLD, args, &status);
  else if (command == "ntk") err = mft::CommandNtk(PETSC_COMM_WORLD, args, &status);
  else if (command == "lse") err = mft::CommandLse(PETSC_COMM_WORLD, args, &status);
  else if (command == "limit") err = mft::CommandLimit(PETSC_COMM_WORLD, args, &status);
  else if (command == "study") err = mft::CommandStudy(PETSC_COMM_WORLD, args, &status);
  else if (command == "bench") err = mft::CommandBench(PETSC_COMM_WORLD, args, &status);
  else if (command == "info") err = mft::CommandInfo(PETSC_COMM_WORLD, args, &status);
  else {
    int rank;
    MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
    if (rank == 0) std::fprintf(stderr, "mft: error: unknown command '%s' (forward, train, ntk, lse, limit, study, bench, info)\n", command.c_str());
    err = PETSC_ERR_USER_INPUT;
  }
  const int code = err ? mft::exit_code(err) : status;
  // An internal error may have left other ranks inside a collective call.
  if (code == mft::kExitInternal) MPI_Abort(PETSC_COMM_WORLD, code);
  PetscFinalize();
  return code;
}
