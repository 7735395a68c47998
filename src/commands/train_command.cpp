// mft train: training of the heads (gd, adamw, adamw-block), progress on rank
// 0, checkpoints, restart, signals; the run file at the end and one summary line.
#include "mft/files/checkpoint.hpp"
#include "mft/commands/commands.hpp"
#include "mft/settings/error.hpp"
#include "mft/layout/exchange.hpp"
#include "mft/files/heldout.hpp"
#include "mft/analyses/ntk.hpp"
#include "mft/files/report.hpp"
#include "mft/settings/signals.hpp"
#include "mft/files/training.hpp"
#include "mft/files/settings_files.hpp"
#include "mft/flow/ensemble.hpp"

#include <cmath>
#include <csignal>
#include <cstdio>

namespace mft {

// Where training starts: the newest checkpoint (--restart), else the heads of
// params.file, else the initial draw; *start, *saved: its step.
static PetscErrorCode TrainStart(Problem *p, Optimizer *opt, History *history, PetscInt *start, PetscInt *saved) {
  const Settings &s = p->settings;
  PetscFunctionBeginUser;
  PetscCall(TrainResume(p, opt, history, "", start, saved));
  if (*saved < 0 && !s.params_file.empty()) { // a fresh start from given heads
    PetscCall(RunFileReadParams(s.params_file, p));
    PetscCall(PetscPrintf(p->grid.comm, "starting from the heads of %s\n", s.params_file.c_str()));
  }
  PetscFunctionReturn(0);
}

// A run stopped by SIGUSR1 or SIGTERM after its checkpoint: said, and the summary line.
static PetscErrorCode ReportStopped(MPI_Comm comm, const CheckpointSettings &c, const TrainingStop &stop) {
  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(comm, "mft: caught %s after step %" PetscInt_FMT ": wrote %s; exit %d (resubmit with --restart auto)\n",
                        stop.signal == SIGUSR1 ? "SIGUSR1" : "SIGTERM", stop.done - 1,
                        CheckpointPath(c, stop.done).c_str(), kExitResubmit));
  Summary sum;
  sum.add("command", std::string("train")).add("status", std::string("checkpointed")).add("steps", (long long)stop.done);
  sum.add("checkpoint", CheckpointPath(c, stop.done));
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

// The end of a run: the NTK rate against its prediction (train.ntk), and the summary line.
static PetscErrorCode TrainSummary(const Problem &p, const History &history, const Heldout &heldout, PetscInt start,
                                   double initial, double elapsed, NtkRate *rate) {
  MPI_Comm comm = p.grid.comm;
  const TrainSettings &t = p.settings.train;
  PetscFunctionBeginUser;
  double messages, bytes;
  PetscCall(TrafficMean(comm, &messages, &bytes));
  Summary sum;
  if (t.ntk != NtkPart::none && NtkRateFit(history.loss, t, rate)) {
    PetscCall(PetscPrintf(comm, "rate of log R (steps %zu to %zu): %.6e (rms residual %.3e); the NTK predicts %.6e\n",
                          rate->from, rate->to, rate->fitted, rate->fit_rms, rate->predicted));
    sum.add("ntk_lambda_min", rate->lambda_min).add("predicted_rate", rate->predicted);
    sum.add("predicted_rate_steps", rate->discrete).add("fitted_rate", rate->fitted).add("fit_rms", rate->fit_rms);
  }
  sum.add("command", std::string("train"))
      .add("status", std::string("done"))
      .add("initial_risk", initial)
      .add("final_risk", p.risk)
      .add("reduction", initial / p.risk)
      .add("steps", (long long)t.steps)
      .add("seconds", elapsed)
      .add("seconds_per_step", t.steps > start ? elapsed / (double)(t.steps - start) : 0.0)
      .add("ranks", (long long)p.grid.size)
      .add("messages_per_rank", messages) // the program's own exchanges (exchange.hpp), not PETSc's scatters
      .add("bytes_per_rank", bytes)
      .add("grid", std::to_string(p.grid.Ph) + "x" + std::to_string(p.grid.Pt))
      .add("cut_sequences", std::string(p.predicted.cuts ? to_string(p.velocity.form) : "none"))
      .add("predicted_messages_per_step", p.predicted.messages) // the cost model's (cost.hpp), per rank
      .add("predicted_bytes_per_step", p.predicted.bytes)
      .add("predicted_step_seconds", p.predicted.seconds())
      .add("file", p.settings.output.file);
  HeldoutSummary(heldout, &sum);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

// The mean over the ensemble's live models of a rank's row of numbers (one
// per model of its block; NaN for a diverged one), and the live count.
static PetscErrorCode LiveMean(const Ensemble &e, const double *row, double *mean, PetscInt *live) {
  double sums[2] = {0, 0};
  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < e.models(); ++s)
    if (std::isfinite(row[s]) && e.diverged[(size_t)s] < 0) sums[0] += row[s], sums[1] += 1;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, e.comm));
  *mean = sums[1] > 0 ? sums[0] / sums[1] : NAN;
  *live = (PetscInt)sums[1];
  PetscFunctionReturn(0);
}

