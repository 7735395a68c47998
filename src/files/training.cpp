// The training loop shared by mft train and the trained cases of studies.
#include "mft/files/training.hpp"

#include "mft/files/checkpoint.hpp"
#include "mft/files/report.hpp"
#include "mft/settings/signals.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
  if (p->neuron_grad) { // |g| over the heads' and the neurons' entries
    PetscReal gm;
    PetscCall(VecNorm(p->neuron_grad, NORM_2, &gm));
    gnorm = std::hypot(gnorm, gm);
  }
  PetscCall(HeadsMaxNorm(p->heads, p->heads.theta, &hnorm));
  PetscCheck(std::isfinite(p->risk) && std::isfinite(gnorm), comm, PETSC_ERR_NOT_CONVERGED,
             "training diverged at step %" PetscInt_FMT ": the %s is not finite (lower train.lr = %g)", step,
             std::isfinite(p->risk) ? "gradient" : "risk", t.lr);
  history->loss.push_back(p->risk);
  history->max_param_norm.push_back(hnorm);
  if (logged(t, step)) {
    const double per = (seconds() - t0) / (double)(step + 1 - first);
    PetscCall(PetscPrintf(comm, "%8" PetscInt_FMT " %16.9e %12.5e %12.5e %10.3g %10.4f %9.1fs%s\n", step, p->risk,
                          (double)gnorm, (double)hnorm, OptimizerRate(*opt, step), per, per * (double)(t.steps - step - 1),
                          columns.c_str()));
  }
  PetscCall(OptimizerStepAll(opt, &p->heads, p->grad, &p->neurons, p->neuron_grad));
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

namespace {

// What the loop trains: a step (risk and gradient on the step's batch, the
// checks, the logged row, the update) and a checkpoint of `done` updates.
struct Trainee {
  MPI_Comm comm;
  const Settings &s;
  std::string header; // the progress table's own columns
  std::function<PetscErrorCode(PetscInt step, double t0, PetscInt first, const std::string &columns)> step;
  std::function<PetscErrorCode(PetscInt done)> checkpoint;
};

PetscErrorCode Loop(const Trainee &tr, PetscInt start, PetscInt saved,
                    const std::function<PetscErrorCode(PetscInt)> &record, TrainingStop *stop,
                    const TrainingColumns *columns) {
  const TrainSettings &t = tr.s.train;
  const CheckpointSettings &c = tr.s.checkpoint;
  PetscFunctionBeginUser;
  SignalsInstall();
  PetscCall(PetscPrintf(tr.comm, "%s%s\n", tr.header.c_str(), columns ? columns->header.c_str() : ""));
  stop->saved = saved;
  stop->seconds_start = seconds();
  for (PetscInt step = start; step < t.steps; ++step) {
    if (record) PetscCall(record(step));
    std::string row;
    if (columns && columns->row && logged(t, step)) PetscCall(columns->row(step, &row));
    PetscCall(tr.step(step, stop->seconds_start, start, row));
    const PetscInt done = step + 1;
    stop->done = done;
    if (c.every > 0 && done % c.every == 0 && done < t.steps) {
      PetscCall(tr.checkpoint(done));
      stop->saved = done;
    }
    PetscCall(SignalsPending(tr.comm, &stop->signal));
    if (stop->signal) {
      if (stop->saved != done) PetscCall(tr.checkpoint(done));
      stop->saved = done;
      PetscFunctionReturn(0);
    }
  }
  stop->done = std::max(start, t.steps);
  if (record) PetscCall(record(stop->done));
  PetscFunctionReturn(0);
}

std::string TableHeader(const char *risk) {
  char h[160];
  snprintf(h, sizeof h, "%8s %16s %12s %12s %10s %10s %10s", "step", risk, "|g|", "max|head|", "lr", "s/step", "left");
  return h;
}

} // namespace

PetscErrorCode TrainLoop(Problem *p, Optimizer *opt, History *history, PetscInt start, PetscInt saved,
                         const std::function<PetscErrorCode(PetscInt)> &record, TrainingStop *stop,
                         const TrainingColumns *columns) {
  PetscFunctionBeginUser;
  const Trainee tr{p->grid.comm, p->settings, TableHeader("risk"),
                   [&](PetscInt step, double t0, PetscInt first, const std::string &row) {
                     return TrainStep(p, opt, history, step, t0, first, row);
                   },
                   [&](PetscInt done) { return CheckpointWrite(*p, *history, *opt, done); }};
  PetscCall(Loop(tr, start, saved, record, stop, columns));
  PetscFunctionReturn(0);
}

