// The convergence study as a kind of study (study_kind.hpp): its first
// line, --list with the plan, the cases to run, and the run: cases, the
// law's prediction, the worst input, the aggregation and the replicates.
#include "mft/studies/study_kind.hpp"

#include "mft/files/report.hpp"
#include "mft/settings/error.hpp"
#include "mft/settings/options.hpp"
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/studies/study_plan.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

namespace {

// ", one set for every variant" where the variants share their references.
std::string shared_by(const Settings &s) {
  const PetscInt nv = (PetscInt)StudyVariants(s).size();
  for (PetscInt v = 1; v < nv; ++v)
    if (StudyReferenceVariant(s, v) != 0) return "";
  return nv > 1 ? " (one set for every variant)" : "";
}

// The study's first line: its cases, where, and what every model learns.
PetscErrorCode StudyHeader(MPI_Comm comm, const Settings &s, size_t cases, const std::string &dir) {
  PetscFunctionBeginUser;
  if (s.study.state == StudyState::trained) {
    std::string learns = "the data file " + s.data.file;
    if (s.data.file.empty()) {
      const auto teacher = StudyTeacher(s);
      learns = "the targets of one teacher of " + std::to_string(teacher.first) + " x " +
               std::to_string(teacher.second) + " heads (data.teacher_seed " + std::to_string(s.data.teacher_seed) + ")";
      if (s.data.teacher_depth_exponent > 0 || s.data.teacher_head_exponent > 0)
        learns += " at its own exponents (data.teacher_depth_exponent " + format_real(s.data.teacher_depth_exponent) +
                  ", data.teacher_head_exponent " + format_real(s.data.teacher_head_exponent) + "; 0: the student's)";
    }
    const std::string against = s.study.references == 0 ? "with no references (a learning-rate study)"
                                : "against " + std::to_string(s.study.references) + " references of " +
                                      std::to_string(s.study.reference_L) + " x " + std::to_string(s.study.reference_H) +
                                      shared_by(s);
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

// --list: every case with its predicted cost; with study.plan_cores P the
// plan on P cores (under study.schedule = serial: every case on all of them) (each case's ranks and times, the groups, the makespan and
// efficiency) and its Slurm array tasks (slurm-task lines, read by
// jobs/study.sh --slurm). The last line is "<n> cases in <dir>".
PetscErrorCode StudyList(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                const std::vector<StudyCase> &cases) {
  const PetscInt P = std::max<PetscInt>(1, s.study.plan_cores);
  std::vector<std::vector<double>> prices;
  PetscFunctionBeginUser;
  PetscCall(StudyPrices(comm, args, s, cases, P, s.parallel.node_ranks, &prices));
  const StudyPlan plan = s.study.schedule == StudySchedule::serial ? PlanSerial(prices, P)
                                                                    : PlanStudy(prices, P, s.parallel.plan_margin);
  for (size_t i = 0; i < cases.size(); ++i) {
    const size_t j = plan.size_of[i];
    std::string where;
    if (s.study.plan_cores > 0)
      where = "; on " + std::to_string(plan.sizes[j]) + (plan.sizes[j] > 1 ? " ranks " : " rank ") + study::num(prices[i][j]) + " s, from " +
              study::num(plan.start[i]) + " s";
    PetscCall(PetscPrintf(comm, "%s: %.4g core-seconds%s\n", cases[i].describe().c_str(), prices[i][0], where.c_str()));
  }
  PetscCall(PetscPrintf(comm, "predicted: %.4g core-seconds on one rank (cost model: docs/design.md)\n", plan.serial_work));
  if (s.study.plan_cores > 0) {
    PetscCall(PetscPrintf(comm, "plan on %" PetscInt_FMT " cores: groups of %s ranks; makespan %.4g s (%.2f h), efficiency %.2f\n",
                          P, plan.groups_text().c_str(), plan.makespan, plan.makespan / 3600, plan.efficiency()));
    for (const PlanTask &task : PlanTasks(plan, prices, s.study.task_seconds)) {
      std::string list;
      for (size_t i : task.cases) list += (list.empty() ? "" : ",") + std::to_string(cases[i].index);
      PetscCall(PetscPrintf(comm, "slurm-task ranks=%" PetscInt_FMT " seconds=%.0f cases=%s\n", task.ranks,
                            std::ceil(task.seconds), list.c_str()));
    }
  }
  PetscCall(PetscPrintf(comm, "%zu cases in %s\n", cases.size(), s.study.dir.c_str()));
  PetscFunctionReturn(0);
}

// The cases to run: study.only's (or all) less those finished before.
PetscErrorCode CasesToRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                 const std::vector<StudyCase> &cases, std::vector<StudyCase> *run) {
  const std::vector<PetscInt> only = integers(s.study.only);
  PetscInt kept = 0;
  PetscFunctionBeginUser;
  for (PetscInt i : only)
    PetscCheck(i < (PetscInt)cases.size(), comm, PETSC_ERR_USER_INPUT,
               "study.only names case %" PetscInt_FMT " but the study has %zu cases (0 .. %zu)", i, cases.size(),
               cases.size() - 1);
  for (const StudyCase &c : cases) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.index) == only.end()) continue;
    bool finished;
    PetscCall(StudyCaseFinished(comm, args, s, c, &finished));
    if (finished) ++kept;
    else run->push_back(c);
  }
  if (kept)
    PetscCall(PetscPrintf(comm, "mft study: %" PetscInt_FMT " cases kept from a run before (their files verify and "
                          "their settings are the same); %zu to run\n", kept, run->size()));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyConvergenceList(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s) {
  PetscFunctionBeginUser;
  PetscCall(StudyList(comm, args, s, StudyCases(s)));
  PetscFunctionReturn(0);
}

