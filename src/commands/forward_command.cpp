// mft forward: the L-layer forward pass (and with --gradient the adjoint) at
// the initial heads, or at those of --params.file (a trained model evaluated
// on any data of its d); writes the run file (with --output.trajectory, the
// tokens at S + 1 depths too) and one summary line.
#include "mft/commands/commands.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/files/settings_files.hpp"
#include "mft/flow/samples.hpp"
#include "mft/settings/options.hpp"
#include "mft/statistics/expansion.hpp"
#include "mft/statistics/moments.hpp"

#include <algorithm>
#include <cmath>

namespace mft {

// With output.trajectory, the samples' interaction energy at its depths
// (mean, standard error, the means' covariance across depths) and its
// exponential rate (DepthRateFit, generalised least squares), or (`log`)
// their mean log-distance and the slope of its line: into the file's arrays
// and attributes under `name` (energy_rate, energy_rate_lo, energy_rate_hi,
// energy_chi2, energy_p_value, energy_dof, energy_decided; log_distance_rate
// ... alike), one line and the summary's keys. The vectors hold what the
// arrays point to.
struct EnergyFigures {
  std::string name; // "energy" or "log_distance"
  std::vector<double> depth, mean, cov, se;
  DepthRate rate;
};

static PetscErrorCode EnergyFiguresOf(MPI_Comm comm, const Samples &r, bool log, EnergyFigures *f,
                                      std::vector<ResultArray> *arrays,
                                      std::vector<std::pair<std::string, std::string>> *attributes) {
  PetscFunctionBeginUser;
  f->name = log ? "log_distance" : "energy";
  if (!r.depths) PetscFunctionReturn(0);
  PetscCall(MeansAndCovariance(comm, log ? r.log_distance : r.energy, (size_t)r.depths, r.S, &f->mean, &f->cov));
  if (log && !std::isfinite(f->mean.front())) PetscFunctionReturn(0); // N = 1: no pairs
  const unsigned long long K = f->mean.size();
  for (unsigned long long k = 0; k < K; ++k)
    f->depth.push_back((double)k / (double)(K - 1)), f->se.push_back(std::sqrt(f->cov[k * K + k]));
  f->rate = DepthRateFit(f->depth, f->mean, f->cov, !log);
  arrays->push_back({"/output/" + f->name + "_depth", {K}, f->depth.data()});
  arrays->push_back({"/output/" + f->name + "_mean", {K}, f->mean.data()});
  arrays->push_back({"/output/" + f->name + "_stderr", {K}, f->se.data()});
  arrays->push_back({"/output/" + f->name + "_covariance", {K, K}, f->cov.data()});
  const DepthRate &e = f->rate;
  for (auto kv : std::vector<std::pair<std::string, double>>{{"_rate", e.rate}, {"_rate_lo", e.lo}, {"_rate_hi", e.hi},
                                                            {"_chi2", e.chi2}, {"_p_value", e.p_value}})
    attributes->emplace_back(f->name + kv.first, format_real(kv.second));
  attributes->emplace_back(f->name + "_dof", std::to_string(e.dof));
  attributes->emplace_back(f->name + "_decided", e.decided ? "true" : "false");
  PetscCall(PetscPrintf(comm,
                        "%s(0) %.6e, (1) %.6e +- %.2e; %s: lambda = %.4g [%.4g, %.4g], chi^2 %.3g on %d (p-value "
                        "%.3g)%s\n",
                        log ? "mean log-distance D" : "interaction energy E", f->mean.front(), f->mean.back(),
                        f->se.back(), log ? "its line D = D0 - lambda s" : "rate of E = E0 e^(-lambda s)", e.rate, e.lo,
                        e.hi, e.chi2, e.dof, e.p_value, e.decided ? ", decided" : ", not decided"));
  PetscFunctionReturn(0);
}

// --init.samples S: S initialisations of the model, their x(1) and the Gram
// means of every probe sequence (with output.trajectory, the interaction
// energy along depth); one summary line.
static PetscErrorCode ForwardSamples(MPI_Comm comm, const Settings &s) {
  Samples r;
  EnergyFigures energy[2]; // the energy, the mean log-distance
  PetscFunctionBeginUser;
  PetscCheck(s.params_file.empty() && !s.gradient, comm, PETSC_ERR_USER_INPUT,
             "init.samples = %" PetscInt_FMT " draws the heads anew for every sample: it takes no params.file or "
             "--gradient", s.init.samples);
  PetscCall(TrajectoryCheck(comm, s, false));
  PetscMPIInt size;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscPrintf(comm,
                        "mft forward: %" PetscInt_FMT " samples of the %" PetscInt_FMT " x %" PetscInt_FMT
                        " %s model (a = %s, c = %s), seeds %llu ..., on %d rank(s) | probes: M=%" PetscInt_FMT
                        " N=%" PetscInt_FMT " d=%" PetscInt_FMT "\n",
                        s.init.samples, s.model.L, s.model.H, to_string(s.model.head_kind),
                        format_real(s.model.depth_exponent).c_str(), format_real(s.model.head_exponent).c_str(), (unsigned long long)s.init.seed, size, s.data.M, s.data.N, s.model.d));
  PetscCall(SamplesForward(comm, s, s.init.samples, &r));
  const std::vector<double> each = SamplesMoved(r);
  std::vector<double> mean, var;
  PetscInt overflowed = (PetscInt)std::count_if(each.begin(), each.end(), [](double x) { return !std::isfinite(x); });
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &overflowed, 1, MPIU_INT, MPI_SUM, comm));
  PetscCall(MeansAndCovariance(comm, each, 1, r.S, &mean, &var));
  const double moved = mean[0], moved_se = std::sqrt(var[0]);
  const double uniform = SamplesMovedAtUniformAttention(s, r);
  const unsigned long long S = r.S, M = r.M, N = r.N, d = r.d;
  std::vector<ResultArray> arrays = {{"/data/tokens", {M, N, d}, r.inputs.data()},
                                     {"/output/gram_mean", {M, N, N}, r.gram_mean.data()},
                                     {"/output/gram_stderr", {M, N, N}, r.gram_stderr.data()}};
  if (s.output.samples) arrays.push_back({"/output/samples", {S, M, N, d}, r.tokens.data(), r.block});
  std::vector<std::pair<std::string, std::string>> attributes = {
      {"samples", std::to_string(S)}, {"moved", format_real(moved)}, {"moved_stderr", format_real(moved_se)}};
  if (std::isfinite(uniform)) attributes.emplace_back("moved_closed_form", format_real(uniform));
  for (int log = 0; log < 2; ++log) PetscCall(EnergyFiguresOf(comm, r, log, &energy[log], &arrays, &attributes));
  PetscCall(ResultFileWrite(comm, s, arrays, attributes, s.output.file));
  double trace = 0; // E (1/N) sum_i |x_i(1)|^2, over the probe sequences
  for (unsigned long long m = 0; m < M; ++m)
    for (unsigned long long i = 0; i < N; ++i) trace += r.gram_mean[(m * N + i) * N + i] / (double)(M * N);
  const double rate = (double)S / r.seconds;
  const std::string closed = std::isfinite(uniform) ? " (closed form at beta = 0: " + format_real(uniform) + ")" : "";
  PetscCall(PetscPrintf(comm, "%llu samples in %.3f s (%.1f a second); mean |x_i(1)|^2 %.6e; mean |x_i(1) - x_i(0)|^2 "
                        "%.6e +- %.2e%s; wrote %s\n", S, r.seconds, rate, trace, moved, moved_se, closed.c_str(),
                        s.output.file.c_str()));
  Summary sum;
  sum.add("command", std::string("forward")).add("samples", (long long)S).add("mean_square", trace);
  sum.add("moved", moved).add("moved_stderr", moved_se);
  if (std::isfinite(uniform)) sum.add("moved_closed_form", uniform);
  for (const EnergyFigures &e : energy)
    if (!e.depth.empty())
      sum.add(e.name + "_rate", e.rate.rate).add(e.name + "_rate_lo", e.rate.lo).add(e.name + "_rate_hi", e.rate.hi)
          .add(e.name + "_p_value", e.rate.p_value);
  sum.add("seconds", r.seconds).add("samples_per_second", rate).add("ranks", (long long)size);
  sum.add("file", s.output.file);
  PetscCall(sum.print(comm));
  PetscCheck(!overflowed, comm, PETSC_ERR_NOT_CONVERGED,
             "%" PetscInt_FMT " of %llu samples overflowed (their tokens are not finite; %s keeps them): the moments "
             "are NaN (lower the heads' scale or model.beta)", overflowed, S, s.output.file.c_str());
  PetscFunctionReturn(0);
}

