// The training loop shared by mft train and the trained cases of studies.
#include "mft/files/training.hpp"

#include "mft/files/checkpoint.hpp"
#include "mft/files/report.hpp"
#include "mft/settings/signals.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

static bool logged(const TrainSettings &t, PetscInt step) { return step % t.log_every == 0 || step == t.steps - 1; }

// One training step: risk and gradient on the step's batch, checks, update.
static PetscErrorCode TrainStep(Problem *p, Optimizer *opt, History *history, PetscInt step, double t0, PetscInt first,
                                const std::string &columns) {
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
  if (logged(t, step)) {
    const double per = (seconds() - t0) / (double)(step + 1 - first);
    PetscCall(PetscPrintf(comm, "%8" PetscInt_FMT " %16.9e %12.5e %12.5e %10.3g %10.4f %9.1fs%s\n", step, p->risk,
                          (double)gnorm, (double)hnorm, learning_rate(t, step), per, per * (double)(t.steps - step - 1),
                          columns.c_str()));
  }
  PetscCall(OptimizerStep(opt, p->heads.theta, p->grad));
  PetscCall(ProblemSetHeads(p));
  PetscFunctionReturn(0);
}

PetscErrorCode TrainResume(Problem *p, Optimizer *opt, History *history, const std::string &who, PetscInt *start,
                           PetscInt *saved) {
  const Settings &s = p->settings;
  MPI_Comm comm = p->grid.comm;
  std::string from;
  PetscFunctionBeginUser;
  PetscCall(CheckpointResolve(comm, s, &from));
  if (from.empty()) PetscFunctionReturn(0);
  PetscCall(CheckpointCompatible(comm, s, from));
  PetscCall(RunFileRead(from, p, opt, history, start));
  PetscCheck(*start <= s.train.steps, comm, PETSC_ERR_USER_INPUT,
             "%s is at step %" PetscInt_FMT ", beyond train.steps = %" PetscInt_FMT, from.c_str(), *start, s.train.steps);
  PetscCall(PetscPrintf(comm, "%srestarting from %s at step %" PetscInt_FMT "\n", who.c_str(), from.c_str(), *start));
  *saved = *start;
  PetscFunctionReturn(0);
}

PetscErrorCode TrainLoop(Problem *p, Optimizer *opt, History *history, PetscInt start, PetscInt saved,
                         const std::function<PetscErrorCode(PetscInt)> &record, TrainingStop *stop,
                         const TrainingColumns *columns) {
  const TrainSettings &t = p->settings.train;
  const CheckpointSettings &c = p->settings.checkpoint;
  MPI_Comm comm = p->grid.comm;
  PetscFunctionBeginUser;
  SignalsInstall();
  PetscCall(PetscPrintf(comm, "%8s %16s %12s %12s %10s %10s %10s%s\n", "step", "risk", "|g|", "max|head|", "lr",
                        "s/step", "left", columns ? columns->header.c_str() : ""));
  stop->saved = saved;
  stop->seconds_start = seconds();
  for (PetscInt step = start; step < t.steps; ++step) {
    if (record) PetscCall(record(step));
    std::string row;
    if (columns && columns->row && logged(t, step)) PetscCall(columns->row(step, &row));
    PetscCall(TrainStep(p, opt, history, step, stop->seconds_start, start, row));
    const PetscInt done = step + 1;
    stop->done = done;
    if (c.every > 0 && done % c.every == 0 && done < t.steps) {
      PetscCall(CheckpointWrite(*p, *history, *opt, done));
      stop->saved = done;
    }
    PetscCall(SignalsPending(comm, &stop->signal));
    if (stop->signal) {
      if (stop->saved != done) PetscCall(CheckpointWrite(*p, *history, *opt, done));
      stop->saved = done;
      PetscFunctionReturn(0);
    }
  }
  stop->done = std::max(start, t.steps);
  if (record) PetscCall(record(stop->done));
  PetscFunctionReturn(0);
}

} // namespace mft