// mft train --train.seeds S: the ensemble's training (ensemble.hpp), its run
// file with the seeds axis and its summary line.
static PetscErrorCode TrainEnsemble(MPI_Comm comm, const Settings &s, int *status) {
  Ensemble e;
  Optimizer opt;
  History history;
  PetscInt start = 0, saved = -1, live;
  PetscFunctionBeginUser;
  PetscCall(EnsembleCreate(comm, s, s.train.seeds, s.init.seed, &e));
  PetscCall(ReportEnsembleHeader(e));
  PetscCall(OptimizerCreate(e.p.settings, e.p.heads, &opt, &e.p.neurons));
  PetscCall(EnsembleTrainResume(&e, &opt, &history, "", &start, &saved));
  const TrainSettings &t = e.p.settings.train;
  TrainingStop stop;
  PetscCall(EnsembleTrainLoop(&e, &opt, &history, start, saved, nullptr, &stop));
  if (stop.signal) {
    PetscCall(ReportStopped(comm, e.p.settings.checkpoint, stop));
    *status = kExitResubmit;
  } else {
    EnsembleSetBatch(&e, -1);
    PetscCall(EnsembleEvaluate(&e, t.steps, true, &live));
    PetscCheck(live > 0, comm, PETSC_ERR_NOT_CONVERGED,
               "training diverged: every one of the %" PetscInt_FMT " models has a final risk or gradient that is not "
               "finite (lower train.lr = %g)", e.S, t.lr);
    if (saved != t.steps)
      PetscCall(CheckpointSave(comm, e.p.settings.checkpoint, t.steps, [&](const std::string &path) {
        return EnsembleFileWrite(e, history, &opt, t.steps, Content::checkpoint, path);
      }));
    const double elapsed = seconds() - stop.seconds_start;
    double initial = NAN, final_risk;
    PetscInt first_live;
    PetscCall(LiveMean(e, e.p.risks.data(), &final_risk, &live));
    e.p.risk = final_risk;
    PetscCall(EnsembleFileWrite(e, history, &opt, t.steps, Content::run_with_gradient, e.p.settings.output.file));
    if (!history.loss.empty()) PetscCall(LiveMean(e, history.loss.data(), &initial, &first_live));
    PetscCall(PetscPrintf(comm, "final risk %.9e (the mean of %" PetscInt_FMT " models; %" PetscInt_FMT
                          " diverged) after %" PetscInt_FMT " steps (x%.3g lower), %.2f s; wrote %s\n",
                          final_risk, live, e.S - live, t.steps, initial / final_risk, elapsed,
                          e.p.settings.output.file.c_str()));
    const double trained = (double)(t.steps - start);
    Summary sum;
    sum.add("command", std::string("train")).add("status", std::string("done")).add("models", (long long)e.S);
    sum.add("diverged", (long long)(e.S - live)).add("initial_risk", initial).add("final_risk", final_risk);
    sum.add("reduction", initial / final_risk).add("steps", (long long)t.steps).add("seconds", elapsed);
    sum.add("models_per_second", trained > 0 ? (double)e.S / elapsed : 0.0);
    sum.add("model_steps_per_second", trained > 0 ? (double)e.S * trained / elapsed : 0.0);
    sum.add("file", e.p.settings.output.file);
    PetscCall(sum.print(comm));
  }
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(EnsembleDestroy(&e));
  PetscFunctionReturn(0);
}

