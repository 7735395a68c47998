// A study's worst inputs (study.worst): every model's, each variant at each
// recorded time in one chain of searches, each N of study.worst_N in one
// batch against that variant's references and started from the N before,
// then the measure of study.worst_atoms atoms from the largest N; the chains
// run on groups of the study's ranks after the cases (and in --aggregate, so
// that they run under Slurm too); read back by the aggregation.
#include "mft/studies/study.hpp"
#include "mft/studies/study_cases.hpp"

#include "mft/settings/error.hpp"
#include "mft/layout/h5.hpp"
#include "mft/flow/limit.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"
#include "mft/worst/worst.hpp"

#include <list>
#include <map>

namespace mft {

using namespace study;

std::string study::worst_path(const std::string &dir, size_t variant, PetscInt time, PetscInt N, bool measure) {
  return dir + "/worst-v" + std::to_string(variant) + "-t" + std::to_string(time) + (measure ? "-K" : "-N") +
         std::to_string(N) + ".h5";
}

std::vector<PetscInt> study::worst_Ns(const Settings &variant) {
  std::vector<PetscInt> Ns = integers(variant.study.worst_N);
  if (Ns.empty()) Ns.push_back(variant.data.N);
  return Ns;
}

namespace {

// Reads dataset `name` of the open file: `rows` rows (its first dimension), or
// nothing when it is not there (*columns: its numbers a row).
PetscErrorCode ReadRowsOf(h5::File &f, const char *name, size_t rows, std::vector<double> *v, size_t *columns) {
  const auto dims = h5::Shape(f, name);
  PetscFunctionBeginUser;
  if (dims.empty() || dims[0] != rows) PetscFunctionReturn(0);
  size_t per = 1;
  for (size_t k = 1; k < dims.size(); ++k) per *= dims[k];
  if (columns) *columns = per;
  v->resize(dims[0] * per);
  Range all;
  all.end = (PetscInt)dims[0];
  PetscCall(h5::ReadRows(f, name, dims, 1, all, v->data()));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode study::ReadWorst(const std::string &path, WorstCases *out, std::string *problem) {
  PetscFunctionBeginUser;
  *out = WorstCases();
  auto read = [&](h5::File &f) -> PetscErrorCode {
    const auto n = h5::Shape(f, "/case"), tokens = h5::Shape(f, "/tokens");
    const size_t rows = n.empty() ? 0 : n[0];
    std::vector<double> index;
    for (auto [name, v, columns] : {std::tuple<const char *, std::vector<double> *, size_t *>{"/case", &index, nullptr},
                                    {"/raw", &out->raw, nullptr}, {"/initial", &out->initial, nullptr},
                                    {"/collapsed", &out->collapsed, nullptr}, {"/check_raw", &out->check, nullptr},
                                    {"/heldout_e2", &out->e2, &out->heldout},
                                    {"/heldout_pairs", &out->pair_terms, &out->pairs},
                                    {"/tokens", &out->tokens, nullptr}, {"/weights", &out->weights, nullptr}})
      PetscCall(ReadRowsOf(f, name, rows, v, columns));
    if (tokens.size() == 3) out->N = (PetscInt)tokens[1], out->d = (PetscInt)tokens[2];
    std::string seconds;
    if (h5::ReadAttribute(f, "worst.seconds", &seconds)) out->seconds = std::stod(seconds);
    for (double i : index) out->index.push_back((PetscInt)i);
    if (index.empty() || out->raw.size() != index.size()) *problem = path + " holds no worst inputs";
    return 0;
  };
  PetscCall(ReadVerified(path, read, problem));
  PetscFunctionReturn(0);
}

namespace {

// The sides of variant v's search at `time`: its models and references with
// their settings, and a trained case's heads and neurons at that time (read from its
// case file); a case without a file is left out (the aggregation names it).
struct VariantSides {
  std::vector<WorstSide> models, references;
  std::vector<PetscInt> index; // the models' case indices
  std::list<ModelParams> params;
};

PetscErrorCode SidesOf(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                       size_t v, PetscInt time, VariantSides *out) {
  const bool trained = s.study.state == StudyState::trained;
  PetscFunctionBeginUser;
  for (const StudyCase &c : StudyCases(s)) {
    if (!StudyCaseOf(s, c, (PetscInt)v)) continue;
    CaseData data;
    std::string problem;
    PetscCall(ReadCase(case_path(dir, c.index), {}, trained ? "/times/" + std::to_string(time) : "", &data, &problem));
    if (!problem.empty() || (trained && data.heads.empty())) continue;
    Settings cs;
    PetscCall(CaseSettings(comm, args, CaseModel(s, c), &cs, true));
    if (c.reference && !trained) cs = LimitSettingsFor(cs); // the mean-field reference: shared ensemble, adaptive
    const ModelParams *params = nullptr;
    if (trained) out->params.push_back({std::move(data.heads), std::move(data.neurons)}), params = &out->params.back();
    (c.reference ? out->references : out->models).push_back(WorstSide{cs, "", params});
    if (!c.reference) out->index.push_back(c.index);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode WriteSearch(MPI_Comm comm, const Settings &ws, const VariantSides &sides,
                           const std::vector<WorstResult> &r, double seconds, const std::string &path) {
  const unsigned long long n = r.size(), B = r[0].heldout_e2.size(), P = r[0].heldout_pairs.size();
  std::vector<double> index(sides.index.begin(), sides.index.end()), raw, initial, collapsed, check, e2, pairs, tokens,
      weights;
  for (const WorstResult &x : r) {
    raw.push_back(x.raw), initial.push_back(x.initial), collapsed.push_back(x.collapsed), check.push_back(x.check_raw);
    e2.insert(e2.end(), x.heldout_e2.begin(), x.heldout_e2.end());
    pairs.insert(pairs.end(), x.heldout_pairs.begin(), x.heldout_pairs.end());
    tokens.insert(tokens.end(), x.tokens.begin(), x.tokens.end());
    weights.insert(weights.end(), x.weights.begin(), x.weights.end());
  }
  const unsigned long long N = r[0].N, d = r[0].d;
  std::vector<ResultArray> arrays = {{"/case", {n}, index.data()},           {"/raw", {n}, raw.data()},
                                     {"/initial", {n}, initial.data()},       {"/collapsed", {n}, collapsed.data()},
                                     {"/tokens", {n, N, d}, tokens.data()}};
  if (r[0].measure) arrays.push_back({"/weights", {n, N}, weights.data()});
  if (ws.worst.check) arrays.push_back({"/check_raw", {n}, check.data()});
  if (B) arrays.push_back({"/heldout_e2", {n, B}, e2.data()});
  if (P) arrays.push_back({"/heldout_pairs", {n, P}, pairs.data()});
  PetscFunctionBeginUser;
  PetscCall(ResultFileWrite(comm, ws, arrays,
                            {{"worst.seconds", num(seconds)},
                             {"worst.input", r[0].measure ? "measure" : "sequence"},
                             {"worst.estimator", r[0].estimator},
                             {"worst.search_references", std::to_string(r[0].search_references)},
                             {"worst.iterations", std::to_string(r[0].iterations)},
                             {"worst.bound", "a lower bound on each model's supremum over the ball"}},
                            path));
  PetscFunctionReturn(0);
}

// Each model's input found by a search (its file), by case index.
std::map<PetscInt, WorstInput> InputsOf(const WorstCases &w) {
  std::map<PetscInt, WorstInput> in;
  const size_t per = (size_t)(w.N * w.d);
  for (size_t j = 0; j < w.index.size() && per > 0 && w.tokens.size() == w.index.size() * per; ++j) {
    WorstInput &x = in[w.index[j]];
    x.tokens.assign(w.tokens.begin() + (std::ptrdiff_t)(j * per), w.tokens.begin() + (std::ptrdiff_t)((j + 1) * per));
    if (!w.weights.empty())
      x.weights.assign(w.weights.begin() + (std::ptrdiff_t)(j * w.N), w.weights.begin() + (std::ptrdiff_t)((j + 1) * w.N));
  }
  return in;
}

// One link of a chain: the search of N tokens (or K atoms) of variant v at
// `time`, unless its file is there (verified); either way the inputs found,
// by case index, which start the next link. Sides are read at the first
// link that searches.
struct Chain {
  MPI_Comm comm;
  const std::vector<std::string> &args;
  const Settings &s;
  const std::string &dir;
  size_t v;
  PetscInt time;
  bool read = false;
  VariantSides sides;
  Settings ws; // the variant's settings
  double spent = 0;
};

PetscErrorCode Link(Chain &c, PetscInt N, bool measure, std::map<PetscInt, WorstInput> *inputs) {
  const std::string path = worst_path(c.dir, c.v, c.time, N, measure);
  WorstCases done;
  std::string problem;
  PetscFunctionBeginUser;
  PetscCall(ReadWorst(path, &done, &problem));
  if (problem.empty()) { // a rerun keeps it
    *inputs = InputsOf(done);
    PetscFunctionReturn(0);
  }
  if (!c.read) PetscCall(SidesOf(c.comm, c.args, c.s, c.dir, c.v, c.time, &c.sides));
  c.read = true;
  const std::string at = "v" + std::to_string(c.v) + " t=" + std::to_string(c.time) + (measure ? " K=" : " N=") +
                         std::to_string(N);
  if (c.sides.models.empty() || c.sides.references.empty()) {
    PetscCall(PetscPrintf(c.comm, "mft study: worst %s: %zu models, %zu references: not searched\n", at.c_str(),
                          c.sides.models.size(), c.sides.references.size()));
    PetscFunctionReturn(0);
  }
  std::vector<WorstInput> from;
  for (PetscInt i : c.sides.index) from.push_back(inputs->count(i) ? inputs->at(i) : WorstInput());
  Settings ws = c.ws;
  if (measure) ws.worst.atoms = N;
  else ws.data.N = N;
  std::vector<WorstResult> r;
  const double t0 = seconds();
  PetscCall(WorstSearch(c.comm, ws, c.sides.models, c.sides.references, "mft study: worst " + at + ": ", &r, from));
  const double spent = seconds() - t0;
  c.spent += spent;
  double largest = 0;
  for (const WorstResult &x : r) largest = std::max(largest, x.err);
  PetscCall(PetscPrintf(c.comm,
                        "mft study: worst %s: %zu models against %zu references in %.2f s; largest %s %.4g (a lower "
                        "bound)\n",
                        at.c_str(), r.size(), c.sides.references.size(), spent, r[0].estimator.c_str(), largest));
  PetscCall(WriteSearch(c.comm, ws, c.sides, r, spent, path));
  inputs->clear();
  for (size_t j = 0; j < r.size(); ++j) (*inputs)[c.sides.index[j]] = r[j].input();
  PetscFunctionReturn(0);
}

// Variant v's chain at `time`: every N of study.worst_N in order, each
// started from the one before, then the measure from the largest N (none
// for a variant with the causal mask).
PetscErrorCode SearchChain(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s,
                           const std::string &dir, size_t v, PetscInt time, double *spent) {
  Chain c{comm, args, s, dir, v, time, false, VariantSides(), Settings(), 0.0};
  std::map<PetscInt, WorstInput> inputs;
  PetscFunctionBeginUser;
  PetscCall(CaseSettings(comm, args, overrides(StudyVariants(s)[v]), &c.ws));
  for (PetscInt N : worst_Ns(c.ws)) PetscCall(Link(c, N, false, &inputs));
  if (s.study.worst_atoms > 0 && c.ws.model.causal)
    PetscCall(PetscPrintf(comm, "mft study: worst v%zu t=%" PetscInt_FMT ": no measure (study.worst_atoms): a measure "
                                "of weighted atoms has no order, and this variant's mask orders the tokens\n", v, time));
  else if (s.study.worst_atoms > 0) PetscCall(Link(c, s.study.worst_atoms, true, &inputs));
  *spent = c.spent;
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode StudyWorst(MPI_Comm comm, const std::vector<std::string> &args, const Settings &s, const std::string &dir,
                          double *spent) {
  std::vector<std::pair<size_t, PetscInt>> chains; // (variant, time)
  PetscFunctionBeginUser;
  const auto variants = StudyVariants(s);
  for (size_t v = 0; v < variants.size(); ++v)
    for (PetscInt time : StudyTimes(s)) chains.emplace_back(v, time);
  double local = 0; // this rank's time searching
  auto name = [&](size_t i) {
    return "worst-v" + std::to_string(chains[i].first) + "-t" + std::to_string(chains[i].second);
  };
  auto run = [&](MPI_Comm group, size_t i) -> PetscErrorCode {
    double t = 0;
    PetscFunctionBeginUser;
    PetscCall(SearchChain(group, args, s, dir, chains[i].first, chains[i].second, &t));
    local += t;
    PetscFunctionReturn(0);
  };
  PetscCall(StudyRunTasks(comm, s, dir, chains.size(), name, run));
  PetscCallMPI(MPI_Allreduce(&local, spent, 1, MPI_DOUBLE, MPI_MAX, comm));
  PetscFunctionReturn(0);
}

} // namespace mft
