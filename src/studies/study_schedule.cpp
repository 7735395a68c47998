// Running a study's cases: one after another on every rank, or on groups of
// ranks by the plan (study_plan.hpp), each group claiming its cases.
#include "mft/studies/study.hpp"
#include "mft/studies/study_plan.hpp"

#include "mft/settings/error.hpp"
#include "mft/layout/grid.hpp"
#include "mft/files/report.hpp"
#include "mft/settings/signals.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace mft {

namespace {

// Removes every claim in dir (rank 0): a new run's, or a killed run's left over.
void RemoveClaims(const std::string &dir) {
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".claim") std::filesystem::remove(entry.path(), ec);
}

// Claims a task (case i: "case-<i>") for the calling group: true when no group had.
bool Claim(const std::string &dir, const std::string &task) {
  const int fd = open((dir + "/" + task + ".claim").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// Case c on comm: a failure is named and counted (an internal error is
// returned); a case stopped by a signal after its checkpoint sets run->signal.
PetscErrorCode RunOne(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const StudyCase &c,
                      CasesRun *run) {
  PetscMPIInt ranks;
  int signal = 0;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &ranks));
  const double t0 = seconds();
  PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
  const PetscErrorCode err = StudyRunCase(comm, args, s, c, &signal);
  PetscCall(PetscPopErrorHandler());
  if (err) {
    ++run->failed;
    PetscCall(PetscPrintf(comm, "mft study: %s failed: %s\n", c.describe().c_str(), captured_error()));
    if (exit_code(err) == kExitInternal) PetscFunctionReturn(err);
  } else if (signal) {
    run->signal = signal;
    PetscCall(PetscPrintf(comm, "mft study: %s stopped by a signal after a checkpoint\n", c.describe().c_str()));
  } else {
    ++run->done;
    PetscCall(PetscPrintf(comm, "%s done in %.2f s on %d rank%s\n", c.describe().c_str(), seconds() - t0, ranks,
                          ranks > 1 ? "s" : ""));
  }
  PetscFunctionReturn(0);
}

// Which of consecutive groups of these sizes holds rank r.
int GroupOf(const std::vector<PetscInt> &groups, PetscMPIInt r) {
  int color = 0;
  for (PetscInt first = 0; first + groups[color] <= r; first += groups[color]) ++color;
  return color;
}

// One group's cases of its size: its first rank claims the largest left and
// the group runs it, until none is left or a signal came. A case is counted
// by the first rank of the group that ran it.
PetscErrorCode RunSize(MPI_Comm group, const std::vector<std::string> &args, const Settings &s,
                       const std::vector<StudyCase> &cases, const std::vector<size_t> &order, CasesRun *run) {
  PetscMPIInt grank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(group, &grank));
  for (size_t k = 0; !run->signal;) {
    PetscCall(SignalsPending(group, &run->signal));
    PetscInt next = -1;
    if (!run->signal && grank == 0)
      while (next < 0 && k < order.size())
        if (Claim(s.study.dir, "case-" + std::to_string(cases[order[k++]].index))) next = (PetscInt)order[k - 1];
    PetscCallMPI(MPI_Bcast(&next, 1, MPIU_INT, 0, group));
    if (next < 0) break;
    CasesRun one;
    PetscCall(RunOne(group, args, s, cases[(size_t)next], &one));
    if (grank == 0) run->done += one.done, run->failed += one.failed;
    run->signal = one.signal;
  }
  PetscFunctionReturn(0);
}

