// A study's worst inputs (study.worst): every model's, each variant at each
// recorded time and N in one batch against that variant's references, in a
// phase after the cases (and in --aggregate, so that it runs under Slurm
// too); read back by the aggregation.
#include "mft/study.hpp"
#include "mft/study_cases.hpp"

#include "mft/error.hpp"
#include "mft/h5.hpp"
#include "mft/limit.hpp"
#include "mft/report.hpp"
#include "mft/runfile.hpp"
#include "mft/worst.hpp"

#include <list>

namespace mft {

using namespace study;

std::string study::worst_path(const std::string &dir, size_t variant, PetscInt time, PetscInt N) {
  return dir + "/worst-v" + std::to_string(variant) + "-t" + std::to_string(time) + "-N" + std::to_string(N) + ".h5";
}

std::vector<PetscInt> study::worst_Ns(const Settings &variant) {
  std::vector<PetscInt> Ns = integers(variant.study.worst_N);
  if (Ns.empty()) Ns.push_back(variant.data.N);
  return Ns;
}

PetscErrorCode study::ReadWorst(const std::string &path, WorstCases *out, std::string *problem) {
  std::uint64_t stored = 0, computed = 0;
  PetscFunctionBeginUser;
  *out = WorstCases();
  problem->clear();
  PetscCall(PetscPushErrorHandler(ErrorCapture, nullptr));
  PetscErrorCode err = h5::Verify(PETSC_COMM_SELF, path, &stored, &computed);
  if (!err && stored != computed) *problem = path + " is damaged (checksum)";
  if (!err && problem->empty()) {
    h5::File f;
    err = h5::Open(PETSC_COMM_SELF, path, false, &f);
    const auto n = h5::Shape(f, "/case");
    std::vector<double> index(n.empty() ? 0 : n[0]);
    auto read = [&](const char *name, std::vector<double> *v, size_t *columns) {
      const auto dims = h5::Shape(f, name);
      if (err || dims.empty() || dims[0] != index.size()) return;
      if (columns) *columns = dims.size() > 1 ? dims[1] : 1;
      v->resize(dims[0] * (dims.size() > 1 ? dims[1] : 1));
      Range all;
      all.end = (PetscInt)dims[0];
      err = h5::ReadRows(f, name, dims, 1, all, v->data());
    };
    read("/case", &index, nullptr);
    read("/raw", &out->raw, nullptr);
    read("/initial", &out->initial, nullptr);
    read("/heldout_e2", &out->e2, &out->heldout);
    read("/heldout_pairs", &out->pair_terms, &out->pairs);
    std::string seconds;
    if (h5::ReadAttribute(f, "worst.seconds", &seconds)) out->seconds = std::stod(seconds);
    if (!err) err = h5::Close(&f);
    for (double i : index) out->index.push_back((PetscInt)i);
    if (!err && (index.empty() || out->raw.size() != index.size())) *problem = path + " holds no worst inputs";
  }
  PetscCall(PetscPopErrorHandler());
  if (err) *problem = captured_error();
  PetscFunctionReturn(0);
}

namespace {

// The sides of variant v's search at `time`: its models and references with
// their settings, and a trained case's heads at that time (read from its
// case file); a case without a file is left out (the aggregation names it).
struct VariantSides {
  std::vector<WorstSide> models, references;
  std::vector<PetscInt> index; // the models' case indices
  std::list<std::vector<double>> heads;
};

PetscErrorCode SidesOf(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                       size_t v, PetscInt time, VariantSides *out) {
  const bool trained = s.study.state == StudyState::trained;
  PetscFunctionBeginUser;
  for (const StudyCase &c : StudyCases(s)) {
    if (c.variant != (PetscInt)v) continue;
    CaseData data;
    std::string problem;
    PetscCall(ReadCase(case_path(dir, c.index), {}, trained ? "/times/" + std::to_string(time) : "", &data, &problem));
    if (!problem.empty() || (trained && data.heads.empty())) continue;
    Settings cs;
    PetscCall(CaseSettings(comm, args, CaseModel(s, c), &cs, true));
    if (c.reference && !trained) cs = LimitSettingsFor(cs); // the mean-field reference: shared ensemble, adaptive
    const std::vector<double> *heads = nullptr;
    if (trained) out->heads.push_back(std::move(data.heads)), heads = &out->heads.back();
    (c.reference ? out->references : out->models).push_back(WorstSide{cs, "", heads});
    if (!c.reference) out->index.push_back(c.index);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode WriteSearch(MPI_Comm comm, const Settings &ws, const VariantSides &sides,
                           const std::vector<WorstResult> &r, double seconds, const std::string &path) {
  const unsigned long long n = r.size(), B = r[0].heldout_e2.size(), P = r[0].heldout_pairs.size();
  std::vector<double> index(sides.index.begin(), sides.index.end()), raw, initial, e2, pairs, tokens;
  for (const WorstResult &x : r) {
    raw.push_back(x.raw), initial.push_back(x.initial);
    e2.insert(e2.end(), x.heldout_e2.begin(), x.heldout_e2.end());
    pairs.insert(pairs.end(), x.heldout_pairs.begin(), x.heldout_pairs.end());
    tokens.insert(tokens.end(), x.tokens.begin(), x.tokens.end());
  }
  std::vector<ResultArray> arrays = {{"/case", {n}, index.data()},
                                     {"/raw", {n}, raw.data()},
                                     {"/initial", {n}, initial.data()},
                                     {"/tokens", {n, (unsigned long long)r[0].N, (unsigned long long)r[0].d}, tokens.data()}};
  if (B) arrays.push_back({"/heldout_e2", {n, B}, e2.data()});
  if (P) arrays.push_back({"/heldout_pairs", {n, P}, pairs.data()});
  PetscFunctionBeginUser;
  PetscCall(ResultFileWrite(comm, ws, arrays,
                            {{"worst.seconds", num(seconds)},
                             {"worst.estimator", r[0].estimator},
                             {"worst.search_references", std::to_string(r[0].search_references)},
                             {"worst.iterations", std::to_string(r[0].iterations)},
                             {"worst.bound", "a lower bound on each model's supremum over the ball"}},
                            path));
  PetscFunctionReturn(0);
}

// Variant v's searches at `time`, one for each N of Ns not searched before
// (a rerun keeps a file that verifies); its sides are read once for all.
PetscErrorCode SearchVariant(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                             const std::string &dir, size_t v, PetscInt time, const std::vector<PetscInt> &Ns,
                             double *spent_all) {
  std::vector<PetscInt> missing;
  VariantSides sides;
  Settings ws;
  PetscFunctionBeginUser;
  for (PetscInt N : Ns) {
    WorstCases done;
    std::string problem;
    PetscCall(ReadWorst(worst_path(dir, v, time, N), &done, &problem));
    if (!problem.empty()) missing.push_back(N);
  }
  if (missing.empty()) PetscFunctionReturn(0);
  PetscCall(SidesOf(comm, args, s, dir, v, time, &sides));
  PetscCall(CaseSettings(comm, args, overrides(StudyVariants(s)[v]), &ws));
  for (PetscInt N : missing) {
    const std::string at = "v" + std::to_string(v) + " t=" + std::to_string(time) + " N=" + std::to_string(N);
    if (sides.models.empty() || sides.references.empty()) {
      PetscCall(PetscPrintf(comm, "mft study: worst %s: %zu models, %zu references: not searched\n", at.c_str(),
                            sides.models.size(), sides.references.size()));
      continue;
    }
    std::vector<WorstResult> r;
    ws.data.N = N;
    const double t0 = seconds();
    PetscCall(WorstSearch(comm, ws, sides.models, sides.references, "mft study: worst " + at + ": ", &r));
    const double spent = seconds() - t0;
    *spent_all += spent;
    double largest = 0;
    for (const WorstResult &x : r) largest = std::max(largest, x.err);
    PetscCall(PetscPrintf(comm,
                          "mft study: worst %s: %zu models against %zu references in %.2f s; largest %s %.4g (a lower "
                          "bound)\n",
                          at.c_str(), r.size(), sides.references.size(), spent, r[0].estimator.c_str(), largest));
    PetscCall(WriteSearch(comm, ws, sides, r, spent, worst_path(dir, v, time, N)));
  }
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyWorst(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                          double *spent) {
  PetscFunctionBeginUser;
  *spent = 0;
  const auto variants = StudyVariants(s);
  for (size_t v = 0; v < variants.size(); ++v) {
    Settings vs;
    PetscCall(CaseSettings(comm, args, overrides(variants[v]), &vs));
    for (PetscInt time : StudyTimes(s)) PetscCall(SearchVariant(comm, args, s, dir, v, time, worst_Ns(vs), spent));
  }
  PetscFunctionReturn(0);
}

} // namespace mft
