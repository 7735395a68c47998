// mft train: gradient-flow training of the heads, progress on rank 0, the run
// file at the end and one summary line.
#include "mft/commands.hpp"
#include "mft/optimizer.hpp"
#include "mft/report.hpp"
#include "mft/runfile.hpp"

#include <cmath>

namespace mft {

PetscErrorCode CommandTrain(MPI_Comm comm, const std::vector<std::string> &args) {
  Settings s;
  PetscBool help;
  Problem p;
  Optimizer opt;
  History history;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "train", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(ProblemCreate(comm, s, &p));
  PetscCall(ReportHeader(p));
  PetscCall(OptimizerCreate(s.train, p.heads.theta, &opt));
  const TrainSettings &t = s.train;
  PetscCall(PetscPrintf(comm, "%8s %16s %12s %12s %10s %10s\n", "step", "risk", "|g|", "max|head|", "s/step",
                        "left"));
  const double t0 = seconds();
  for (PetscInt step = 0; step < t.steps; ++step) {
    PetscReal gnorm, hnorm;
    PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
    PetscCall(VecNorm(p.grad, NORM_2, &gnorm));
    PetscCall(HeadsMaxNorm(p.heads, p.heads.theta, &hnorm));
    PetscCheck(std::isfinite(p.risk) && std::isfinite(gnorm), comm, PETSC_ERR_NOT_CONVERGED,
               "training diverged at step %" PetscInt_FMT ": the %s is %s (lower train.lr = %g)", step,
               std::isfinite(p.risk) ? "gradient" : "risk", std::isfinite(p.risk) ? "not finite" : "not finite",
               t.lr);
    history.loss.push_back(p.risk);
    history.max_param_norm.push_back(hnorm);
    if (step % t.log_every == 0 || step == t.steps - 1) {
      const double per = (seconds() - t0) / (double)(step + 1);
      PetscCall(PetscPrintf(comm, "%8" PetscInt_FMT " %16.9e %12.5e %12.5e %10.4f %9.1fs\n", step, p.risk,
                            (double)gnorm, (double)hnorm, per, per * (double)(t.steps - step - 1)));
    }
    PetscCall(OptimizerStep(&opt, p.heads.theta, p.grad));
    PetscCall(ProblemSetHeads(&p));
  }
  // Risk, output and gradient at the final heads, as the run file stores them.
  PetscCall(ProblemEvaluate(&p, PETSC_TRUE));
  PetscCheck(std::isfinite(p.risk), comm, PETSC_ERR_NOT_CONVERGED,
             "training diverged: the final risk is not finite (lower train.lr = %g)", t.lr);
  const double elapsed = seconds() - t0;
  PetscCall(RunFileWrite(p, history, t.steps, PETSC_TRUE, s.output.file));
  const double initial = history.loss.empty() ? p.risk : history.loss.front();
  PetscCall(PetscPrintf(comm, "final risk %.9e after %" PetscInt_FMT " steps (x%.3g lower), %.2f s; wrote %s\n",
                        p.risk, t.steps, initial / p.risk, elapsed, s.output.file.c_str()));
  Summary sum;
  sum.add("command", std::string("train"))
      .add("initial_risk", initial)
      .add("final_risk", p.risk)
      .add("reduction", initial / p.risk)
      .add("steps", (long long)t.steps)
      .add("seconds", elapsed)
      .add("seconds_per_step", t.steps ? elapsed / (double)t.steps : 0.0)
      .add("ranks", (long long)p.grid.size)
      .add("file", s.output.file);
  PetscCall(sum.print(comm));
  PetscCall(OptimizerDestroy(&opt));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(0);
}

} // namespace mft
