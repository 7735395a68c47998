// Studies in law of the diffusive regime (study_in_law.hpp): the samples of
// every cell and the limit's paths, their files, the comparison and the fits
// (the listing and its pricing: study_in_law_list.cpp).
#include "mft/studies/study_in_law.hpp"

#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/flow/limit.hpp"
#include "mft/flow/samples.hpp"
#include "mft/layout/grid.hpp"
#include "mft/layout/h5.hpp"
#include "mft/layout/random.hpp"
#include "mft/statistics/power_fit.hpp"
#include "mft/statistics/two_sample.hpp"
#include "mft/studies/study_levels.hpp"
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/studies/study_tables.hpp"
#include "mft/settings/error.hpp"
#include "mft/settings/options.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace mft {

using namespace study;

namespace {

// Cell (v, L, H)'s samples are drawn from seeds init.seed + CellSeeds(v, L, H) + s, far
// from the limit's paths (init.seed + p, p < 2 limit.paths) and from each other.
constexpr std::uint64_t kCellSeeds = 10000000;

// The samples of each probe set that a law file holds (the model's, or the
// limit's fine paths and, extrapolated, its coarse ones), each rank its block.
struct LawSamples {
  std::vector<Samples> fine, coarse;
  bool coupled = false; // coarse path p made of fine path p's heads
};

// This rank's block of the samples at `name` (x->S stays 0 when not there).
PetscErrorCode ReadSamples(h5::File &f, const std::string &name, Samples *x) {
  PetscMPIInt size, rank;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(f.comm, &size));
  PetscCallMPI(MPI_Comm_rank(f.comm, &rank));
  const auto dims = h5::Shape(f, name), in = h5::Shape(f, name.substr(0, name.rfind('/')) + "/inputs");
  if (dims.size() != 4 || in.size() != 3) PetscFunctionReturn(0);
  x->S = (PetscInt)dims[0], x->M = (PetscInt)dims[1], x->N = (PetscInt)dims[2], x->d = (PetscInt)dims[3];
  x->block = split(x->S, size, rank);
  x->tokens.resize(x->block.size() * dims[1] * dims[2] * dims[3]);
  x->inputs.resize(in[0] * in[1] * in[2]);
  PetscCall(h5::ReadRows(f, name, dims, 1, x->block, x->tokens.data()));
  PetscCall(h5::ReadRows(f, name.substr(0, name.rfind('/')) + "/inputs", in, 1, Range{0, x->M}, x->inputs.data()));
  PetscFunctionReturn(0);
}

// *kept: path holds the samples of every probe set of `names` (and coarse
// paths when `coarse`), verified, made with the settings `identity`. Every
// rank reads its block and all take one decision (whether the file exists
// too: rank 0 looks).
PetscErrorCode LawFileRead(MPI_Comm comm, const std::string &path, const std::vector<std::string> &names,
                           const std::string &identity, bool coarse, LawSamples *out, bool *kept) {
  struct stat st;
  std::string problem;
  PetscMPIInt rank;
  int exists = 0;
  PetscFunctionBeginUser;
  *kept = false;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) exists = stat(path.c_str(), &st) == 0;
  PetscCallMPI(MPI_Bcast(&exists, 1, MPI_INT, 0, comm));
  if (!exists) PetscFunctionReturn(0);
  out->fine.assign(names.size(), Samples()), out->coarse.assign(names.size(), Samples());
  auto read = [&](h5::File &f) -> PetscErrorCode {
    std::string id;
    if (!h5::ReadAttribute(f, "study.case_identity", &id) || id != identity) return (problem = "other settings"), 0;
    for (size_t k = 0; k < names.size(); ++k) {
      PetscCall(ReadSamples(f, "/probes/" + names[k] + "/samples", &out->fine[k]));
      if (coarse) PetscCall(ReadSamples(f, "/probes/" + names[k] + "/samples_coarse", &out->coarse[k]));
      if (out->fine[k].S == 0 || (coarse && out->coarse[k].S == 0)) problem = "incomplete";
    }
    return 0;
  };
  PetscCall(ReadVerified(path, read, &problem, comm));
  *kept = problem.empty();
  PetscFunctionReturn(0);
}

// The law of probe set k that x holds: its samples, or with coarse paths (the
// limit's) 2 fine - coarse.
Law LawOf(const LawSamples &x, size_t k) {
  return PathsLaw(x.fine[k], k < x.coarse.size() ? &x.coarse[k] : nullptr, x.coupled);
}

