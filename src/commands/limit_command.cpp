// mft limit: the mean-field reference x(1), p(0) for the probe tokens of the
// data settings (with --output.trajectory, x(s) and p(s) at S + 1 depths).
#include "mft/commands/commands.hpp"
#include "mft/flow/fluctuation.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/files/data.hpp"
#include "mft/flow/limit.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/settings_files.hpp"

#include <cmath>

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
  std::vector<ResultArray> arrays = {{"/limit/tokens", {M, N, d}, r.tokens.data()},
                                     {"/limit/adjoint", {M, N, d}, r.adjoint.data()}};
  std::vector<std::pair<std::string, std::string>> attributes = {{"limit.steps", std::to_string(r.steps)},
                                                                  {"limit.rejected", std::to_string(r.rejected)}};
  FluctuationResult law;
  std::vector<double> columns[3];
  double law_seconds = 0;
  if (s.limit.fluctuation) {
    const double t1 = seconds();
    PetscCall(LimitFluctuation(comm, s, &law, ls.scheme.adaptive ? &r.tokens : nullptr)); // X(1): this run's
    law_seconds = seconds() - t1;
    for (PetscInt m = 0; m < law.M; ++m) { // E, F and the standard error of F, per sequence
      columns[0].push_back(std::sqrt(law.euler2[m]));
      columns[1].push_back(std::sqrt(law.fluctuation2[m]));
      columns[2].push_back(law.fluctuation2_se[m] / (2 * std::sqrt(law.fluctuation2[m])));
    }
    arrays.push_back({"/fluctuation/euler_err", {M}, columns[0].data()});
    arrays.push_back({"/fluctuation/fluctuation", {M}, columns[1].data()});
    arrays.push_back({"/fluctuation/fluctuation_stderr", {M}, columns[2].data()});
    attributes.insert(attributes.end(), {{"fluctuation.err_predicted", study::num(law.predicted(s.model.H))},
                                         {"fluctuation.err_predicted_stderr", study::num(law.predicted_se(s.model.H))},
                                         {"fluctuation.probes", std::to_string(law.probes)},
                                         {"fluctuation.heads", std::to_string(law.heads)}});
  }
  PetscCall(ResultFileWrite(comm, ls, arrays, attributes, ls.output.file, s.output.trajectory ? &trajectory : nullptr));
  PetscCall(TrajectoryDestroy(&trajectory));
  PetscCall(PetscPrintf(comm, "%" PetscInt_FMT " steps (%" PetscInt_FMT " rejected), %.2f s; wrote %s\n", r.steps,
                        r.rejected, elapsed, ls.output.file.c_str()));
  Summary sum;
  sum.add("command", std::string("limit")).add("heads", (long long)ls.model.H).add("scheme", std::string(to_string(s.limit.scheme)));
  sum.add("steps", (long long)r.steps).add("rejected", (long long)r.rejected).add("seconds", elapsed);
  if (s.limit.fluctuation) {
    double e2 = 0, f2 = 0;
    for (PetscInt m = 0; m < law.M; ++m) e2 += law.euler2[m] / (double)law.M, f2 += law.fluctuation2[m] / (double)law.M;
    PetscCall(PetscPrintf(comm,
                          "error's law of the %" PetscInt_FMT " x %" PetscInt_FMT " model: Euler error %.6e, "
                          "fluctuation %.6e, err_predicted %.6e +- %.2e (%" PetscInt_FMT " %s probe vectors, %"
                          PetscInt_FMT " heads; %.2f s)\n",
                          s.model.L, s.model.H, std::sqrt(e2), std::sqrt(f2), law.predicted(s.model.H),
                          law.predicted_se(s.model.H), law.probes, law.exact ? "unit" : "Gaussian", law.heads,
                          law_seconds));
    sum.add("L", (long long)s.model.L).add("H", (long long)s.model.H).add("euler_err", std::sqrt(e2));
    sum.add("fluctuation", std::sqrt(f2)).add("err_predicted", law.predicted(s.model.H));
    sum.add("err_predicted_stderr", law.predicted_se(s.model.H)).add("fluctuation_seconds", law_seconds);
  }
  sum.add("file", ls.output.file);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
