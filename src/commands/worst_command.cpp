// mft worst: the input of largest error of a model (--params.file) against
// references (--worst.references), every token in the ball |x_i| <=
// worst.radius (worst.hpp). Writes /worst/tokens, /worst/output,
// /worst/reference_output (and /worst/heldout_output) in the run-file layout,
// the objective along the search, and one summary line with "worst_err": a
// lower bound on the supremum, since the search may miss the maximum.
#include "mft/commands/commands.hpp"
#include "mft/settings/error.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/worst/worst.hpp"
#include "mft/files/settings_files.hpp"
#include "mft/settings/options.hpp"

#include <algorithm>

namespace mft {

namespace {

// "no MLP sublayers", or their activation and exponents a', c'.
std::string MlpDescription(const ModelSettings &m) {
  if (!m.mlp()) return "no MLP sublayers";
  return std::string(to_string(m.mlp_activation)) + " MLP sublayers of a' = " + format_real(m.mlp_depth_exponent) +
         ", c' = " + format_real(m.mlp_width_exponent);
}

// A reference's settings: the command's, with the model and loss recorded in
// its file (as --params.file); another d, head kind or loss is refused.
PetscErrorCode ReferenceSettings(MPI_Comm comm, const std::vector<std::string> &args, const Settings &model,
                                 const std::string &path, Settings *rs) {
  std::vector<std::string> with = args;
  with.insert(with.end(), {"--params.file", path});
  PetscBool help;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "worst", with, rs, &help));
  PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
  const PetscErrorCode err = SettingsFromFiles(comm, "worst", with, rs);
  PetscCall(PetscPopErrorHandler());
  PetscCheck(!err, comm, PETSC_ERR_FILE_UNEXPECTED, "worst.references: %s", captured_error());
  const ModelSettings &a = model.model, &b = rs->model;
  PetscCheck(a.d == b.d && a.head_kind == b.head_kind && model.loss.kind == rs->loss.kind, comm, PETSC_ERR_USER_INPUT,
             "worst.references: %s is a %s model of d = %" PetscInt_FMT " with the %s loss, params.file %s a %s model "
             "of d = %" PetscInt_FMT " with the %s loss: a reference must share d, head kind and loss",
             path.c_str(), to_string(b.head_kind), b.d, to_string(rs->loss.kind), model.params_file.c_str(),
             to_string(a.head_kind), a.d, to_string(model.loss.kind));
  PetscCheck(a.causal == b.causal && a.norm == b.norm, comm, PETSC_ERR_USER_INPUT,
             "worst.references: %s is a model with model.causal = %s and model.norm = %s, params.file %s one with "
             "model.causal = %s and model.norm = %s: a reference must be the same model in the limit",
             path.c_str(), b.causal ? "true" : "false", to_string(b.norm), model.params_file.c_str(),
             a.causal ? "true" : "false", to_string(a.norm));
  PetscCheck(a.depth_exponent == b.depth_exponent && a.head_exponent == b.head_exponent, comm, PETSC_ERR_USER_INPUT,
             "worst.references: %s is a model with exponents a = %s, c = %s, params.file %s one with a = %s, c = %s: "
             "a reference must be the same model in the limit",
             path.c_str(), format_real(b.depth_exponent).c_str(), format_real(b.head_exponent).c_str(),
             model.params_file.c_str(), format_real(a.depth_exponent).c_str(), format_real(a.head_exponent).c_str());
  PetscCheck(a.mlp() == b.mlp() && (!a.mlp() || (a.mlp_activation == b.mlp_activation &&
                                                  a.mlp_depth_exponent == b.mlp_depth_exponent &&
                                                  a.mlp_width_exponent == b.mlp_width_exponent)),
             comm, PETSC_ERR_USER_INPUT,
             "worst.references: %s is a model with %s, params.file %s one with %s: a reference must be the same model "
             "in the limit", path.c_str(), MlpDescription(b).c_str(), model.params_file.c_str(),
             MlpDescription(a).c_str());
  PetscFunctionReturn(0);
}

// A measure search without a start starts from the search of a sequence of
// as many tokens (a sequence of K tokens is a measure of K equal atoms), so
// that it never reports less than that search: the search of K tokens, with
// the same budget, first.
PetscErrorCode SequenceFirst(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &references,
                             WorstInput *start) {
  Settings seq = s;
  std::vector<WorstResult> found;
  PetscFunctionBeginUser;
  seq.worst.steps = WorstSteps(s); // the measure search's budget
  seq.worst.atoms = 0, seq.data.N = s.worst.atoms, seq.worst.check = false;
  PetscCall(PetscPrintf(comm, "mft worst: first the search of sequences of %" PetscInt_FMT " tokens, whose input "
                              "starts the measure search\n", seq.data.N));
  PetscCall(WorstSearch(comm, seq, {WorstSide{seq, seq.params_file, nullptr}}, references, "worst (sequence): ", &found,
                        {WorstInput{}}));
  PetscCall(PetscPrintf(comm, "worst (sequence): err %.6e against the search references\n", found[0].raw));
  *start = WorstInput{found[0].tokens, {}};
  PetscFunctionReturn(0);
}