// Every probe set's law of x (LawOf), in order.
std::vector<Law> LawsOf(const LawSamples &x) {
  std::vector<Law> laws;
  for (size_t k = 0; k < x.fine.size(); ++k) laws.push_back(LawOf(x, k));
  return laws;
}

PetscErrorCode LawFileWrite(MPI_Comm comm, const Settings &cs, const std::string &path, const std::string &identity,
                            const std::vector<std::string> &names, const LawSamples &x) {
  std::vector<ResultArray> arrays;
  std::vector<std::vector<double>> grams(2 * names.size());
  PetscFunctionBeginUser;
  for (size_t k = 0; k < names.size(); ++k) {
    const Samples &f = x.fine[k];
    const unsigned long long S = f.S, M = f.M, N = f.N, d = f.d;
    const std::string at = "/probes/" + names[k];
    arrays.push_back({at + "/inputs", {M, N, d}, f.inputs.data()});
    arrays.push_back({at + "/samples", {S, M, N, d}, f.tokens.data(), f.block});
    if (k < x.coarse.size() && x.coarse[k].S > 0)
      arrays.push_back({at + "/samples_coarse", {(unsigned long long)x.coarse[k].S, M, N, d},
                        x.coarse[k].tokens.data(), x.coarse[k].block});
    PetscCall(GramOf(comm, LawOf(x, k), f.M, f.N, f.d, &grams[2 * k], &grams[2 * k + 1]));
  }
  for (size_t k = 0; k < names.size(); ++k) {
    const unsigned long long M = x.fine[k].M, N = x.fine[k].N;
    arrays.push_back({"/probes/" + names[k] + "/gram_mean", {M, N, N}, grams[2 * k].data()});
    arrays.push_back({"/probes/" + names[k] + "/gram_stderr", {M, N, N}, grams[2 * k + 1].data()});
  }
  PetscCall(ResultFileWrite(comm, cs, arrays, {{"study.case_identity", identity}}, path));
  PetscFunctionReturn(0);
}

// The limit's paths of variant v on every probe set: its file's, or solved
// and written.
PetscErrorCode LawLimit(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v,
                        LawSamples *out) {
  const std::vector<std::string> names = probe_names(s), variant = overrides(StudyVariants(s)[v]);
  const std::string path = s.study.dir + "/limit-v" + std::to_string(v) + ".h5";
  Settings cs;
  bool kept;
  PetscFunctionBeginUser;
  PetscCall(ProbeSettings(comm, args, s, variant, 0, &cs));
  const std::string identity = case_identity(cs) + " limit.paths=" + std::to_string(s.limit.paths);
  out->coupled = s.limit.richardson && s.limit.coupling != LimitCoupling::independent; // both in the identity
  PetscCall(LawFileRead(comm, path, names, identity, s.limit.richardson, out, &kept));
  if (kept) PetscFunctionReturn(0);
  out->fine.assign(names.size(), Samples()), out->coarse.assign(names.size(), Samples());
  for (size_t k = 0; k < names.size(); ++k) {
    LimitPaths paths;
    PetscCall(ProbeSettings(comm, args, s, variant, k, &cs));
    PetscCall(LimitPathsSolve(comm, cs, &paths));
    out->fine[k] = std::move(paths.fine), out->coarse[k] = std::move(paths.coarse);
  }
  PetscCall(LawFileWrite(comm, cs, path, identity, names, *out));
  PetscFunctionReturn(0);
}

