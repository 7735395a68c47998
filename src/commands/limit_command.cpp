// mft limit: the mean-field reference x(1), p(0) for the probe tokens of the
// data settings (with --output.trajectory, x(s) and p(s) at S + 1 depths).
#include "mft/commands/commands.hpp"
#include "mft/files/data.hpp"
#include "mft/flow/limit.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/settings_files.hpp"

namespace mft {

PetscErrorCode CommandLimit(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  LimitResult r;
  Trajectory trajectory;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "limit", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(SettingsFromFiles(comm, "limit", args, &s)); // a run file as probes: its model settings
  if (!s.data.file.empty()) PetscCall(DataFileConform(comm, &s)); // the probes' sizes, for the header
  const Settings ls = LimitSettingsFor(s);
  PetscCall(PetscPrintf(comm, "mft limit: ensemble of %" PetscInt_FMT " %s heads shared by every depth, %s, d=%" PetscInt_FMT
                              " k=%" PetscInt_FMT " | probes: M=%" PetscInt_FMT " N=%" PetscInt_FMT " %s\n",
                        ls.model.H, to_string(ls.model.head_kind),
                        ls.scheme.adaptive ? ("TSRK 5dp, rtol " + std::to_string(ls.scheme.rtol)).c_str()
                                           : (std::to_string(ls.model.L) + " Euler steps").c_str(),
                        ls.model.d, ls.model.k, ls.data.M, ls.data.N, ls.data.family.c_str()));
  const double t0 = seconds();
  PetscCall(LimitSolve(comm, ls, &r, nullptr, &trajectory));
  const double elapsed = seconds() - t0;
  const unsigned long long M = ls.data.M, N = ls.data.N, d = ls.model.d;
  PetscCall(ResultFileWrite(comm, ls,
                            {{"/limit/tokens", {M, N, d}, r.tokens.data()}, {"/limit/adjoint", {M, N, d}, r.adjoint.data()}},
                            {{"limit.steps", std::to_string(r.steps)}, {"limit.rejected", std::to_string(r.rejected)}},
                            ls.output.file, s.output.trajectory ? &trajectory : nullptr));
  PetscCall(TrajectoryDestroy(&trajectory));
  PetscCall(PetscPrintf(comm, "%" PetscInt_FMT " steps (%" PetscInt_FMT " rejected), %.2f s; wrote %s\n", r.steps,
                        r.rejected, elapsed, ls.output.file.c_str()));
  Summary sum;
  sum.add("command", std::string("limit")).add("heads", (long long)ls.model.H).add("scheme", std::string(to_string(s.limit.scheme)));
  sum.add("steps", (long long)r.steps).add("rejected", (long long)r.rejected).add("seconds", elapsed);
  sum.add("file", ls.output.file);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
