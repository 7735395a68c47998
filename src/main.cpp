// mft: the mean-field transformer solver. `mft COMMAND [options]`, one
// command of the table below (each in src/commands/); `mft COMMAND --help`
// lists its options. Arguments with one dash go to PETSc.
#include "mft/commands/commands.hpp"
#include "mft/settings/error.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/settings/settings.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char help[] = "mft: simulates and trains attention-only transformers in the mean-field limit.\n";

using Command = PetscErrorCode (*)(MPI_Comm, const std::vector<std::string> &, int *);

// The commands: name, what it does, the function that runs it.
const struct {
  const char *name, *what;
  Command run;
} commands[] = {
    {"forward", "forward pass x(1), risk (and --gradient g) at the initial heads", mft::CommandForward},
    {"train", "train the heads (gd, adamw, adamw-block), checkpoints, restart", mft::CommandTrain},
    {"ntk", "the NTK Gram matrix and its spectrum (full or value part)", mft::CommandNtk},
    {"lse", "the log-sum-exp independence test of the token distributions", mft::CommandLse},
    {"limit", "the mean-field reference: a shared head ensemble, adaptive depth", mft::CommandLimit},
    {"study", "convergence studies: run cases (all or one), or --aggregate a folder", mft::CommandStudy},
    {"worst", "the input of largest error against references, in a ball", mft::CommandWorst},
    {"bench", "time a training step and the forward pass at the standard sizes", mft::CommandBench},
    {"info", "what an mft HDF5 file is and holds (mft info FILE)", mft::CommandInfo},
};

std::string names() {
  std::string list;
  for (const auto &c : commands) list += (list.empty() ? "" : ", ") + std::string(c.name);
  return list;
}

void usage(FILE *out) {
  std::fprintf(out, "usage: mft COMMAND [--config FILE] [--section.key VALUE ...] [PETSc options]\ncommands:\n");
  for (const auto &c : commands) std::fprintf(out, "  %-9s %s\n", c.name, c.what);
  std::fprintf(out, "`mft COMMAND --help` lists every option with its default.\n");
}

// Whether a launcher (mpiexec, srun) started this process.
bool launched() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
}

// A malformed command line, read before MPI and PETSc start (a third of an
// input error's time), and only in a single process: under a launcher every
// rank would print it, and the launcher would add lines of its own.
bool refused_early(const std::string &command, const std::vector<std::string> &args) {
  if (launched()) return false;
  if (command == "info") return false; // reads its own arguments
  bool known = false;
  for (const auto &c : commands) known = known || command == c.name;
  const std::string problem = known ? mft::SettingsProblem(command, args) : "";
  if (problem.empty()) return false;
  std::fprintf(stderr, "mft: error: %s\n", problem.c_str());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    if (argc < 2) std::fprintf(stderr, "mft: error: no command given (%s)\n", names().c_str());
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? mft::kExitInput : mft::kExitOk;
  }
  const std::string command = argv[1];
  std::vector<std::string> petsc_args;
  const std::vector<std::string> args = mft::split_arguments(argc - 1, argv + 1, petsc_args);
  if (refused_early(command, args)) return mft::kExitInput;
  mft::BlasSetup(argv);
  std::vector<char *> pargv;
  for (auto &a : petsc_args) pargv.push_back(const_cast<char *>(a.c_str()));
  pargv.push_back(nullptr);
  int pargc = (int)petsc_args.size();
  char **pargvp = pargv.data();

  // Threads (parallel.threads) run kernels only; MPI is called from the main
  // thread alone: MPI_THREAD_FUNNELED, asked for before PETSc starts.
  // MPI-IO through ROMIO, not OMPIO: OMPIO's shared-file-pointer component
  // opens a named semaphore per file name (/dev/shm/sem.OMPIO_<name>) that a
  // rank killed inside the open leaves locked, and every later open of that
  // name (the same checkpoint step) then waits forever. A user's own choice
  // (OMPI_MCA_io) stands.
  setenv("OMPI_MCA_io", "romio321", 0);
  // A single process started without a launcher talks to no one: the
  // shared-memory transport (ob1) spares UCX's device probes, 0.2 s of each
  // start (0.54 s -> 0.32 s for an input error). A user's choice stands.
  if (!launched()) setenv("OMPI_MCA_pml", "ob1", 0);
  int provided;
  MPI_Init_thread(&pargc, &pargvp, MPI_THREAD_FUNNELED, &provided);
  PetscCall(PetscInitialize(&pargc, &pargvp, nullptr, help));
  PetscCall(PetscPushErrorHandler(mft::ErrorHandler, nullptr));
  PetscErrorCode err;
  int status = mft::kExitOk;
  Command run = nullptr;
  for (const auto &c : commands)
    if (command == c.name) run = c.run;
  if (run) {
    err = run(PETSC_COMM_WORLD, args, &status);
  } else {
    int rank;
    MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
    if (rank == 0) std::fprintf(stderr, "mft: error: unknown command '%s' (%s)\n", command.c_str(), names().c_str());
    err = PETSC_ERR_USER_INPUT;
  }
  const int code = err ? mft::exit_code(err) : status;
  // An internal error may have left other ranks inside a collective call.
  if (code == mft::kExitInternal) MPI_Abort(PETSC_COMM_WORLD, code);
  PetscFinalize();
  MPI_Finalize();
  return code;
}