PetscErrorCode CommandForward(MPI_Comm comm, const std::vector<std::string> &args, int *status) {
  Settings s;
  PetscBool help;
  Problem p;
  Trajectory trajectory;
  PetscReal gnorm = 0;
  PetscFunctionBeginUser;
  PetscCall(SettingsParse(comm, "forward", args, &s, &help));
  if (help) PetscFunctionReturn(0);
  PetscCall(InputsVerify(comm, s)); // the files mft wrote, whole, before any work
  PetscCall(SettingsFromFiles(comm, "forward", args, &s));
  if (s.init.samples > 0) {
    PetscCall(ForwardSamples(comm, s));
    PetscFunctionReturn(0);
  }
  PetscCall(ProblemCreate(comm, s, &p));
  PetscCall(ReportHeader(p));
  if (!s.params_file.empty()) PetscCall(RunFileReadParams(s.params_file, &p)); // a trained model on any data
  PetscCall(ProblemRecordTrajectory(&p, &trajectory));
  const double t0 = seconds();
  PetscCall(ProblemEvaluate(&p, s.gradient ? PETSC_TRUE : PETSC_FALSE));
  const double elapsed = seconds() - t0;
  PetscCheck(std::isfinite(p.risk), comm, PETSC_ERR_NOT_CONVERGED,
             "the risk is not finite (%s): the forward pass overflowed (lower the heads' scale or model.beta)",
             std::isnan(p.risk) ? "NaN" : "Inf");
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
