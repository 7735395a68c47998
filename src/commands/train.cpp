// mft train: training of the heads (gd, adamw, adamw-block), progress on rank
// 0, checkpoints, restart, signals; the run file at the end and one summary line.
#include "mft/checkpoint.hpp"
#include "mft/commands.hpp"
#include "mft/error.hpp"
#include "mft/exchange.hpp"
#include "mft/fit.hpp"
#include "mft/heldout.hpp"
#include "mft/ntk.hpp"
#include "mft/report.hpp"
#include "mft/signals.hpp"
#include "mft/training.hpp"

#include <cmath>
#include <csignal>
#include <cstdio>

namespace mft {

PetscErrorCode CommandTrain(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  Problem p;
  Trajectory trajectory;
  Optimizer opt;
  History history;
  Heldout heldout;
  std::string from;
  PetscInt start = 0, saved = -1;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "train", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(SettingsFromFiles(comm, "train", args, &s));
  PetscCall(ProblemCreate(comm, s, &p));
  PetscCall(ReportHeader(p));
  PetscCall(OptimizerCreate(p.settings.train, p.heads, &opt));
  PetscCall(CheckpointResolve(comm, p.settings, &from));
  if (!from.empty()) {
    PetscCall(CheckpointCompatible(comm, p.settings, from));
    PetscCall(RunFileRead(from, &p, &opt, &history, &start));
    PetscCheck(start <= s.train.steps, comm, PETSC_ERR_USER_INPUT,
               "%s is at step %" PetscInt_FMT ", beyond train.steps = %" PetscInt_FMT, from.c_str(), start,
               s.train.steps);
    PetscCall(PetscPrintf(comm, "restarting from %s at step %" PetscInt_FMT "\n", from.c_str(), start));
    saved = start;
  } else if (!s.params_file.empty()) { // a fresh start from given heads
    PetscCall(RunFileReadParams(s.params_file, &p));
    PetscCall(PetscPrintf(comm, "starting from the heads of %s\n", s.params_file.c_str()));
  }
  const TrainSettings &t = p.settings.train;
  const CheckpointSettings &c = p.settings.checkpoint;
  // The NTK at the start predicts the linearised rate of the risk (docs/model.md,
  // 'The NTK'): in training time, R decays at least like exp(-2 lambda_min tau / n),
  // n = M (pooled) or M N (token), while the heads stay near their start.
  double lambda_min = NAN, predicted = NAN, discrete = NAN;
  if (t.ntk != "none" && start == 0) {
    Ntk k;
    PetscCall(NtkCompute(&p, t.ntk, &k));
    lambda_min = k.eigenvalues.front();
    const double n = p.targets.kind == LossKind::pooled ? (double)p.tokens.M : (double)(p.tokens.M * p.tokens.N);
    predicted = 2.0 * lambda_min / n;
    // gd in steps of lr: the slowest mode shrinks by (1 - lr lambda_min / n) a step.
    discrete = -2.0 * std::log(std::fabs(1.0 - t.lr * lambda_min / n)) / t.lr;
    PetscCall(PetscPrintf(comm,
                          "NTK (%s part) at the start: lambda_min %.6e, lambda_max %.6e; predicted rate of log R in "
                          "training time %.6e (for gd steps of lr %g: %.6e)\n",
                          t.ntk.c_str(), lambda_min, k.eigenvalues.back(), predicted, t.lr, discrete));
  }
  PetscCall(HeldoutCreate(p, &heldout));
  const TrainingColumns columns = HeldoutColumns(&p, &heldout, &history);
  TrainingStop stop;
  PetscCall(TrainLoop(&p, &opt, &history, start, saved, nullptr, &stop, heldout.active ? &columns : nullptr));
  saved = stop.saved;
  if (stop.signal) {
    PetscCall(PetscPrintf(comm, "mft: caught %s after step %" PetscInt_FMT ": wrote %s; exit %d (resubmit with --restart auto)\n",
                          stop.signal == SIGUSR1 ? "SIGUSR1" : "SIGTERM", stop.done - 1,
                          CheckpointPath(c, stop.done).c_str(), kExitResubmit));
    Summary sum;
    sum.add("command", std::string("train")).add("status", std::string("checkpointed")).add("steps", (long long)stop.done);
    sum.add("checkpoint", CheckpointPath(c, stop.done));
    PetscCall(sum.print(comm));
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
  std::string figures;
  char b[64];
  if (heldout.file) std::snprintf(b, sizeof b, ", held-out risk %.6e", heldout.risk), figures += b;
  if (heldout.accuracy) std::snprintf(b, sizeof b, ", accuracy %.4f", heldout.training_accuracy), figures += b;
  if (heldout.accuracy && heldout.file) std::snprintf(b, sizeof b, " (held-out %.4f)", heldout.heldout_accuracy), figures += b;
  PetscCall(PetscPrintf(comm, "final risk %.9e after %" PetscInt_FMT " steps (x%.3g lower)%s, %.2f s; wrote %s\n",
                        p.risk, t.steps, initial / p.risk, figures.c_str(), elapsed, p.settings.output.file.c_str()));
  double messages, bytes;
  PetscCall(TrafficMean(comm, &messages, &bytes));
  Summary sum;
  if (t.ntk != "none" && history.loss.size() >= 4) {
    // log R against training time tau (the sum of the learning rates), over the
    // second half of the steps before the risk reaches round-off (R > 1e-24 R_0).
    std::vector<double> tau, logR;
    double now = 0;
    size_t above = 0;
    while (above < history.loss.size() && history.loss[above] > 1e-24 * history.loss.front()) ++above;
    for (size_t k = 0; k < above; ++k) {
      if (k >= above / 2) tau.push_back(now), logR.push_back(std::log(history.loss[k]));
      now += learning_rate(t, (PetscInt)k);
    }
    const LineFit f = fit_line(tau, logR);
    PetscCall(PetscPrintf(comm, "rate of log R (steps %zu to %zu): %.6e (rms residual %.3e); the NTK predicts %.6e\n",
                          above / 2, above, -f.slope, f.rms, predicted));
    sum.add("ntk_lambda_min", lambda_min).add("predicted_rate", predicted).add("predicted_rate_steps", discrete);
    sum.add("fitted_rate", -f.slope);
    sum.add("fit_rms", f.rms);
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
  if (heldout.file) sum.add("heldout_risk", heldout.risk);
  if (heldout.accuracy) sum.add("accuracy", heldout.training_accuracy);
  if (heldout.accuracy && heldout.file) sum.add("heldout_accuracy", heldout.heldout_accuracy);
  PetscCall(sum.print(comm));
  PetscCall(HeldoutDestroy(&heldout));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  PetscCall(TrajectoryDestroy(&trajectory));
  PetscFunctionReturn(0);
}

} // namespace mft
