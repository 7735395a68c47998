// mft study: run the cases of a convergence study (all, or --study.only i as
// a Slurm array task), or aggregate a study folder (--aggregate DIR).
#include "mft/commands.hpp"
#include "mft/error.hpp"
#include "mft/report.hpp"
#include "mft/study.hpp"

#include <cerrno>
#include <sys/stat.h>

namespace mft {

// The study's first line: its cases, where, and what every model learns.
static PetscErrorCode StudyHeader(MPI_Comm comm, const Settings &s, size_t cases, const std::string &dir) {
  PetscFunctionBeginUser;
  if (s.study.state == StudyState::trained) {
    std::string learns = "the data file " + s.data.file;
    if (s.data.file.empty()) {
      const auto teacher = StudyTeacher(s);
      learns = "the targets of one teacher of " + std::to_string(teacher.first) + " x " +
               std::to_string(teacher.second) + " heads (data.teacher_seed " + std::to_string(s.data.teacher_seed) + ")";
    }
    const std::string against = s.study.references == 0 ? "with no references (a learning-rate study)"
                                : "against " + std::to_string(s.study.references) + " references of " +
                                      std::to_string(s.study.reference_L) + " x " + std::to_string(s.study.reference_H);
    PetscCall(PetscPrintf(comm, "mft study: %zu cases in %s; trained %" PetscInt_FMT " steps %s; every model learns %s\n",
                          cases, dir.c_str(), s.study.steps, against.c_str(), learns.c_str()));
  } else {
    PetscCall(PetscPrintf(comm,
                          "mft study: %zu cases in %s; at initialisation against %" PetscInt_FMT
                          " mean-field references of %" PetscInt_FMT " shared heads\n",
                          cases, dir.c_str(), s.study.references, s.limit.heads));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode CommandStudy(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  PetscMPIInt rank;
  PetscInt missing = 0, failed = 0;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(SettingsParse(comm, "study", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  const auto cases = StudyCases(s);
  if (s.list_cases) {
    for (auto &c : cases) PetscCall(PetscPrintf(comm, "%s\n", c.describe().c_str()));
    PetscCall(PetscPrintf(comm, "%zu cases in %s\n", cases.size(), s.study.dir.c_str()));
    PetscFunctionReturn(0);
  }
  const std::string dir = s.aggregate.empty() ? s.study.dir : s.aggregate;
  const double t0 = seconds();
  PetscCall(StudyHeader(comm, s, cases.size(), dir));
  if (s.aggregate.empty()) {
    PetscCall(StudyProbeFileCheck(comm, args, s));
    if (rank == 0)
      PetscCheck(mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE,
                 "cannot create study.dir '%s'", dir.c_str());
    PetscCallMPI(MPI_Barrier(comm));
    PetscCheck(s.study.only < (PetscInt)cases.size(), comm, PETSC_ERR_USER_INPUT,
               "study.only = %" PetscInt_FMT " but the study has %zu cases (0 .. %zu)", s.study.only, cases.size(),
               cases.size() - 1);
    for (auto &c : cases) {
      if (s.study.only >= 0 && c.index != s.study.only) continue;
      const double tc = seconds();
      // A failed case is named and the others still run.
      PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
      int signal = 0;
      PetscErrorCode err = StudyRunCase(comm, args, s, c, &signal);
      PetscCall(PetscPopErrorHandler());
      if (!err && signal) { // checkpointed: the same command resumes the case
        PetscCall(PetscPrintf(comm, "mft study: %s stopped by a signal after a checkpoint; exit %d (rerun to resume)\n",
                              c.describe().c_str(), kExitResubmit));
        *status = kExitResubmit;
        PetscFunctionReturn(0);
      }
      if (err) {
        ++failed;
        PetscCall(PetscPrintf(comm, "mft study: %s failed: %s\n", c.describe().c_str(), captured_error()));
        if (exit_code(err) == kExitInternal) PetscFunctionReturn(err);
        continue;
      }
      PetscCall(PetscPrintf(comm, "%s done in %.2f s\n", c.describe().c_str(), seconds() - tc));
    }
    if (s.study.only >= 0) {
      *status = failed ? kExitInput : kExitOk;
      Summary sum;
      sum.add("command", std::string("study")).add("case", (long long)s.study.only);
      sum.add("status", std::string(failed ? "failed" : "done")).add("seconds", seconds() - t0);
      PetscCall(sum.print(comm));
      PetscFunctionReturn(0);
    }
  }
  double searched = 0;
  if (s.study.worst) PetscCall(StudyWorst(comm, args, s, dir, &searched));
  PetscCall(StudyAggregate(comm, s, dir, &missing));
  PetscCall(PetscPrintf(comm, "mft study: aggregated %s: %zu cases, %" PetscInt_FMT " missing or failed; wrote %s/study.csv, fits.csv, study.h5\n",
                        dir.c_str(), cases.size(), missing, dir.c_str()));
  Summary sum;
  sum.add("command", std::string("study")).add("dir", dir).add("cases", (long long)cases.size());
  sum.add("missing", (long long)missing).add("seconds", seconds() - t0);
  if (s.study.worst) sum.add("worst_seconds", searched);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
