// mft train: training of the heads (gd, adamw, adamw-block), progress on rank
// 0, checkpoints, restart, signals; the run file at the end and one summary line.
#include "mft/checkpoint.hpp"
#include "mft/commands.hpp"
#include "mft/error.hpp"
#include "mft/report.hpp"
#include "mft/signals.hpp"

#include <cmath>
#include <csignal>

namespace mft {

// One training step: risk and gradient on the step's batch, checks, update.
static PetscErrorCode TrainStep(Problem *p, Optimizer *opt, History *history, PetscInt step, double t0, PetscInt first) {
  const TrainSettings &t = p->settings.train;
  MPI_Comm comm = p->grid.comm;
  PetscReal gnorm, hnorm;
  PetscFunctionBeginUser;
  ProblemSetBatch(p, step);
  PetscCall(ProblemEvaluate(p, PETSC_TRUE));
  PetscCall(VecNorm(p->grad, NORM_2, &gnorm));
  PetscCall(HeadsMaxNorm(p->heads, p->heads.theta, &hnorm));
  PetscCheck(std::isfinite(p->risk) && std::isfinite(gnorm), comm, PETSC_ERR_NOT_CONVERGED,
             "training diverged at step %" PetscInt_FMT ": the %s is not finite (lower train.lr = %g)", step,
             std::isfinite(p->risk) ? "gradient" : "risk", t.lr);
  history->loss.push_back(p->risk);
  history->max_param_norm.push_back(hnorm);
  if (step % t.log_every == 0 || step == t.steps - 1) {
    const double per = (seconds() - t0) / (double)(step + 1 - first);
    PetscCall(PetscPrintf(comm, "%8" PetscInt_FMT " %16.9e %12.5e %12.5e %10.3g %10.4f %9.1fs\n", step, p->risk,
                          (double)gnorm, (double)hnorm, learning_rate(t, step), per, per * (double)(t.steps - step - 1)));
  }
  PetscCall(OptimizerStep(opt, p->heads.theta, p->grad));
  PetscCall(ProblemSetHeads(p));
  PetscFunctionReturn(0);
}

PetscErrorCode CommandTrain(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  Problem p;
  Optimizer opt;
  History history;
  std::string from;
  PetscInt start = 0, saved = -1;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "train", args, &s, &help));
  if (help) PetscFunctionReturn(0);
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
  }
  const TrainSettings &t = p.settings.train;
  const CheckpointSettings &c = p.settings.checkpoint;
  SignalsInstall();
  PetscCall(PetscPrintf(comm, "%8s %16s %12s %12s %10s %10s %10s\n", "step", "risk", "|g|", "max|head|", "lr",
                        "s/step", "left"));
  const double t0 = seconds();
  for (PetscInt step = start; step < t.steps; ++step) {
    PetscCall(TrainStep(&p, &opt, &history, step, t0, start));
    const PetscInt done = step + 1;
    if (c.every > 0 && done % c.every == 0 && done < t.steps) {
      PetscCall(CheckpointWrite(p, history, opt, done));
      saved = done;
    }
    int sig;
    PetscCall(SignalsPending(comm, &sig));
    if (sig) {
      if (saved != done) PetscCall(CheckpointWrite(p, history, opt, done));
      PetscCall(PetscPrintf(comm, "mft: caught %s after step %" PetscInt_FMT ": wrote %s; exit %d (resubmit with --restart auto)\n",
                            sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM", step, CheckpointPath(c, done).c_str(),
                            kExitResubmit));
      Summary sum;
      sum.add("command", std::string("train")).add("status", std::string("checkpointed")).add("steps", (long long)done);
      sum.add("checkpoint", CheckpointPath(c, done));
      PetscCall(sum.print(comm));
      *status = kExitResubmit;
      PetscCall(OptimizerDestroy(&opt));
      PetscCall(ProblemDestroy(&p));
      PetscFunctionReturn(0);
    }
  }
  // Risk, output and gradient at the final heads, as the run file stores them.
  ProblemSetBatch(&p, -1);
  PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
  PetscCheck(std::isfinite(p.risk), comm, PETSC_ERR_NOT_CONVERGED,
             "training diverged: the final risk is not finite (lower train.lr = %g)", t.lr);
  if (saved != t.steps) PetscCall(CheckpointWrite(p, history, opt, t.steps));
  const double elapsed = seconds() - t0;
  PetscCall(RunFileWrite(p, history, &opt, t.steps, Content::run_with_gradient, p.settings.output.file));
  const double initial = history.loss.empty() ? p.risk : history.loss.front();
  PetscCall(PetscPrintf(comm, "final risk %.9e after %" PetscInt_FMT " steps (x%.3g lower), %.2f s; wrote %s\n",
                        p.risk, t.steps, initial / p.risk, elapsed, p.settings.output.file.c_str()));
  Summary sum;
  sum.add("command", std::string("train"))
      .add("status", std::string("done"))
      .add("initial_risk", initial)
      .add("final_risk", p.risk)
      .add("reduction", initial / p.risk)
      .add("steps", (long long)t.steps)
      .add("seconds", elapsed)
      .add("seconds_per_step", t.steps > start ? elapsed / (double)(t.steps - start) : 0.0)
      .add("ranks", (long long)p.grid.size)
      .add("file", p.settings.output.file);
  PetscCall(sum.print(comm));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

} // namespace mft