// Cell L x H (x k, a study over k; "inf": the infinite head) of variant v,
// or its finite reference (`reference`: a file and seeds of its own): its S
// samples on every probe set (with a target, at least S), from its file or
// drawn and written.
PetscErrorCode LawCell(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v, PetscInt L,
                       PetscInt H, const std::string &k, PetscInt S, LawSamples *out, bool reference = false) {
  const std::vector<std::string> names = probe_names(s);
  std::vector<std::string> model = overrides(StudyVariants(s)[v]);
  const auto shape = StudyShapeOptions(s, L, H);
  model.insert(model.end(), shape.begin(), shape.end());
  if (!k.empty()) model.insert(model.end(), {"--model.k", k});
  const std::string path = s.study.dir + (reference ? "/reference-v" : "/samples-v") + std::to_string(v) + "-L" +
                           std::to_string(L) + "-H" + std::to_string(H) + (k.empty() ? "" : "-k" + k) + ".h5";
  const std::uint64_t first = CellSeeds(v, L, H, k.empty() ? 0 : k == "inf" ? -1 : std::stoll(k), reference);
  Settings cs;
  bool kept;
  PetscFunctionBeginUser;
  PetscCall(ProbeSettings(comm, args, s, model, 0, &cs));
  const std::string identity = case_identity(cs) + " first=" + std::to_string(first);
  PetscCall(LawFileRead(comm, path, names, identity, false, out, &kept));
  for (size_t k = 0; kept && k < out->fine.size(); ++k) // the file's count, the same on every rank
    kept = out->fine[k].S == S || (s.study.target > 0 && out->fine[k].S > S);
  if (kept) PetscFunctionReturn(0);
  out->fine.assign(names.size(), Samples()), out->coarse.clear();
  for (size_t k = 0; k < names.size(); ++k) {
    PetscCall(ProbeSettings(comm, args, s, model, k, &cs));
    PetscCall(SamplesForward(comm, cs, S, &out->fine[k], first));
  }
  PetscCall(LawFileWrite(comm, cs, path, identity, names, *out));
  PetscFunctionReturn(0);
}

// One cell's comparison with the limit, over every probe set.
struct CellLaw {
  PetscInt L = 0, H = 0, samples = 0;
  std::string k; // a study over k: the cell's
  std::string target; // with study.target: met, or why not
  LawGap law; // its gap to the limit
  double seconds = 0;
};

PetscErrorCode CompareCell(MPI_Comm comm, const std::vector<std::string> &names, const LawSamples &model,
                           const LawSamples &limit, CellLaw *c) {
  std::vector<Law> limits;
  PetscFunctionBeginUser;
  for (size_t k = 0; k < names.size(); ++k) limits.push_back(LawOf(limit, k));
  PetscCall(LawGapOf(comm, names, SamplesBlocks(model.fine), limits, SamplesBlocks(limit.fine), &c->law));
  PetscFunctionReturn(0);
}