PetscErrorCode WorstFileWrite(MPI_Comm comm, const Settings &s, const WorstResult &r) {
  const unsigned long long N = r.N, d = r.d, S = r.starts;
  std::vector<ResultArray> arrays = {{r.measure ? "/worst/atoms" : "/worst/tokens", {1, N, d}, r.tokens.data()},
                                     {"/worst/output", {1, N, d}, r.output.data()},
                                     {"/worst/reference_output", {1, N, d}, r.reference_output.data()},
                                     {"/worst/objective", {r.objective.size()}, r.objective.data()},
                                     {"/worst/start_err", {S}, r.start_err.data()},
                                     {"/worst/heldout_e2", {r.heldout_e2.size()}, r.heldout_e2.data()}};
  if (!r.heldout_output.empty()) arrays.push_back({"/worst/heldout_output", {1, N, d}, r.heldout_output.data()});
  if (r.measure) arrays.push_back({"/worst/weights", {1, N}, r.weights.data()});
  auto text = [](double v) { return study::num(v); };
  PetscFunctionBeginUser;
  PetscCall(ResultFileWrite(comm, s, arrays,
                            {{"worst.err", text(r.err)},
                             {"worst.err_raw", text(r.raw)},
                             {"worst.err_heldout_raw", text(r.heldout_raw)},
                             {"worst.input", r.measure ? "measure" : "sequence"},
                             {"worst.err_collapsed", text(r.collapsed)},
                             {"worst.check_raw", text(r.check_raw)},
                             {"worst.check_gain", text(r.check_gain)},
                             {"worst.floor", text(r.floor)},
                             {"worst.estimator", r.estimator},
                             {"worst.best_start", r.start_names[r.best]},
                             {"worst.search_references", std::to_string(r.search_references)},
                             {"worst.bound", "a lower bound on the supremum over the ball (the search may miss it)"}},
                            s.output.file));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode CommandWorst(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  std::vector<WorstResult> found;
  PetscMPIInt ranks;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &ranks));
  PetscCall(SettingsParse(comm, "worst", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(InputsVerify(comm, s)); // the files mft wrote, whole, before any work
  PetscCheck(!s.params_file.empty(), comm, PETSC_ERR_USER_INPUT, "mft worst needs the model: give --params.file RUN.h5");
  const auto paths = words(s.worst.references);
  PetscCheck(!paths.empty(), comm, PETSC_ERR_USER_INPUT,
             "mft worst needs references: give --worst.references \"R1.h5 R2.h5 ...\"");
  for (const std::string &f : words(s.study.probes))
    PetscCheck(std::find(kFamilies.begin(), kFamilies.end(), f) != kFamilies.end(), comm, PETSC_ERR_USER_INPUT,
               "study.probes: '%s' is not a token family", f.c_str());
  PetscCall(SettingsFromFiles(comm, "worst", args, &s));
  std::vector<WorstSide> references(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    PetscCall(ReferenceSettings(comm, args, s, paths[i], &references[i].settings));
    references[i].file = paths[i];
  }
  std::vector<WorstInput> from(1);
  if (!s.worst.start.empty()) PetscCall(WorstInputRead(comm, s.worst.start, s.model.d, &from[0]));
  else if (s.worst.atoms > 0) PetscCall(SequenceFirst(comm, s, references, &from[0]));
  const std::string what = s.worst.atoms > 0 ? "measures of " + std::to_string(s.worst.atoms) + " weighted atoms"
                                             : "N = " + std::to_string(s.data.N) + " tokens";
  const std::string where = s.model.norm == TokenNorm::sphere ? "on the unit sphere"
                                                              : "in the ball of radius " + study::num(s.worst.radius);
  PetscCall(PetscPrintf(comm,
                        "mft worst: %s model %" PetscInt_FMT " x %" PetscInt_FMT " (%s) against %zu references, "
                        "%s %s in R^%" PetscInt_FMT ", %" PetscInt_FMT " random starts, the probe families and the "
                        "collapsed input%s, %" PetscInt_FMT " iterations\n",
                        to_string(s.model.head_kind), s.model.L, s.model.H, s.params_file.c_str(), paths.size(),
                        what.c_str(), where.c_str(), s.model.d, s.worst.starts,
                        s.worst.start.empty() ? "" : (", " + s.worst.start).c_str(), WorstSteps(s)));
  PetscCall(WorstSearch(comm, s, {WorstSide{s, s.params_file, nullptr}}, references, "worst: ", &found, from));
  const WorstResult &r = found[0];
  PetscCall(WorstFileWrite(comm, s, r));
  PetscCall(PetscPrintf(comm,
                        "worst input: start %s, err %.6e (%s; against the search references %.6e, best start before "
                        "the search %.6e, collapsed input %.6e), a lower bound on the supremum; %.2f s, wrote %s\n",
                        r.start_names[r.best].c_str(), r.err, r.estimator.c_str(), r.raw, r.initial, r.collapsed,
                        r.seconds, s.output.file.c_str()));
  if (s.worst.check)
    PetscCall(PetscPrintf(comm, "worst.check: twice the starts and steps reach %.6e against the search references, "
                                "a gain of %.3g%%\n", r.check_raw, 100 * r.check_gain));
  Summary sum;
  sum.add("command", std::string("worst")).add("input", std::string(r.measure ? "measure" : "sequence"));
  sum.add("worst_err", r.err).add("estimator", r.estimator);
  sum.add("worst_err_raw", r.raw).add("worst_err_heldout_raw", r.heldout_raw).add("floor", r.floor);
  sum.add("initial_err", r.initial).add("collapsed_err", r.collapsed).add("bound", std::string("lower"));
  if (s.worst.check) sum.add("check_err_raw", r.check_raw).add("check_gain", r.check_gain);
  sum.add("N", (long long)r.N);
  sum.add("starts", (long long)r.starts).add("iterations", (long long)r.iterations);
  sum.add("evaluations", (long long)r.evaluations).add("search_references", (long long)r.search_references);
  sum.add("heldout_references", (long long)r.heldout_references).add("seconds", r.seconds);
  sum.add("ranks", (long long)ranks).add("file", s.output.file);
  PetscCall(sum.print(comm));
  PetscFunctionReturn(0);
}

} // namespace mft
