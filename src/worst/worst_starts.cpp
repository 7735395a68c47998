// Where the worst input's search starts (worst.hpp): the probe families and
// random inputs in the ball (or on the sphere), and earlier inputs taken to
// another size as the same measure; and whether a search fits the node.
#include "mft/worst/worst.hpp"

#include "mft/flow/families.hpp"
#include "mft/flow/limit.hpp"
#include "mft/layout/h5.hpp"
#include "mft/layout/random.hpp"
#include "mft/flow/data.hpp"

#include <algorithm>
#include <cmath>
#include <unistd.h>

namespace mft {

namespace {
constexpr std::uint64_t kWorstStart = 7;   // Stream purpose of the random starts
constexpr std::uint64_t kWorstPerturb = 9; // Stream purpose of a start's perturbed copy
} // namespace

void WorstProject(const Settings &s, PetscInt d, std::vector<double> *x) {
  const bool sphere = s.model.norm == TokenNorm::sphere;
  const double r = s.worst.radius;
  for (size_t t = 0; t < x->size(); t += (size_t)d) {
    double n2 = 0;
    for (PetscInt c = 0; c < d; ++c) n2 += (*x)[t + c] * (*x)[t + c];
    if (sphere && n2 == 0) (*x)[t] = n2 = 1; // a token of no direction: the first axis
    if (sphere || n2 > r * r)
      for (PetscInt c = 0; c < d; ++c) (*x)[t + c] *= (sphere ? 1.0 : r) / std::sqrt(n2);
  }
}

PetscErrorCode WorstProjectStart(MPI_Comm comm, const Settings &s, PetscInt d, std::vector<double> *x) {
  const std::vector<double> given = *x;
  PetscFunctionBeginUser;
  WorstProject(s, d, x);
  double moved = 0; // (a token on the boundary may pass it by round-off)
  for (size_t e = 0; e < given.size(); ++e) moved = std::max(moved, std::fabs((*x)[e] - given[e]));
  if (moved > 1e-9 * s.worst.radius)
    PetscCall(PetscPrintf(comm, "worst: the start's tokens lie outside the %s: projected onto it\n",
                          s.model.norm == TokenNorm::sphere ? "unit sphere" : "ball of worst.radius"));
  PetscFunctionReturn(0);
}

std::vector<double> WorstStarts(const Settings &s, PetscInt n, PetscInt d, bool measure,
                                std::vector<std::string> *names, std::vector<double> *weights) {
  std::vector<double> x;
  names->clear(), weights->clear();
  Settings ps = s; // the studies' probe sequences of the families, at n tokens
  ps.data.N = n, ps.study.probe_N.clear(), ps.study.probe_file.clear();
  std::vector<double> seq((size_t)(n * d));
  for (const ProbeSet &p : probe_sets(ps)) {
    DataSettings ds = s.data;
    ds.family = p.family, ds.seed = p.seed;
    for (PetscInt m = 0; m < s.study.probe_M; ++m) {
      family_sample(ds, d, m, n, seq.data());
      x.insert(x.end(), seq.begin(), seq.end());
      if (measure) weights->insert(weights->end(), (size_t)n, 1.0 / (double)n);
      names->push_back(p.name + "/" + std::to_string(m));
    }
  }
  for (PetscInt m = 0; m < s.worst.starts; ++m) {
    Stream st(s.worst.seed, kWorstStart, (std::uint64_t)m);
    for (PetscInt i = 0; i < n; ++i) { // uniform in the ball: a normal direction, radius r u^(1/d)
      double n2 = 0;
      for (PetscInt c = 0; c < d; ++c) {
        seq[i * d + c] = st.normal();
        n2 += seq[i * d + c] * seq[i * d + c];
      }
      const double scale = s.worst.radius * std::pow(st.uniform(), 1.0 / (double)d) / std::sqrt(n2);
      for (PetscInt c = 0; c < d; ++c) seq[i * d + c] *= scale;
    }
    x.insert(x.end(), seq.begin(), seq.end());
    if (measure) { // Dirichlet(1, ..., 1): normalised exponential draws
      std::vector<double> w((size_t)n);
      double sum = 0;
      for (double &v : w) sum += (v = -std::log(1.0 - st.uniform()) + 1e-12);
      for (double v : w) weights->push_back(v / sum);
    }
    names->push_back("random/" + std::to_string(m));
  }
  WorstProject(s, d, &x);
  return x;
}

PetscErrorCode WorstInputAs(MPI_Comm comm, const WorstInput &in, PetscInt d, PetscInt n, bool measure,
                            const std::string &what, WorstInput *out) {
  const PetscInt size = (PetscInt)(in.tokens.size() / (size_t)d);
  PetscFunctionBeginUser;
  PetscCheck(size > 0, comm, PETSC_ERR_USER_INPUT, "%s holds no input", what.c_str());
  if (!measure) {
    PetscCheck(!in.measure(), comm, PETSC_ERR_USER_INPUT,
               "%s is a measure of %" PetscInt_FMT " weighted atoms: it starts a measure search (worst.atoms), not "
               "one of sequences", what.c_str(), size);
    PetscCheck(n % size == 0, comm, PETSC_ERR_USER_INPUT,
               "%s is a sequence of %" PetscInt_FMT " tokens: a search of %" PetscInt_FMT " tokens needs a multiple "
               "of it (each token repeated)", what.c_str(), size, n);
    out->weights.clear();
    out->tokens.clear();
    for (PetscInt i = 0; i < size; ++i)
      for (PetscInt k = 0; k < n / size; ++k)
        out->tokens.insert(out->tokens.end(), in.tokens.begin() + i * d, in.tokens.begin() + (i + 1) * d);
    PetscFunctionReturn(0);
  }
  PetscCheck(n >= size, comm, PETSC_ERR_USER_INPUT,
             "%s has %" PetscInt_FMT " %s: a measure of %" PetscInt_FMT " atoms cannot hold it (give worst.atoms >= %"
             PetscInt_FMT ")", what.c_str(), size, in.measure() ? "atoms" : "tokens", n, size);
  *out = in;
  if (!in.measure()) out->weights.assign((size_t)size, 1.0 / (double)size);
  while ((PetscInt)out->weights.size() < n) { // the heaviest atom (the first of equals) split in two halves
    const size_t j = (size_t)(std::max_element(out->weights.begin(), out->weights.end()) - out->weights.begin());
    out->weights[j] *= 0.5;
    out->weights.push_back(out->weights[j]);
    out->tokens.insert(out->tokens.end(), out->tokens.begin() + (std::ptrdiff_t)(j * d),
                       out->tokens.begin() + (std::ptrdiff_t)((j + 1) * d));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode WorstInputRead(MPI_Comm comm, const std::string &path, PetscInt d, WorstInput *in) {
  h5::File f;
  PetscFunctionBeginUser;
  PetscCall(h5::Open(comm, path, false, &f));
  f.finite = true;
  const bool measure = !h5::Shape(f, "/worst/atoms").empty();
  const std::string name = measure ? "/worst/atoms" : "/worst/tokens";
  const auto dims = h5::Shape(f, name), wdims = h5::Shape(f, "/worst/weights");
  const bool shaped = dims.size() == 3 && dims[0] == 1 && (PetscInt)dims[2] == d &&
                      (!measure || (wdims.size() == 2 && wdims[1] == dims[1]));
  if (!shaped) PetscCall(h5::Close(&f));
  PetscCheck(shaped, comm, PETSC_ERR_FILE_UNEXPECTED,
             "worst.start: %s holds no worst input in R^%" PetscInt_FMT " (/worst/tokens, or /worst/atoms and "
             "/worst/weights, of one input: mft worst's result file)", path.c_str(), d);
  in->tokens.resize(dims[1] * dims[2]);
  PetscCall(ReadReplicated(f, name, dims, in->tokens.data()));
  in->weights.resize(measure ? wdims[1] : 0);
  if (measure) PetscCall(ReadReplicated(f, "/worst/weights", wdims, in->weights.data()));
  PetscCall(h5::Close(&f));
  PetscFunctionReturn(0);
}

// The search's sizes, checked before any work: every reference runs every
// model's S starts (models S sequences of n tokens in R^d), which must be a
// vector PETSc can index; every rank holds the inputs, gradients and outputs
// of all of them (about 10 + sides copies), and each side's states along
// depth (its layers' states twice: the trajectory and the kept states;
// kLimitEvaluations for an adaptive reference) are shared by the ranks:
// together within the node's memory.
PetscErrorCode WorstSearchFits(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                          const std::vector<WorstSide> &references, PetscInt own) {
  PetscMPIInt ranks, node_ranks;
  double available;
  PetscFunctionBeginUser;
  const double n = (double)(s.worst.atoms > 0 ? s.worst.atoms : s.data.N), d = (double)models[0].settings.model.d;
  const double probes = (double)(probe_sets(s).size() * (size_t)s.study.probe_M);
  const double S = (probes + (double)s.worst.starts + (double)own) * (s.worst.check ? 2.0 : 1.0);
  const double numbers = (double)models.size() * S * n * d; // a reference's state
  PetscCheck(numbers <= (double)PETSC_MAX_INT, comm, PETSC_ERR_USER_INPUT,
             "the worst-input search of %zu models x %.0f starts x %.0f tokens in R^%.0f needs vectors of %.0f "
             "numbers, more than this PETSc can index (%.0f): search fewer tokens, starts or models",
             models.size(), S, n, d, numbers, (double)PETSC_MAX_INT);
  double depth = 0; // states along depth, over all sides, in units of a reference's state
  for (const WorstSide &m : models) depth += (2.0 * (double)m.settings.model.L + 4) / (double)models.size();
  for (const WorstSide &r : references)
    depth += 2.0 * (r.settings.scheme.adaptive ? kLimitEvaluations : (double)r.settings.model.L) + 4;
  PetscCallMPI(MPI_Comm_size(comm, &ranks));
  PetscCall(NodeMemory(comm, &available, &node_ranks));
  // Against the node's memory, not what is free now: other groups of a
  // study may hold some of it for a while (each search's sides keep no more
  // than their share of it, SidesCreate).
  available = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  const double sides = (double)(models.size() + references.size());
  const double bytes = 8.0 * numbers * ((10 + sides) * node_ranks + depth * node_ranks / ranks);
  PetscCheck(bytes <= available, comm, PETSC_ERR_USER_INPUT,
             "the worst-input search of %zu models x %.0f starts x %.0f tokens in R^%.0f needs %.3g GiB on this node "
             "(every rank holds every start's tokens, gradients and outputs), more than its %.3g GiB: search fewer "
             "tokens, starts or models",
             models.size(), S, n, d, bytes / 1073741824.0, available / 1073741824.0);
  PetscFunctionReturn(0);
}

PetscInt WorstSteps(const Settings &s) {
  return s.worst.atoms > 0 && !s.is_explicit("worst.steps") ? 2 * s.worst.steps : s.worst.steps;
}

PetscErrorCode WorstStartsFrom(MPI_Comm comm, const Settings &s, PetscInt d, const std::vector<WorstInput> &from,
                               const std::vector<WorstInput> &collapsed, std::vector<ModelStart> *starts) {
  const PetscInt n = s.worst.atoms > 0 ? s.worst.atoms : s.data.N;
  PetscFunctionBeginUser;
  starts->clear();
  bool any = false;
  for (const WorstInput &f : from) any = any || !f.tokens.empty();
  if (!any) PetscFunctionReturn(0);
  starts->push_back({"start", {}});
  starts->push_back({"start+noise", {}});
  for (size_t j = 0; j < collapsed.size(); ++j) {
    const bool given = j < from.size() && !from[j].tokens.empty();
    WorstInput start = given ? from[j] : collapsed[j];
    if (given) {
      PetscCall(WorstInputAs(comm, from[j], d, n, s.worst.atoms > 0, "the start (worst.start)", &start));
      PetscCall(WorstProjectStart(comm, s, d, &start.tokens));
    }
    WorstInput noisy = start;
    Stream st(s.worst.seed, kWorstPerturb, (std::uint64_t)j);
    for (double &x : noisy.tokens) x += 0.01 * s.worst.radius * st.normal();
    WorstProject(s, d, &noisy.tokens);
    (*starts)[0].inputs.push_back(start), (*starts)[1].inputs.push_back(noisy);
  }
  PetscFunctionReturn(0);
}

} // namespace mft
