// A study's error's law at initialisation (study.fluctuation): for every variant and
// every L of the grid, the Euler error and the head-sampling fluctuation of
// every probe sequence (fluctuation.hpp), for the limit of reference 0's seed
// (at initialisation its X(1) is reference 0's own); a phase after the cases
// on groups of ranks (and in --aggregate); read back by the aggregation,
// which predicts every cell's err at initialisation from them (in a trained
// study, its time-0 rows).
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"
#include "mft/studies/study_tables.hpp"

#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/flow/fluctuation.hpp"
#include "mft/layout/h5.hpp"
#include "mft/layout/random.hpp"
#include "mft/settings/error.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

namespace mft {

using namespace study;

std::string study::law_path(const std::string &dir, size_t variant, PetscInt L) {
  return dir + "/fluctuation-v" + std::to_string(variant) + "-L" + std::to_string(L) + ".h5";
}

PetscErrorCode study::ReadLaw(const std::string &path, LawCases *out, std::string *problem) {
  PetscFunctionBeginUser;
  *out = LawCases();
  auto read = [&](h5::File &f) -> PetscErrorCode {
    for (auto [name, v] : {std::pair<const char *, std::vector<double> *>{"/euler2", &out->euler2},
                           {"/fluctuation2", &out->fluctuation2},
                           {"/fluctuation2_se", &out->fluctuation2_se},
                           {"/dims", &out->dims},
                           {"/tokens", &out->tokens},
                           {"/spectrum", &out->spectrum}, // these two absent with Hutchinson probes
                           {"/euler_coords", &out->euler_coords}})
      PetscCall(ReadColumn(f, name, 0, v));
    std::string seconds;
    if (h5::ReadAttribute(f, "law.seconds", &seconds)) out->seconds = std::stod(seconds);
    const size_t n = out->euler2.size();
    const double entries = std::accumulate(out->dims.begin(), out->dims.end(), 0.0);
    if (n == 0 || out->fluctuation2.size() != n || out->fluctuation2_se.size() != n || out->dims.size() != n ||
        out->tokens.size() != n)
      *problem = path + " holds no law";
    else if (out->spectrum.size() != out->euler_coords.size() ||
             (!out->spectrum.empty() && (double)out->spectrum.size() != entries))
      *problem = path + ": its spectra do not match its sequences";
    return 0;
  };
  PetscCall(ReadVerified(path, read, problem));
  PetscFunctionReturn(0);
}

namespace {

// Variant v's law at depth L, every probe set in order, written to its file.
PetscErrorCode ErrorLawOf(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                     size_t v, PetscInt L, double *spent) {
  const std::string path = law_path(dir, v, L);
  LawCases done;
  std::string problem;
  PetscFunctionBeginUser;
  PetscCall(ReadLaw(path, &done, &problem));
  if (problem.empty()) PetscFunctionReturn(0); // a rerun keeps it
  const double t0 = seconds();
  StudyCase reference;
  for (const StudyCase &c : StudyCases(s))
    if (StudyCaseOf(s, c, (PetscInt)v) && c.reference && c.reference_index == 0) reference = c;
  Settings vs, cs;
  PetscCall(CaseSettings(comm, args, overrides(StudyVariants(s)[v]), &vs));
  CaseData limit; // reference 0's X(1) of every probe set at initialisation; else (or unreadable) solved again
  problem = "a trained study's reference is a finite model";
  if (s.study.state == StudyState::init)
    PetscCall(ReadCase(case_path(dir, reference.index), probe_names(vs), "", &limit, &problem));
  std::vector<double> columns[7]; // euler2, fluctuation2, its se, dims, tokens; spectrum, euler_coords
  const std::vector<ProbeSet> sets = probe_sets(vs);
  for (size_t f = 0; f < sets.size(); ++f) {
    const ProbeSet &set = sets[f];
    std::vector<std::string> extra = CaseModel(s, reference);
    const auto probes = probe_overrides(vs, set);
    extra.insert(extra.end(), probes.begin(), probes.end());
    extra.insert(extra.end(), {"--model.L", std::to_string(L)});
    PetscCall(CaseSettings(comm, args, extra, &cs, true));
    FluctuationResult r;
    PetscCall(FluctuationPriceCheck(comm, cs));
    PetscCall(LimitFluctuation(comm, cs, &r, problem.empty() ? &limit.tokens[f] : nullptr));
    for (PetscInt m = 0; m < r.M; ++m) {
      columns[0].push_back(r.euler2[m]), columns[1].push_back(r.fluctuation2[m]);
      columns[2].push_back(r.fluctuation2_se[m]), columns[3].push_back((double)(r.N * cs.model.d));
      columns[4].push_back((double)r.N);
    }
    columns[5].insert(columns[5].end(), r.spectrum.begin(), r.spectrum.end());
    columns[6].insert(columns[6].end(), r.euler_coords.begin(), r.euler_coords.end());
  }
  *spent += seconds() - t0;
  const unsigned long long n = columns[0].size(), ns = columns[5].size();
  std::vector<ResultArray> arrays = {{"/euler2", {n}, columns[0].data()}, {"/fluctuation2", {n}, columns[1].data()},
                                     {"/fluctuation2_se", {n}, columns[2].data()}, {"/dims", {n}, columns[3].data()},
                                     {"/tokens", {n}, columns[4].data()}};
  if (ns) arrays.insert(arrays.end(), {{"/spectrum", {ns}, columns[5].data()}, {"/euler_coords", {ns}, columns[6].data()}});
  PetscCall(ResultFileWrite(comm, cs, arrays, {{"law.seconds", num(seconds() - t0)}, {"law.L", std::to_string(L)}}, path));
  PetscCall(PetscPrintf(comm, "mft study: the law of variant %zu at L = %" PetscInt_FMT " in %.2f s\n", v, L,
                        seconds() - t0));
  PetscFunctionReturn(0);
}

// E[max over the sequences of err_m^2] of one cell (StudyFluctuationPredict), with
// F^2 moved by `shift` of its standard errors; draws from a fixed stream.
// Sequence m's err^2 is (1/N) |b + xi|^2, b the Euler error, xi Gaussian of
// covariance G / (L H): with the spectra, sum_i (c_i + (lambda_i / (L H))^(1/2)
// z_i)^2 / N exactly; without (Hutchinson probes), G taken isotropic, tr G / N = F^2.
double ExpectedMax(const LawCases &law, double LH, double shift, std::uint64_t cell) {
  constexpr int kDraws = 4000;
  Stream st(20261202, kLawDraw, cell);
  const bool spectral = !law.spectrum.empty();
  double sum = 0;
  for (int draw = 0; draw < kDraws; ++draw) {
    double worst = 0;
    for (size_t m = 0, at = 0; m < law.euler2.size(); at += (size_t)law.dims[m], ++m) {
      const double F2 = law.fluctuation2[m], N = law.tokens[m];
      const double moved = F2 > 0 ? std::max(0.0, 1 + shift * law.fluctuation2_se[m] / F2) : 0.0;
      const size_t n = (size_t)law.dims[m];
      double e2 = 0;
      for (size_t i = 0; i < n; ++i) {
        const double c = spectral ? law.euler_coords[at + i] : (i ? 0.0 : std::sqrt(law.euler2[m] * N));
        const double lambda = spectral ? law.spectrum[at + i] : F2 * N / (double)n;
        e2 += std::pow(c + std::sqrt(moved * lambda / LH) * st.normal(), 2);
      }
      worst = std::max(worst, e2 / N);
    }
    sum += worst;
  }
  return sum / kDraws;
}

} // namespace

PetscErrorCode StudyFluctuationPredict(const std::string &dir, size_t v, const StudyErrors &e, const StudyStatistics &st,
                               FluctuationPrediction *out) {
  std::map<PetscInt, LawCases> laws;
  PetscFunctionBeginUser;
  *out = FluctuationPrediction();
  for (PetscInt L : e.L) {
    std::string problem;
    PetscCall(ReadLaw(law_path(dir, v, L), &laws[L], &problem));
    if (!problem.empty()) PetscFunctionReturn(0); // no law for this variant
  }
  const size_t nH = e.H.size();
  double held = 0;
  for (size_t k = 0; k < st.cells.size(); ++k) {
    const PetscInt L = e.L[k / nH], H = e.H[k % nH];
    const LawCases &law = laws[L];
    const double LH = (double)L * (double)H;
    out->err.push_back(std::sqrt(ExpectedMax(law, LH, 0, k)));
    out->lo.push_back(std::sqrt(ExpectedMax(law, LH, -2, k)));
    out->hi.push_back(std::sqrt(ExpectedMax(law, LH, 2, k)));
    const StudyCell &c = st.cells[k];
    const bool counted = c.resolved && LH >= 16;
    const bool holds = c.ci[1].lo <= out->err.back() && out->err.back() <= c.ci[1].hi;
    out->held.push_back(counted ? (double)holds : NAN);
    out->cells += counted, held += counted && holds;
  }
  out->holds = out->cells ? held / (double)out->cells : NAN;
  const LawCases &last = laws[e.L.back()]; // the constants at the largest L
  out->C1 = (double)e.L.back() * std::sqrt(*std::max_element(last.euler2.begin(), last.euler2.end()));
  out->C2 = std::sqrt(*std::max_element(last.fluctuation2.begin(), last.fluctuation2.end()));
  PetscFunctionReturn(0);
}

// A trained study's time 0 only when asked: its probes (e.g. N = 128) can make the exact trace cost more than the study.
// Not with data.embed (its study compares Gram matrices), nor with MLP
// sublayers (the law is attention's error alone).
bool StudyFluctuationWanted(const Settings &s) {
  return s.study.fluctuation && s.data.embed == 0 && !s.model.mlp() &&
         (s.study.state == StudyState::init || s.is_explicit("study.fluctuation"));
}

PetscErrorCode StudyLaw(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                        double *spent) {
  std::vector<std::pair<size_t, PetscInt>> tasks; // (variant, L)
  double local = 0;
  PetscFunctionBeginUser;
  *spent = 0;
  if (!StudyFluctuationWanted(s)) PetscFunctionReturn(0);
  std::error_code ec; // a variant whose first reference failed has no law (the aggregate says it is not measured)
  for (const StudyCase &c : StudyCases(s))
    if (c.reference && c.reference_index == 0 && std::filesystem::exists(case_path(dir, c.index), ec))
      for (PetscInt L : integers(s.study.L)) tasks.emplace_back((size_t)c.variant, L);
  auto name = [&](size_t i) {
    return "fluctuation-v" + std::to_string(tasks[i].first) + "-L" + std::to_string(tasks[i].second);
  };
  auto run = [&](MPI_Comm group, size_t i) { return ErrorLawOf(group, args, s, dir, tasks[i].first, tasks[i].second, &local); };
  // One law after another on every rank: two side by side took 1.28x as long (study_depth.cfg, 2 ranks).
  PetscCall(StudyRunTasks(comm, s, dir, tasks.size(), name, run, false));
  PetscCallMPI(MPI_Allreduce(&local, spent, 1, MPI_DOUBLE, MPI_MAX, comm));
  PetscFunctionReturn(0);
}

} // namespace mft
