// mft forward: the L-layer forward pass (and with --gradient the adjoint) at
// the initial heads, or at those of --params.file (a trained model evaluated
// on any data of its d); writes the run file (with --output.trajectory, the
// tokens at S + 1 depths too) and one summary line.
#include "mft/commands/commands.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/settings_files.hpp"

namespace mft {

PetscErrorCode CommandForward(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  Problem p;
  Trajectory trajectory;
  PetscReal gnorm = 0;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "forward", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(SettingsFromFiles(comm, "forward", args, &s));
  PetscCall(ProblemCreate(comm, s, &p));
  PetscCall(ReportHeader(p));
  if (!s.params_file.empty()) PetscCall(RunFileReadParams(s.params_file, &p)); // a trained model on any data
  PetscCall(ProblemRecordTrajectory(&p, &trajectory));
  const double t0 = seconds();
  PetscCall(ProblemEvaluate(&p, s.gradient ? PETSC_TRUE : PETSC_FALSE));
  const double elapsed = seconds() - t0;
  if (s.gradient) PetscCall(VecNorm(p.grad, NORM_2, &gnorm));
  PetscCall(RunFileWrite(p, History(), nullptr, 0, s.gradient ? Content::run_with_gradient : Content::run, s.output.file));
  PetscCall(PetscPrintf(comm, "risk %.10e%s, %.3f s, wrote %s\n", p.risk,
                        s.gradient ? (", |g| " + std::to_string(gnorm)).c_str() : "", elapsed, s.output.file.c_str()));
  Summary sum;
  sum.add("command", std::string("forward")).add("risk", p.risk);
  if (s.gradient) sum.add("grad_norm", (double)gnorm);
  sum.add("seconds", elapsed).add("ranks", (long long)p.grid.size).add("file", s.output.file);
  PetscCall(sum.print(comm));
  PetscCall(ProblemDestroy(&p));
  PetscCall(TrajectoryDestroy(&trajectory));
  PetscFunctionReturn(0);
}

} // namespace mft