namespace {

// An ensemble's step: every model's risk and gradient on the step's batch;
// the models that diverge are flagged and frozen (a warning says how many);
// the logged row has the live models' mean risk, its range, the largest |g|
// and head norm, and the count of diverged models; the update.
PetscErrorCode EnsembleStep(Ensemble *e, Optimizer *opt, History *history, PetscInt step, double t0, PetscInt first,
                            const std::string &columns, PetscInt *live) {
  Problem &p = e->p;
  const TrainSettings &t = p.settings.train;
  const PetscInt before = *live;
  PetscFunctionBeginUser;
  EnsembleSetBatch(e, step);
  PetscCall(EnsembleEvaluate(e, step, true, live));
  PetscCheck(*live > 0, e->comm, PETSC_ERR_NOT_CONVERGED,
             "training diverged at step %" PetscInt_FMT ": every one of the %" PetscInt_FMT
             " models has a risk or gradient that is not finite (lower train.lr = %g)", step, e->S, t.lr);
  if (*live < before)
    PetscCall(PetscPrintf(e->comm, "mft: warning: %" PetscInt_FMT " of %" PetscInt_FMT " models diverged by step %"
                          PetscInt_FMT " (kept at their heads of that step, counted in /ensemble/diverged)\n",
                          e->S - *live, e->S, step));
  history->loss.insert(history->loss.end(), p.risks.begin(), p.risks.end());
  history->max_param_norm.insert(history->max_param_norm.end(), e->hnorm.begin(), e->hnorm.end());
  if (logged(t, step)) {
    double sum = 0, least = HUGE_VAL, most = 0, g = 0, h = 0;
    for (PetscInt s = 0; s < e->models(); ++s) {
      if (e->diverged[(size_t)s] >= 0) continue;
      const double r = p.risks[(size_t)s];
      sum += r, least = std::fmin(least, r), most = std::fmax(most, r);
      g = std::fmax(g, e->gnorm[(size_t)s]), h = std::fmax(h, e->hnorm[(size_t)s]);
    }
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, e->comm));
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_DOUBLE, MPI_MIN, e->comm));
    double maxima[3] = {most, g, h};
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, maxima, 3, MPI_DOUBLE, MPI_MAX, e->comm));
    const double per = (seconds() - t0) / (double)(step + 1 - first);
    PetscCall(PetscPrintf(e->comm, "%8" PetscInt_FMT " %16.9e %12.5e %12.5e %12.5e %12.5e %10.3g %10.4f %9.1fs %9"
                          PetscInt_FMT "%s\n", step, sum / (double)*live, least, maxima[0], maxima[1], maxima[2],
                          OptimizerRate(*opt, step), per, per * (double)(t.steps - step - 1), e->S - *live,
                          columns.c_str()));
  }
  Heads &hd = p.heads;
  opt->frozen.assign((size_t)hd.owned.size(), 0);
  for (PetscInt flat = hd.owned.begin; flat < hd.owned.end; ++flat)
    opt->frozen[(size_t)(flat - hd.owned.begin)] = e->diverged[(size_t)(flat % hd.H / (hd.H / hd.seeds))] >= 0;
  if (opt->mlp) { // the folded problem is the rank's own: it owns every neuron
    opt->mlp->frozen.assign((size_t)opt->mlp->heads, 0);
    for (PetscInt flat = 0; flat < opt->mlp->heads; ++flat)
      opt->mlp->frozen[(size_t)flat] = e->diverged[(size_t)EnsembleNeuronModel(*e, flat)] >= 0;
  }
  PetscCall(OptimizerStepAll(opt, &hd, p.grad, &p.neurons, p.neuron_grad));
  PetscCall(ProblemSetHeads(&p));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode EnsembleTrainResume(Ensemble *e, Optimizer *opt, History *history, const std::string &who,
                                   PetscInt *start, PetscInt *saved) {
  const Settings &s = e->p.settings;
  std::string from;
  PetscFunctionBeginUser;
  PetscCall(CheckpointResolve(e->comm, s, &from));
  if (from.empty()) PetscFunctionReturn(0);
  PetscCall(CheckpointCompatible(e->comm, s, from));
  PetscCall(EnsembleFileRead(from, e, opt, history, start));
  PetscCheck(*start <= s.train.steps, e->comm, PETSC_ERR_USER_INPUT,
             "%s is at step %" PetscInt_FMT ", beyond train.steps = %" PetscInt_FMT, from.c_str(), *start, s.train.steps);
  PetscCall(PetscPrintf(e->comm, "%srestarting from %s at step %" PetscInt_FMT "\n", who.c_str(), from.c_str(), *start));
  *saved = *start;
  PetscFunctionReturn(0);
}

PetscErrorCode EnsembleTrainLoop(Ensemble *e, Optimizer *opt, History *history, PetscInt start, PetscInt saved,
                                 const std::function<PetscErrorCode(PetscInt)> &record, TrainingStop *stop) {
  PetscInt live = 0;
  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < e->models(); ++s) live += e->diverged[(size_t)s] < 0;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &live, 1, MPIU_INT, MPI_SUM, e->comm));
  char header[200];
  snprintf(header, sizeof header, "%8s %16s %12s %12s %12s %12s %10s %10s %10s %9s", "step", "mean risk", "least",
           "most", "max|g|", "max|head|", "lr", "s/step", "left", "diverged");
  const Trainee tr{e->comm, e->p.settings, header,
                   [&](PetscInt step, double t0, PetscInt first, const std::string &row) {
                     return EnsembleStep(e, opt, history, step, t0, first, row, &live);
                   },
                   [&](PetscInt done) {
                     return CheckpointSave(e->comm, e->p.settings.checkpoint, done, [&](const std::string &path) {
                       return EnsembleFileWrite(*e, *history, opt, done, Content::checkpoint, path);
                     });
                   }};
  PetscCall(Loop(tr, start, saved, record, stop, nullptr));
  PetscFunctionReturn(0);
}

} // namespace mft