// The groups' run: the plan's groups on consecutive ranks; each runs the
// cases of its size, then splits (SplitGroup) and its pieces run theirs.
PetscErrorCode RunGroups(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                         const std::vector<StudyCase> &cases, const StudyPlan &plan,
                         const std::vector<std::vector<double>> &prices, CasesRun *run) {
  PetscMPIInt rank, grank;
  MPI_Comm group;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) RemoveClaims(s.study.dir);
  PetscCallMPI(MPI_Barrier(comm));
  const int color = GroupOf(plan.groups, rank);
  PetscCallMPI(MPI_Comm_split(comm, color, rank, &group));
  for (PetscInt size = plan.groups[color];;) {
    PetscCall(RunSize(group, args, s, cases, PlanOrder(plan, prices, SizeIndex(plan.sizes, size)), run));
    const std::vector<PetscInt> pieces = SplitGroup(size, plan.sizes);
    if (run->signal || pieces.empty()) break;
    MPI_Comm piece;
    PetscCallMPI(MPI_Comm_rank(group, &grank));
    const int mine = GroupOf(pieces, grank);
    PetscCallMPI(MPI_Comm_split(group, mine, grank, &piece));
    PetscCallMPI(MPI_Comm_free(&group));
    group = piece, size = pieces[mine];
  }
  PetscCallMPI(MPI_Comm_free(&group));
  PetscInt counts[2] = {run->done, run->failed};
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPIU_INT, MPI_SUM, comm));
  run->done = counts[0], run->failed = counts[1];
  PetscCall(SignalsPending(comm, &run->signal));
  if (rank == 0) RemoveClaims(s.study.dir);
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyRunTasks(MPI_Comm comm, const Settings &s, const std::string &dir, size_t n,
                             const std::function<std::string(size_t)> &name,
                             const std::function<PetscErrorCode(MPI_Comm, size_t)> &run, bool side_by_side) {
  PetscMPIInt rank, size, grank;
  MPI_Comm group;
  PetscInt failed = 0;
  int signal = 0;
  PetscFunctionBeginUser;
  if (n == 0) PetscFunctionReturn(0);
  SignalsInstall();
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  const bool apart = s.study.schedule == StudySchedule::groups && side_by_side;
  const PetscMPIInt groups = apart ? std::min<PetscMPIInt>(size, (PetscMPIInt)n) : 1;
  const PetscMPIInt g = size / groups; // every task on g ranks: its results do not depend on which group took it
  if (rank == 0) RemoveClaims(dir);
  PetscCallMPI(MPI_Barrier(comm));
  PetscCallMPI(MPI_Comm_split(comm, rank < groups * g ? rank / g : MPI_UNDEFINED, rank, &group));
  if (group != MPI_COMM_NULL) {
    PetscCallMPI(MPI_Comm_rank(group, &grank));
    for (size_t k = 0; !signal;) {
      PetscCall(SignalsPending(group, &signal));
      PetscInt next = -1;
      while (!signal && grank == 0 && next < 0 && k < n)
        if (Claim(dir, name(k++))) next = (PetscInt)k - 1;
      PetscCallMPI(MPI_Bcast(&next, 1, MPIU_INT, 0, group));
      if (next < 0) break;
      PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
      const PetscErrorCode err = run(group, (size_t)next);
      PetscCall(PetscPopErrorHandler());
      if (err) {
        failed += grank == 0;
        PetscCall(PetscPrintf(group, "mft study: %s failed: %s\n", name((size_t)next).c_str(), captured_error()));
        if (exit_code(err) == kExitInternal) PetscFunctionReturn(err);
      }
    }
    PetscCallMPI(MPI_Comm_free(&group));
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPIU_INT, MPI_SUM, comm));
  if (rank == 0) RemoveClaims(dir);
  PetscCall(PetscPrintf(comm, "mft study: %zu tasks on %d group%s of %d rank%s%s\n", n, groups, groups > 1 ? "s" : "",
                        g, g > 1 ? "s" : "", failed ? (", " + std::to_string(failed) + " failed").c_str() : ""));
  PetscFunctionReturn(0);
}

PetscErrorCode StudyRunCases(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                             const std::vector<StudyCase> &cases, CasesRun *run) {
  PetscMPIInt size;
  PetscFunctionBeginUser;
  *run = CasesRun();
  SignalsInstall(); // a signal between cases stops the study too
  PetscCallMPI(MPI_Comm_size(comm, &size));
  if (cases.empty()) PetscFunctionReturn(0);
  PetscInt node_ranks;
  std::vector<std::vector<double>> prices;
  PetscCall(NodeRanks(comm, s.parallel.node_ranks, &node_ranks));
  PetscCall(StudyPrices(comm, args, s, cases, size, node_ranks, &prices));
  const bool groups = s.study.schedule == StudySchedule::groups && size > 1;
  const StudyPlan plan = groups ? PlanStudy(prices, size, s.parallel.plan_margin) : PlanSerial(prices, size);
  PetscCall(PetscPrintf(comm, "mft study: %zu cases on %d ranks in groups of %s ranks; predicted %.4g s (efficiency %.2f)\n",
                        cases.size(), size, plan.groups_text().c_str(), plan.makespan, plan.efficiency()));
  if (groups) {
    PetscCall(RunGroups(comm, args, s, cases, plan, prices, run));
    PetscFunctionReturn(0);
  }
  for (const StudyCase &c : cases) {
    PetscCall(SignalsPending(comm, &run->signal));
    if (run->signal) break;
    PetscCall(RunOne(comm, args, s, c, run));
    if (run->signal) break;
  }
  PetscFunctionReturn(0);
}

} // namespace mft
