// mft limit: the mean-field reference x(1), p(0) for the probe tokens of the
// data settings (with --output.trajectory, x(s) and p(s) at S + 1 depths).
#include "mft/commands/commands.hpp"
#include "mft/flow/fluctuation.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/flow/data.hpp"
#include "mft/flow/limit.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/settings_files.hpp"
#include "mft/settings/options.hpp"

#include <cmath>

namespace mft {

// E (1/N) sum_i |x_i(1)|^2 over the probe sequences, from Gram means (M, N, N).
static double MeanSquare(const std::vector<double> &gram, PetscInt M, PetscInt N) {
  double t = 0;
  for (PetscInt m = 0; m < M; ++m)
    for (PetscInt i = 0; i < N; ++i) t += gram[(m * N + i) * N + i] / (double)(M * N);
  return t;
}

// a = c = 1/2: the SDE's paths and their Gram means (limit.hpp, LimitPathsSolve).
static PetscErrorCode LimitDiffusive(MPI_Comm comm, const Settings &s) {
  LimitPaths r;
  PetscFunctionBeginUser;
  PetscCheck(!s.limit.fluctuation, comm, PETSC_ERR_USER_INPUT,
             "limit.fluctuation is the error's law of the mean-field (a = c = 1) model; the diffusive model is "
             "compared with its limit in law (mft forward --init.samples against these paths)");
  const PetscInt n = s.limit.steps;
  PetscCall(PetscPrintf(comm,
                        "mft limit: the diffusive SDE (a = c = 1/2), %" PetscInt_FMT " paths, weak Euler scheme of %"
                        PetscInt_FMT "%s steps, %" PetscInt_FMT " fresh heads a step, sigma^2 = %s | probes: M=%"
                        PetscInt_FMT " N=%" PetscInt_FMT " d=%" PetscInt_FMT "\n",
                        s.limit.paths, n, s.limit.richardson ? (" and " + std::to_string(2 * n)).c_str() : "",
                        s.limit.step_heads, format_real(ValueVariance(s)).c_str(), s.data.M, s.data.N, s.model.d));
  const double t0 = seconds();
  PetscCall(LimitPathsSolve(comm, s, &r));
  const double elapsed = seconds() - t0;
  const unsigned long long S = r.fine.S, M = r.fine.M, N = r.fine.N, d = r.fine.d;
  std::vector<ResultArray> arrays = {{"/data/tokens", {M, N, d}, r.fine.inputs.data()},
                                     {"/limit/gram_mean", {M, N, N}, r.gram_mean.data()},
                                     {"/limit/gram_stderr", {M, N, N}, r.gram_stderr.data()}};
  if (s.output.samples) arrays.push_back({"/limit/samples", {S, M, N, d}, r.fine.tokens.data(), r.fine.block});
  if (s.output.samples && s.limit.richardson)
    arrays.push_back({"/limit/samples_coarse", {S, M, N, d}, r.coarse.tokens.data(), r.coarse.block});
  const PetscInt fine_steps = s.limit.richardson ? 2 * n : n;
  PetscCall(ResultFileWrite(comm, s, arrays,
                            {{"limit.regime", "diffusive"}, {"limit.fine_steps", std::to_string(fine_steps)},
                             {"limit.pair", s.limit.richardson ? to_string(s.limit.coupling) : "none"}},
                            s.output.file));
  const double square = MeanSquare(r.gram_mean, r.fine.M, r.fine.N);
  PetscCall(PetscPrintf(comm, "%llu paths, %.2f s; E |x_i(1)|^2 %.6e%s; wrote %s\n", S, elapsed, square,
                        s.limit.richardson ? " (extrapolated from n and 2n steps)" : "", s.output.file.c_str()));
  Summary sum;
  sum.add("command", std::string("limit")).add("regime", std::string("diffusive")).add("paths", (long long)S);
  sum.add("steps", (long long)n).add("fine_steps", (long long)fine_steps).add("mean_square", square);
  sum.add("seconds", elapsed).add("file", s.output.file);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

// The error's law of the L x H model, printed and in the summary.
static PetscErrorCode LawSummary(MPI_Comm comm, const Settings &s, const FluctuationResult &law, double seconds,
                                 Summary *sum) {
  double e2 = 0, f2 = 0;
  PetscFunctionBeginUser;
  for (PetscInt m = 0; m < law.M; ++m) e2 += law.euler2[m] / (double)law.M, f2 += law.fluctuation2[m] / (double)law.M;
  PetscCall(PetscPrintf(comm,
                        "error's law of the %" PetscInt_FMT " x %" PetscInt_FMT " model: Euler error %.6e, "
                        "fluctuation %.6e, err_predicted %.6e +- %.2e (%" PetscInt_FMT " %s probe vectors, %"
                        PetscInt_FMT " heads; %.2f s)\n",
                        s.model.L, s.model.H, std::sqrt(e2), std::sqrt(f2), law.predicted(s.model.H),
                        law.predicted_se(s.model.H), law.probes, law.exact ? "unit" : "Gaussian", law.heads, seconds));
  sum->add("L", (long long)s.model.L).add("H", (long long)s.model.H).add("euler_err", std::sqrt(e2));
  sum->add("fluctuation", std::sqrt(f2)).add("err_predicted", law.predicted(s.model.H));
  sum->add("err_predicted_stderr", law.predicted_se(s.model.H)).add("fluctuation_seconds", seconds);
  PetscFunctionReturn(0);
}

PetscErrorCode CommandLimit(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  LimitResult r;
  Trajectory trajectory;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "limit", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(InputsVerify(comm, s)); // the files mft wrote, whole, before any work
  PetscCall(SettingsFromFiles(comm, "limit", args, &s)); // a run file as probes: its model settings
  if (!s.data.file.empty()) PetscCall(DataFileConform(comm, &s)); // the probes' sizes, for the header
  if (!s.model.mean_field()) {
    PetscCall(LimitDiffusive(comm, s));
    PetscFunctionReturn(0);
  }
  if (s.limit.fluctuation) PetscCall(FluctuationPriceCheck(comm, s)); // before the limit's own solve
  const Settings ls = LimitSettingsFor(s);
  PetscCall(PetscPrintf(comm, "mft limit: ensemble of %" PetscInt_FMT " %s heads shared by every depth, %s, d=%" PetscInt_FMT
                              " k=%s | probes: M=%" PetscInt_FMT " N=%" PetscInt_FMT " %s\n",
                        ls.model.H, to_string(ls.model.head_kind),
                        ls.scheme.adaptive ? ("TSRK 5dp, rtol " + std::to_string(ls.scheme.rtol)).c_str()
                                           : (std::to_string(ls.model.L) + " Euler steps").c_str(),
                        ls.model.d, ls.model.infinite_head ? "inf" : std::to_string(ls.model.k).c_str(), ls.data.M, ls.data.N, ls.data.family.c_str()));
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
  if (s.limit.fluctuation) PetscCall(LawSummary(comm, s, law, law_seconds, &sum));
  // E A = 0 (and E w = 0): the ODE's velocity is zero
  const bool centred = s.init.centred(s.model.head_kind) && (!s.model.mlp() || s.init.mlp_w_mean == 0);
  if (centred)
    PetscCall(PetscPrintf(comm, "the heads are centred (value maps of mean zero): the limit velocity is zero and the "
                                "limit is the identity, x(1) = x(0); what moves the tokens here is the ensemble's "
                                "own sampling error (docs/model.md, 'Depth and head exponents')\n"));
  sum.add("limit_velocity", std::string(centred ? "zero" : "nonzero")).add("file", ls.output.file);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