PetscErrorCode CommandTrain(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  Problem p;
  Trajectory trajectory;
  Optimizer opt;
  History history;
  Heldout heldout;
  PetscInt start = 0, saved = -1;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "train", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(InputsVerify(comm, s)); // the files mft wrote, whole, before any work
  PetscCall(SettingsFromFiles(comm, "train", args, &s));
  if (s.train.seeds > 1) PetscFunctionReturn(TrainEnsemble(comm, s, status));
  PetscCall(ProblemCreate(comm, s, &p));
  PetscCall(ReportHeader(p));
  PetscCall(OptimizerCreate(p.settings, p.heads, &opt, &p.neurons));
  PetscCall(TrainStart(&p, &opt, &history, &start, &saved));
  const TrainSettings &t = p.settings.train;
  const CheckpointSettings &c = p.settings.checkpoint;
  NtkRate rate;
  if (t.ntk != NtkPart::none && start == 0) PetscCall(NtkRatePredict(&p, t, &rate));
  PetscCall(HeldoutCreate(p, &heldout));
  const TrainingColumns columns = HeldoutColumns(&p, &heldout, &history);
  TrainingStop stop;
  PetscCall(TrainLoop(&p, &opt, &history, start, saved, nullptr, &stop, heldout.active() ? &columns : nullptr));
  saved = stop.saved;
  if (stop.signal) {
    PetscCall(ReportStopped(comm, c, stop));
    *status = kExitResubmit;
    PetscCall(HeldoutDestroy(&heldout));
    PetscCall(OptimizerDestroy(&opt));
    PetscCall(ProblemDestroy(&p));
    PetscFunctionReturn(0);
  }
  const double t0 = stop.seconds_start;
  // The held-out figures at the final heads; then risk, output and gradient, as the run file stores them.
  PetscCall(HeldoutEvaluate(&p, &heldout, t.steps, &history));
  ProblemSetBatch(&p, -1);
  PetscCall(ProblemRecordTrajectory(&p, &trajectory));
  PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
  PetscCheck(std::isfinite(p.risk), comm, PETSC_ERR_NOT_CONVERGED,
             "training diverged: the final risk is not finite (lower train.lr = %g)", t.lr);
  if (saved != t.steps) PetscCall(CheckpointWrite(p, history, opt, t.steps));
  const double elapsed = seconds() - t0;
  PetscCall(RunFileWrite(p, history, &opt, t.steps, Content::run_with_gradient, p.settings.output.file));
  const double initial = history.loss.empty() ? p.risk : history.loss.front();
  const std::string figures = HeldoutFigures(heldout);
  PetscCall(PetscPrintf(comm, "final risk %.9e after %" PetscInt_FMT " steps (x%.3g lower)%s, %.2f s; wrote %s\n",
                        p.risk, t.steps, initial / p.risk, figures.c_str(), elapsed, p.settings.output.file.c_str()));
  PetscCall(TrainSummary(p, history, heldout, start, initial, elapsed, &rate));
  PetscCall(HeldoutDestroy(&heldout));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  PetscCall(TrajectoryDestroy(&trajectory));
  PetscFunctionReturn(0);
}

} // namespace mft
