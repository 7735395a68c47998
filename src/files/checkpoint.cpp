// Checkpoint files: names, pruning, the newest valid one, settings that must match.
#include "mft/files/checkpoint.hpp"

#include "mft/settings/error.hpp"
#include "mft/layout/h5.hpp"
#include "mft/settings/options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <sys/stat.h>

namespace mft {

std::string CheckpointPath(const CheckpointSettings &s, PetscInt step) {
  char name[64];
  std::snprintf(name, sizeof name, "/checkpoint-%08lld.h5", (long long)step);
  return s.dir + name;
}

namespace {

// Steps of the checkpoint files in dir, newest first (rank 0 lists, all get it).
PetscErrorCode ListCheckpoints(MPI_Comm comm, const std::string &dir, std::vector<long long> *steps) {
  PetscMPIInt rank;
  int n = 0;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  steps->clear();
  if (rank == 0) {
    if (DIR *d = opendir(dir.c_str())) {
      while (dirent *e = readdir(d)) {
        long long step;
        char tail[8] = "";
        if (std::sscanf(e->d_name, "checkpoint-%lld.h%7s", &step, tail) == 2 && std::string(tail) == "5")
          steps->push_back(step);
      }
      closedir(d);
    }
    std::sort(steps->rbegin(), steps->rend());
    n = (int)steps->size();
  }
  PetscCallMPI(MPI_Bcast(&n, 1, MPI_INT, 0, comm));
  steps->resize((size_t)n);
  PetscCallMPI(MPI_Bcast(steps->data(), n, MPI_LONG_LONG, 0, comm));
  PetscFunctionReturn(0);
}

// Verifies a checkpoint; on failure *problem says why (nothing is printed).
PetscErrorCode Check(MPI_Comm comm, const std::string &path, std::string *problem) {
  std::uint64_t stored = 0, computed = 0;
  PetscFunctionBeginUser;
  PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
  PetscErrorCode err = h5::Verify(comm, path, &stored, &computed);
  PetscCall(PetscPopErrorHandler());
  problem->clear();
  if (err) *problem = captured_error();
  else if (stored != computed)
    *problem = path + " is damaged: its checksum is " + h5::ChecksumText(stored) + " but its contents sum to " +
               h5::ChecksumText(computed);
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode CheckpointSave(MPI_Comm comm, const CheckpointSettings &s, PetscInt step,
                              const std::function<PetscErrorCode(const std::string &)> &write) {
  std::vector<long long> steps;
  PetscMPIInt rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    const bool made = mkdir(s.dir.c_str(), 0755) == 0 || errno == EEXIST;
    PetscCheck(made, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "cannot create checkpoint.dir '%s'", s.dir.c_str());
  }
  PetscCallMPI(MPI_Barrier(comm));
  PetscCall(write(CheckpointPath(s, step)));
  PetscCall(ListCheckpoints(comm, s.dir, &steps));
  if (rank == 0)
    for (size_t i = (size_t)s.keep; i < steps.size(); ++i) std::remove(CheckpointPath(s, (PetscInt)steps[i]).c_str());
  PetscFunctionReturn(0);
}

PetscErrorCode CheckpointWrite(const Problem &p, const History &h, const Optimizer &opt, PetscInt step) {
  PetscFunctionBeginUser;
  PetscCall(CheckpointSave(p.grid.comm, p.settings.checkpoint, step, [&](const std::string &path) {
    return RunFileWrite(p, h, &opt, step, Content::checkpoint, path);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode CheckpointResolve(MPI_Comm comm, const Settings &s, std::string *path) {
  std::string problem;
  PetscFunctionBeginUser;
  path->clear();
  if (s.restart.empty()) PetscFunctionReturn(0);
  if (s.restart != "auto") {
    PetscCall(Check(comm, s.restart, &problem));
    PetscCheck(problem.empty(), comm, PETSC_ERR_FILE_UNEXPECTED, "cannot restart from %s: %s", s.restart.c_str(),
               problem.c_str());
    *path = s.restart;
    PetscFunctionReturn(0);
  }
  std::vector<long long> steps;
  PetscCall(ListCheckpoints(comm, s.checkpoint.dir, &steps));
  for (long long step : steps) {
    const std::string candidate = CheckpointPath(s.checkpoint, (PetscInt)step);
    PetscCall(Check(comm, candidate, &problem));
    if (problem.empty()) {
      *path = candidate;
      break;
    }
    PetscCall(PetscPrintf(comm, "mft: warning: skipping %s (%s)\n", candidate.c_str(), problem.c_str()));
  }
  if (path->empty())
    PetscCall(PetscPrintf(comm, "mft: no valid checkpoint in %s: starting fresh\n", s.checkpoint.dir.c_str()));
  PetscFunctionReturn(0);
}

PetscErrorCode CheckpointCompatible(MPI_Comm comm, const Settings &s, const std::string &path) {
  std::vector<std::string> keys = {"content"}, stored;
  PetscFunctionBeginUser;
  for (auto &kv : s.record)
    if (RunDefining(s, kv.first)) keys.push_back(kv.first);
  PetscCall(RunFileAttributes(comm, path, keys, &stored));
  PetscCheck(!stored[0].empty(), comm, PETSC_ERR_FILE_UNEXPECTED, "%s is not an mft checkpoint", path.c_str());
  for (size_t i = 1; i < keys.size(); ++i) {
    const std::string &now = std::find_if(s.record.begin(), s.record.end(), [&](auto &kv) { return kv.first == keys[i]; })->second;
    // A setting the file does not record is one that did not exist when it
    // was written: the run had its default (model.norm before normalized tokens).
    const Option *row = FindOption(keys[i]);
    if (stored[i].empty() && row && SameSetting(row->def, now)) continue;
    PetscCheck(SameSetting(stored[i], now), comm, PETSC_ERR_USER_INPUT,
               "cannot restart from %s: %s = %s there but %s now (it would change the run)", path.c_str(),
               keys[i].c_str(), stored[i].empty() ? "(absent)" : stored[i].c_str(), now.c_str());
  }
  PetscFunctionReturn(0);
}

} // namespace mft