// The limit's own error, the largest over probe sets: its steps (the coarse
// paths' Gram means against the fine ones; zero without the extrapolation,
// which has no second step count) and its sampling.
PetscErrorCode LimitError(MPI_Comm comm, const LawSamples &limit, double *steps, double *sampling) {
  PetscFunctionBeginUser;
  *steps = 0, *sampling = 0;
  for (size_t k = 0; k < limit.fine.size(); ++k) {
    const Samples &f = limit.fine[k];
    std::vector<double> mean, se, fine_mean, fine_se, coarse_mean, coarse_se;
    PetscCall(GramOf(comm, LawOf(limit, k), f.M, f.N, f.d, &mean, &se));
    std::vector<double> upper = mean;
    for (size_t e = 0; e < upper.size(); ++e) upper[e] += se[e];
    *sampling = std::max(*sampling, GramRelative(upper, mean, f.M, f.N));
    if (k >= limit.coarse.size() || limit.coarse[k].S == 0) continue;
    PetscCall(GramOf(comm, {SamplesSet(f)}, f.M, f.N, f.d, &fine_mean, &fine_se));
    PetscCall(GramOf(comm, {SamplesSet(limit.coarse[k])}, f.M, f.N, f.d, &coarse_mean, &coarse_se));
    *steps = std::max(*steps, GramRelative(coarse_mean, fine_mean, f.M, f.N));
  }
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyInLawCheck(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  PetscCheck(s.aggregate.empty(), comm, PETSC_ERR_USER_INPUT,
             "a study in law makes its tables as it runs: run it again (its files are kept) instead of --aggregate");
  for (const char *key : {"study.seeds", "study.references", "study.worst", "study.fluctuation", "study.probe_file",
                          "study.only"})
    PetscCheck(!s.is_explicit(key), comm, PETSC_ERR_USER_INPUT,
               "%s does not apply to a study in law (a = c = 0.5 at initialisation): every cell draws study.samples "
               "samples against limit.paths paths of the limit", key);
  const PetscInt most = s.study.target > 0 ? std::max(s.study.samples, s.study.max_samples > 0 ? s.study.max_samples
                                                                                              : 64 * s.study.samples)
                                           : s.study.samples;
  PetscCheck(most < (PetscInt)kCellSeeds && 2 * s.limit.paths < (PetscInt)kCellSeeds, comm, PETSC_ERR_USER_INPUT,
             "a study in law draws fewer than %llu samples a cell (study.samples, or study.max_samples with a "
             "target) and %llu paths", (unsigned long long)kCellSeeds, (unsigned long long)kCellSeeds / 2);
  PetscCheck(s.study.target > 0 || !s.is_explicit("study.max_samples"), comm, PETSC_ERR_USER_INPUT,
             "study.max_samples bounds the samples that study.target asks for: give a target, or study.samples alone");
  if (LawFiniteReference(s)) {
    PetscCheck(s.study.k.empty() && !s.study.levels, comm, PETSC_ERR_USER_INPUT,
               "study.reference_L and study.reference_H give a study in law a finite reference; %s compares with %s: "
               "give one or the other", s.study.levels ? "study.levels" : "a study over k (study.k)",
               s.study.levels ? "the limit" : "infinite heads");
    for (const char *key : {"limit.steps", "limit.step_heads", "limit.richardson", "limit.coupling"})
      PetscCheck(!s.is_explicit(key), comm, PETSC_ERR_USER_INPUT,
                 "%s does not apply to a study in law against a finite reference (study.reference_L x "
                 "study.reference_H, limit.paths samples of it): it draws no paths of the limit", key);
  }
  if (s.study.k.empty()) PetscFunctionReturn(0);
  PetscCheck(integers(s.study.L).size() == 1 && integers(s.study.H).size() == 1 && !s.study.levels, comm,
             PETSC_ERR_USER_INPUT,
             "a study over k (study.k) compares the L x H x k cells of one L and one H with the same model of infinite "
             "heads: give one study.L and one study.H (given '%s' and '%s'), and no study.levels",
             s.study.L.c_str(), s.study.H.c_str());
  PetscCheck(s.model.logit_exponent >= 0.5, comm, PETSC_ERR_USER_INPUT,
             "a study over k compares with infinite heads, which exist for model.logit_exponent 0.5 or above (given "
             "%s)", format_real(s.model.logit_exponent).c_str());
  PetscFunctionReturn(0);
}

namespace {

PetscErrorCode LawHeader(MPI_Comm comm, const Settings &s) {
  PetscFunctionBeginUser;
  if (!s.study.k.empty()) {
    PetscCall(PetscPrintf(comm,
                          "mft study in law over k: a = c = 1/2, g = %s, %zu variants, L = %s, H = %s, k in {%s}, %"
                          PetscInt_FMT " samples a cell against %" PetscInt_FMT " samples of the model of infinite "
                          "heads | probes: %zu sets of %" PetscInt_FMT " sequences | %s\n",
                          format_real(s.model.logit_exponent).c_str(), StudyVariants(s).size(), s.study.L.c_str(),
                          s.study.H.c_str(), s.study.k.c_str(), s.study.samples, s.limit.paths, probe_sets(s).size(),
                          s.study.probe_M, s.study.dir.c_str()));
    PetscFunctionReturn(0);
  }
  char reference[192];
  if (LawFiniteReference(s))
    snprintf(reference, sizeof reference, "samples of the finite reference, the %" PetscInt_FMT " x %" PetscInt_FMT
             " model (study.reference_L x study.reference_H)", s.study.reference_L, s.study.reference_H);
  else
    snprintf(reference, sizeof reference, "paths of the limit (%" PetscInt_FMT "%s steps, %" PetscInt_FMT
             " heads a step)", s.limit.steps, s.limit.richardson ? " and twice as many" : "", s.limit.step_heads);
  PetscCall(PetscPrintf(comm,
                        "mft study in law: a = c = 1/2, %zu variants, L in {%s}, H in {%s}, %" PetscInt_FMT
                        " samples a cell against %" PetscInt_FMT " %s | probes: %zu sets of %" PetscInt_FMT
                        " sequences | %s\n",
                        StudyVariants(s).size(), s.study.L.c_str(), s.study.H.c_str(), s.study.samples,
                        s.limit.paths, reference, probe_sets(s).size(), s.study.probe_M, s.study.dir.c_str()));
  PetscFunctionReturn(0);
}

// law.csv's columns, and the row of one cell (`reference`: what it is compared with).
const std::string kLawColumns = std::string("variant,L,H,samples,paths,err_law,err_law_lo,err_law_hi,err_law_floor,"
                                            "resolved,probe,sequence,") +
                                kEnergyColumns + ",limit_steps,limit_sampling,limit_clear,seconds,target,k,reference";
std::string LawRow(size_t v, const Settings &s, const CellLaw &c, double steps, double sampling,
                   const std::string &reference) {
  const bool clear = c.law.gap.resolved && std::max(steps, sampling) < c.law.gap.lo;
  std::vector<std::string> row = {std::to_string(v), std::to_string(c.L), std::to_string(c.H),
                                  std::to_string(c.samples), std::to_string(s.limit.paths), num(c.law.gap.err),
                                  num(c.law.gap.lo), num(c.law.gap.hi), num(c.law.gap.floor),
                                  c.law.gap.resolved ? "true" : "false", quoted(c.law.probe),
                                  std::to_string(c.law.gap.sequence)};
  for (const std::string &e : EnergyCells(c.law)) row.push_back(e);
  for (const std::string &e : {num(steps), num(sampling), std::string(clear ? "true" : "false"), num(c.seconds),
                               quoted(c.target), c.k, quoted(reference)})
    row.push_back(e);
  return csv(row);
}

// Cell L x H of variant v against the limit: its samples (study.samples;
// with study.target, the pilot, then as many as its interval says the
// target needs, S (h / target)^2 and 10% more, h its half-width, until met
// or study.max_samples), compared and printed.
PetscErrorCode LawCellCompared(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v,
                               const LawSamples &limit, CellLaw *c) {
  const std::vector<std::string> names = probe_names(s);
  const PetscInt most = s.study.max_samples > 0 ? s.study.max_samples : 64 * s.study.samples;
  const double t0 = seconds();
  PetscFunctionBeginUser;
  for (PetscInt S = s.study.samples, round = 0;; ++round) {
    LawSamples cell;
    PetscCall(LawCell(comm, args, s, v, c->L, c->H, c->k, S, &cell));
    PetscCall(CompareCell(comm, names, cell, limit, c));
    c->samples = cell.fine[0].S;
    if (s.study.target <= 0) break;
    // half^2 ~ a / S + b: a the model's share, b the limit's, which more samples do not shrink
    const double half = (c->law.gap.hi - c->law.gap.lo) / 2, want = std::pow(s.study.target / half, 2);
    const double a = c->law.gap.model_share, b = 1 - a, bound = half * std::sqrt(b);
    char said[192];
    snprintf(said, sizeof said, "met with %" PetscInt_FMT " samples", c->samples);
    const bool met = half <= s.study.target, limited = !met && b >= 0.9 * want;
    if (!met && (limited || c->samples >= most || round == 4))
      snprintf(said, sizeof said, "not met: half-width %.3g at %" PetscInt_FMT " samples (%s %.3g)", half,
               c->samples, limited ? "the limit's paths alone give about" : "study.max_samples reached; target",
               limited ? bound : s.study.target);
    c->target = said;
    if (met || limited || c->samples >= most || round == 4) break;
    S = std::min(most, (PetscInt)std::ceil(1.1 * (double)c->samples * a / (want - b)));
  }
  c->seconds = seconds() - t0;
  PetscCall(PetscPrintf(comm,
                        "variant %zu L=%" PetscInt_FMT " H=%" PetscInt_FMT "%s%s: err_law %.3e [%.3e, %.3e]%s (floor "
                        "%.1e), energy %.3e +- %.1e [%.3e, %.3e]%s, %" PetscInt_FMT " samples, %.1f s%s%s\n",
                        v, c->L, c->H, c->k.empty() ? "" : " k=", c->k.c_str(), c->law.gap.err, c->law.gap.lo,
                        c->law.gap.hi, c->law.gap.resolved ? " resolved" : "", c->law.gap.floor,
                        c->law.energy.value, c->law.energy.se, c->law.energy_lo, c->law.energy_hi,
                        c->law.energy_resolved ? " resolved" : "", c->samples, c->seconds,
                        c->target.empty() ? "" : "; target ", c->target.c_str()));
  PetscFunctionReturn(0);
}

// A study in law's tables: law.csv's rows, law_fits.csv's and
// law_expansions.csv's, and the resolved cells.
struct LawTables {
  std::vector<std::string> rows, fits, expansions;
  PetscInt resolved = 0;
};

// Variant v's expansions of err_law in one size x, printed and in
// law_expansions.csv's rows.
PetscErrorCode Expansions(MPI_Comm comm, size_t v, const std::string &x, const std::vector<double> &size,
                          const LawFitPoints &p, std::vector<std::string> *rows) {
  std::vector<std::string> lines;
  PetscFunctionBeginUser;
  for (const std::string &r : ExpansionRows(v, x, size, p.err, p.err_se, p.resolved, &lines, p.rho)) rows->push_back(r);
  for (const std::string &l : lines) PetscCall(PetscPrintf(comm, "variant %zu: err_law = %s\n", v, l.c_str()));
  PetscFunctionReturn(0);
}

// law_fits.csv's row of variant v's fit of `metric` (in k: the rate r in q's columns).
// judged = false: a fit whose cells' correlations through the reference
// are not in it (the energy distance's), which the calibrated rule cannot
// judge: its rejected and decided columns are left empty.
std::string FitRow(size_t v, const std::string &metric, const PowerFit &f, bool judged = true) {
  std::vector<std::string> row = {std::to_string(v), metric, std::to_string(f.cells), f.cells ? num(f.C) : "",
                                  f.fits_p ? num(f.p) : "", f.fits_p ? num(f.p_lo) : "", f.fits_p ? num(f.p_hi) : "",
                                  f.fits_q ? num(f.q) : "", f.fits_q ? num(f.q_lo) : "", f.fits_q ? num(f.q_hi) : ""};
  std::vector<std::string> misfit = PowerFitMisfit(f);
  if (!judged) misfit[3] = misfit[4] = misfit[5] = "";
  for (const std::string &m : misfit) row.push_back(m);
  return csv(row);
}

// Variant v's cells over k (study.k): each against the same L x H model of
// infinite heads (its samples in place of the limit's paths), printed, in
// rows; the fit err_law = C k^-r.
PetscErrorCode LawVariantInK(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v,
                             LawTables *t) {
  const PetscInt L = integers(s.study.L)[0], H = integers(s.study.H)[0];
  LawSamples infinite;
  double steps, sampling;
  std::vector<double> k, one;
  PetscFunctionBeginUser;
  PetscCall(LawCell(comm, args, s, v, L, H, "inf", s.limit.paths, &infinite));
  PetscCall(LimitError(comm, infinite, &steps, &sampling));
  PetscCall(PetscPrintf(comm, "variant %zu: the reference, %" PetscInt_FMT " samples of the L=%" PetscInt_FMT
                        " H=%" PetscInt_FMT " model of infinite heads: its sampling %.3e (relative Gram)\n",
                        v, s.limit.paths, L, H, sampling));
  std::vector<LawGap> gaps;
  for (PetscInt kk : integers(s.study.k)) {
    CellLaw c;
    c.L = L, c.H = H, c.k = std::to_string(kk);
    PetscCall(LawCellCompared(comm, args, s, v, infinite, &c));
    t->rows.push_back(LawRow(v, s, c, steps, sampling, std::to_string(L) + "x" + std::to_string(H) + " k=inf"));
    k.push_back((double)kk), one.push_back(1.0), gaps.push_back(c.law);
    t->resolved += c.law.gap.resolved;
  }
  LawFitPoints x;
  PetscCall(LawFitPointsOf(comm, gaps, LawsOf(infinite), &x));
  const PowerFit f = PowerFitOf(one, k, x.err_power, x.err_se, x.resolved, x.rho, x.widen); // r as q
  t->fits.push_back(FitRow(v, "err_law", f));
  PetscCall(Expansions(comm, v, "k", k, x, &t->expansions));
  if (f.fits_q)
    PetscCall(PetscPrintf(comm, "variant %zu: err_law = %.3g k^-r over %" PetscInt_FMT " resolved cells (sequence %"
                          PetscInt_FMT " of probe set %" PetscInt_FMT "): r = %.3f [%.3f, %.3f]; %s\n", v, f.C,
                          f.cells, x.sequence, x.set, f.q, f.q_lo, f.q_hi, PowerFitVerdict(f, "p", "r").c_str()));
  else
    PetscCall(PetscPrintf(comm, "variant %zu: too few resolved cells to fit err_law = C k^-r\n", v));
  PetscFunctionReturn(0);
}

// What variant v's cells are compared with: the limit's paths, or the finite
// reference's samples (LawFiniteReference); its own error, printed: its steps
// (the limit's extrapolation; none for a finite model) and its sampling.
PetscErrorCode LawReference(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v,
                            LawSamples *reference, double *steps, double *sampling) {
  PetscFunctionBeginUser;
  if (!LawFiniteReference(s)) {
    PetscCall(LawLimit(comm, args, s, v, reference));
    PetscCall(LimitError(comm, *reference, steps, sampling));
    PetscCall(PetscPrintf(comm, "variant %zu: the limit's own error: its steps %.3e, its sampling %.3e (relative "
                          "Gram)\n", v, *steps, *sampling));
    PetscFunctionReturn(0);
  }
  const PetscInt L = s.study.reference_L, H = s.study.reference_H;
  PetscCall(LawCell(comm, args, s, v, L, H, "", s.limit.paths, reference, true));
  PetscCall(LimitError(comm, *reference, steps, sampling));
  PetscCall(PetscPrintf(comm, "variant %zu: the reference, %" PetscInt_FMT " samples of the L=%" PetscInt_FMT
                        " H=%" PetscInt_FMT " model: its sampling %.3e (relative Gram)\n",
                        v, s.limit.paths, L, H, *sampling));
  PetscFunctionReturn(0);
}

// The square root of the energy distance over a variant's cells, for its
// fit (a squared distance: its rates are twice the distance's): the value,
// its own standard error (the distance's over 2 sqrt(energy), not the
// simultaneous interval's), whether that interval excludes 0. The cells'
// correlations through the shared reference are not in it.
struct MetricCells {
  std::vector<double> err, se;
  std::vector<char> ok;
};
void AddEnergy(const CellLaw &c, MetricCells *energy) {
  const double e = std::sqrt(std::max(c.law.energy.value, 0.0));
  energy->err.push_back(e), energy->se.push_back(e > 0 ? c.law.energy.se / (2 * e) : 0);
  energy->ok.push_back(c.law.energy_resolved);
}

// The line of variant v's fit of `metric` = C L^-p H^-q.
PetscErrorCode FitPrint(MPI_Comm comm, size_t v, const char *metric, const PowerFit &f, bool judged = true) {
  PetscFunctionBeginUser;
  if (f.cells == 0) {
    PetscCall(PetscPrintf(comm, "variant %zu: too few resolved cells to fit %s = C L^-p H^-q\n", v, metric));
    PetscFunctionReturn(0);
  }
  char p[96] = "L fixed", q[96] = "H fixed";
  if (f.fits_p) snprintf(p, sizeof p, "p = %.3f [%.3f, %.3f]", f.p, f.p_lo, f.p_hi);
  if (f.fits_q) snprintf(q, sizeof q, "q = %.3f [%.3f, %.3f]", f.q, f.q_lo, f.q_hi);
  char misfit[96];
  snprintf(misfit, sizeof misfit, "chi^2 %.3g on %" PetscInt_FMT " (p %.3g)", f.chi2, f.dof, f.p_value);
  const std::string verdict = judged ? PowerFitVerdict(f)
                                     : std::string(misfit) + ": not judged (the cells' correlations through the "
                                                             "reference are not in this fit)";
  PetscCall(PetscPrintf(comm, "variant %zu: %s = %.3g L^-p H^-q over %" PetscInt_FMT " resolved cells: %s, %s; %s\n", v,
                        metric, f.C, f.cells, p, q, verdict.c_str()));
  PetscFunctionReturn(0);
}

// Variant v's cells: compared with the reference, printed, in rows; its fits.
PetscErrorCode LawVariant(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, size_t v,
                          LawTables *t) {
  const std::vector<PetscInt> Ls = integers(s.study.L), Hs = integers(s.study.H);
  LawSamples limit;
  double steps, sampling;
  std::vector<double> L, H;
  MetricCells energy;
  std::vector<LawGap> gaps;
  PetscFunctionBeginUser;
  if (!s.study.k.empty()) PetscFunctionReturn(LawVariantInK(comm, args, s, v, t));
  PetscCall(LawReference(comm, args, s, v, &limit, &steps, &sampling));
  for (size_t i = 0; i < Ls.size(); ++i)
    for (size_t j = 0; j < Hs.size(); ++j) {
      CellLaw c;
      c.L = Ls[i], c.H = Hs[j];
      PetscCall(LawCellCompared(comm, args, s, v, limit, &c));
      t->rows.push_back(LawRow(v, s, c, steps, sampling, LawReferenceName(s)));
      L.push_back((double)c.L), H.push_back((double)c.H), gaps.push_back(c.law), AddEnergy(c, &energy);
      t->resolved += c.law.gap.resolved;
    }
  LawFitPoints x;
  PetscCall(LawFitPointsOf(comm, gaps, LawsOf(limit), &x));
  if (Hs.size() == 1 && Ls.size() > 1) PetscCall(Expansions(comm, v, "L", L, x, &t->expansions));
  if (Ls.size() == 1 && Hs.size() > 1) PetscCall(Expansions(comm, v, "H", H, x, &t->expansions));
  const bool finite = LawFiniteReference(s); // its gap closes at the reference's sizes (power_fit.hpp)
  const PowerFit gram = PowerFitOf(L, H, x.err_power, x.err_se, x.resolved, x.rho, x.widen,
                                   finite ? (double)s.study.reference_L : INFINITY,
                                   finite ? (double)s.study.reference_H : INFINITY);
  const PowerFit root = PowerFitOf(L, H, energy.err, energy.se, energy.ok);
  t->fits.push_back(FitRow(v, "err_law", gram)), t->fits.push_back(FitRow(v, "sqrt_energy", root, false));
  PetscCall(PetscPrintf(comm, "variant %zu: err_law's fit on sequence %" PetscInt_FMT " of probe set %" PetscInt_FMT
                        " for every cell, their correlations through the reference\n", v, x.sequence, x.set));
  PetscCall(FitPrint(comm, v, "err_law", gram));
  PetscCall(FitPrint(comm, v, "sqrt_energy", root, false));
  PetscFunctionReturn(0);
}

} // namespace

bool LawFiniteReference(const Settings &s) {
  return s.is_explicit("study.reference_L") || s.is_explicit("study.reference_H");
}

std::string LawReferenceName(const Settings &s) {
  return LawFiniteReference(s) ? std::to_string(s.study.reference_L) + "x" + std::to_string(s.study.reference_H)
                               : "limit";
}

// kCellSeeds (1 + h), h a 40-bit hash of (v, L, H, k): a cell's seeds depend on
// what it is, not on where it sits in the grid, so that adding an L or an H
// keeps every other cell's file. Two of a study's cells share seeds with a
// chance of about (cells)^2 2^-41.
std::uint64_t CellSeeds(size_t v, PetscInt L, PetscInt H, PetscInt k, bool reference) {
  const std::uint64_t with_k = k == 0 ? 0 : (std::uint64_t)(k + 2) * 0x9E3779B97F4A7C15ull; // k = 0: none
  const std::uint64_t role = reference ? 1ull << 40 : 0; // a reference's: another stream than any cell's
  Stream st(20261205, kCellSeed, (std::uint64_t)v + role, (((std::uint64_t)L << 32) ^ (std::uint64_t)H) + with_k);
  return kCellSeeds * (1 + (st.next() >> 24));
}
// The settings of probe set k of the model given by `model` (options).
PetscErrorCode ProbeSettings(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                             std::vector<std::string> model, size_t k, Settings *cs) {
  PetscFunctionBeginUser;
  const auto probes = probe_overrides(s, probe_sets(s)[k]);
  model.insert(model.end(), probes.begin(), probes.end());
  PetscCall(CaseSettings(comm, args, model, cs, true));
  PetscFunctionReturn(0);
}

PetscErrorCode StudyInLawRun(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, int *status) {
  LawTables t;
  PetscFunctionBeginUser;
  PetscCall(StudyInLawCheck(comm, s));
  if (s.study.levels) PetscFunctionReturn(LevelsRun(comm, args, s, status));
  PetscCall(LawHeader(comm, s));
  const double t0 = seconds();
  PetscCall(StudyDirCreate(comm, s.study.dir));
  for (size_t v = 0; v < StudyVariants(s).size(); ++v) PetscCall(LawVariant(comm, args, s, v, &t));
  PetscCall(WriteTable(comm, s.study.dir + "/law.csv", kLawColumns, t.rows));
  PetscCall(WriteTable(comm, s.study.dir + "/law_fits.csv", std::string("variant,metric,cells,C,p,p_lo,p_hi,q,q_lo,q_hi,") + kPowerFitMisfit, t.fits));
  PetscCall(WriteTable(comm, s.study.dir + "/law_expansions.csv", kExpansionColumns, t.expansions));
  PetscCall(PetscPrintf(comm,
                        "mft study in law: %zu cells, %" PetscInt_FMT " resolved; wrote %s/law.csv, law_fits.csv, "
                        "law_expansions.csv\n",
                        t.rows.size(), t.resolved, s.study.dir.c_str()));
  Summary sum;
  sum.add("command", std::string("study")).add("mode", std::string("law")).add("dir", s.study.dir);
  sum.add("cells", (long long)t.rows.size()).add("resolved", (long long)t.resolved).add("seconds", seconds() - t0);
  PetscCall(sum.print(comm));
  *status = kExitOk;
  PetscFunctionReturn(0);
}

} // namespace mft