PetscErrorCode StudyConvergenceRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                                   int *status) {
  PetscInt missing = 0;
  PetscFunctionBeginUser;
  const auto cases = StudyCases(s);
  const std::string dir = s.aggregate.empty() ? s.study.dir : s.aggregate;
  const double t0 = seconds();
  PetscCall(StudyHeader(comm, s, cases.size(), dir));
  if (s.aggregate.empty()) {
    PetscCall(StudyProbeFileCheck(comm, args, s));
    PetscCall(StudyDirCreate(comm, dir));
    std::vector<StudyCase> todo;
    PetscCall(CasesToRun(comm, args, s, cases, &todo));
    CasesRun run;
    PetscCall(StudyRunCases(comm, args, s, todo, &run));
    if (run.signal) { // checkpointed: the same command resumes the cases
      PetscCall(PetscPrintf(comm,
                            "mft study: stopped by a signal: %" PetscInt_FMT " cases done, %zu to run again; exit %d "
                            "(rerun the same command to resume)\n",
                            run.done, todo.size() - run.done - run.failed, kExitResubmit));
      *status = kExitResubmit;
      PetscFunctionReturn(0);
    }
    if (!s.study.only.empty()) {
      *status = run.failed ? kExitInput : kExitOk;
      Summary sum;
      sum.add("command", std::string("study")).add("cases", s.study.only);
      sum.add("status", std::string(run.failed ? "failed" : "done")).add("seconds", seconds() - t0);
      PetscCall(sum.print(comm));
      PetscFunctionReturn(0);
    }
  }
  double searched = 0, predicted = 0;
  PetscCall(StudyLaw(comm, args, s, dir, &predicted));
  if (s.study.worst) PetscCall(StudyWorst(comm, args, s, dir, &searched));
  PetscCall(StudyAggregate(comm, s, dir, &missing));
  PetscCall(PetscPrintf(comm, "mft study: aggregated %s: %zu cases, %" PetscInt_FMT " missing or failed; wrote %s/study.csv, fits.csv, study.h5\n",
                        dir.c_str(), cases.size(), missing, dir.c_str()));
  if (!s.replicates.empty()) PetscCall(StudyReplicates(comm, s, dir));
  Summary sum;
  sum.add("command", std::string("study")).add("dir", dir).add("cases", (long long)cases.size());
  sum.add("missing", (long long)missing).add("seconds", seconds() - t0);
  if (s.study.worst) sum.add("worst_seconds", searched);
  if (StudyFluctuationWanted(s)) sum.add("law_seconds", predicted);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
