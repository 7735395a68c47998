// The worst input: projected gradient ascent over the ball, exact gradients
// from adjoint solves, cross-fitted scoring (worst.hpp).
#include "mft/worst.hpp"

#include "mft/families.hpp"
#include "mft/random.hpp"
#include "mft/report.hpp"
#include "mft/runfile.hpp"
#include "mft/study_cases.hpp"

#include <algorithm>
#include <cmath>
#include <list>

namespace mft {

namespace {

constexpr std::uint64_t kWorstStart = 7; // Stream purpose of the random starts

// Every token of the sequences in x brought into the ball |x_i| <= r.
void Project(double r, PetscInt d, std::vector<double> *x) {
  for (size_t t = 0; t < x->size(); t += (size_t)d) {
    double n2 = 0;
    for (PetscInt c = 0; c < d; ++c) n2 += (*x)[t + c] * (*x)[t + c];
    if (n2 > r * r)
      for (PetscInt c = 0; c < d; ++c) (*x)[t + c] *= r / std::sqrt(n2);
  }
}

// The problems of one search: the model, then the search references (A),
// then the held-out ones (B), each on S sequences of N tokens.
struct Sides {
  std::list<Problem> problems; // Problem is not movable: the flow points into it
  size_t searched = 0, heldout = 0;
  PetscInt S = 0, N = 0, d = 0;
  PetscInt evaluations = 0;
  Problem &at(size_t k) { return *std::next(problems.begin(), (long)k); }
};

PetscErrorCode SideCreate(MPI_Comm comm, const Settings &s, const WorstSide &side, PetscInt S, Problem *p) {
  Settings ps = side.settings;
  PetscFunctionBeginUser;
  ps.data.M = S, ps.data.N = s.data.N;
  ps.data.file.clear(), ps.data.heldout.clear();
  ps.data.family = "discrete"; // drawn, then replaced by the search's tokens
  ps.scheme = DepthScheme();
  ps.scheme.zero_targets = true;
  ps.loss.kind = LossKind::token;
  ps.output.trajectory = 0;
  ps.train.batch = 0;
  ps.parallel = s.parallel;
  PetscCall(ProblemCreate(comm, ps, p));
  if (side.heads) {
    PetscCall(SetFromAll(p->heads.theta, *side.heads));
    PetscCall(ProblemSetHeads(p));
  } else {
    PetscCall(RunFileReadParams(side.file, p));
  }
  PetscFunctionReturn(0);
}

// x(1) of sides 0 .. n-1 at the inputs x (all S sequences), gathered.
PetscErrorCode Outputs(Sides &w, const std::vector<double> &x, size_t n, std::vector<std::vector<double>> *Y) {
  PetscFunctionBeginUser;
  Y->resize(n);
  for (size_t k = 0; k < n; ++k) {
    Problem &p = w.at(k);
    PetscCall(SetFromAll(p.x0, x));
    PetscCall(VecCopy(p.x0, p.x1));
    PetscCall(FlowForward(&p.flow, p.x1));
    PetscCall(GatherAll(p.x1, &(*Y)[k]));
  }
  PetscFunctionReturn(0);
}

// The mean of Y[first .. first + n - 1].
std::vector<double> Mean(const std::vector<std::vector<double>> &Y, size_t first, size_t n) {
  std::vector<double> m(Y[first].size(), 0.0);
  for (size_t k = first; k < first + n; ++k)
    for (size_t i = 0; i < m.size(); ++i) m[i] += Y[k][i];
  for (double &v : m) v /= (double)n;
  return m;
}

// Per sequence, (1/N) sum_i |a_i - b_i|^2.
std::vector<double> SquaredDistance(const std::vector<double> &a, const std::vector<double> &b, PetscInt S, PetscInt N) {
  std::vector<double> e(S, 0.0);
  const size_t per = a.size() / (size_t)S;
  for (PetscInt m = 0; m < S; ++m) {
    for (size_t i = m * per; i < (m + 1) * per; ++i) e[m] += (a[i] - b[i]) * (a[i] - b[i]);
    e[m] /= (double)N;
  }
  return e;
}

// The search objective err^2 per start at x, and its gradient G in x: one
// adjoint solve a side (worst.hpp).
PetscErrorCode Objective(Sides &w, const std::vector<double> &x, std::vector<double> *F, std::vector<double> *G) {
  std::vector<std::vector<double>> Y;
  std::vector<double> lam(x.size()), g;
  PetscFunctionBeginUser;
  PetscCall(Outputs(w, x, 1 + w.searched, &Y));
  const std::vector<double> mean = Mean(Y, 1, w.searched);
  *F = SquaredDistance(Y[0], mean, w.S, w.N);
  G->assign(x.size(), 0.0);
  for (size_t k = 0; k <= w.searched; ++k) {
    Problem &p = w.at(k);
    const double scale = k == 0 ? 2.0 / (double)w.N : -2.0 / ((double)w.N * (double)w.searched);
    for (size_t i = 0; i < lam.size(); ++i) lam[i] = scale * (Y[0][i] - mean[i]);
    PetscCall(SetFromAll(p.adjoint, lam));
    PetscCall(FlowAdjoint(&p.flow, p.adjoint, p.grad));
    PetscCall(GatherAll(p.adjoint, &g));
    for (size_t i = 0; i < g.size(); ++i) (*G)[i] += g[i];
  }
  w.evaluations++;
  PetscFunctionReturn(0);
}

double Largest(const std::vector<double> &F) { return std::sqrt(std::max(0.0, *std::max_element(F.begin(), F.end()))); }

// Projected gradient ascent of every start at once: a start moves its token of
// largest gradient by eta along the gradient (the others in proportion), then
// back into the ball; a step that raises its objective is kept and eta
// doubles, else eta halves. Ends after worst.steps iterations, or when every
// start's eta is below 1e-9 r (none can move).
PetscErrorCode Ascend(MPI_Comm comm, const Settings &s, Sides &w, const std::string &progress, std::vector<double> *X,
                      std::vector<double> *F, WorstResult *r) {
  const double radius = s.worst.radius;
  const size_t per = (size_t)(w.N * w.d);
  std::vector<double> G, trial, Ft, Gt;
  std::vector<double> eta((size_t)w.S, 0.25 * radius);
  PetscFunctionBeginUser;
  const double t0 = seconds();
  PetscCall(Objective(w, *X, F, &G));
  r->initial = Largest(*F);
  r->objective.assign(1, r->initial);
  for (PetscInt it = 1; it <= s.worst.steps; ++it) {
    trial = *X;
    for (PetscInt m = 0; m < w.S; ++m) {
      double gmax = 0;
      for (size_t t = m * per; t < (m + 1) * per; t += (size_t)w.d) {
        double n2 = 0;
        for (PetscInt c = 0; c < w.d; ++c) n2 += G[t + c] * G[t + c];
        gmax = std::max(gmax, std::sqrt(n2));
      }
      if (gmax > 0)
        for (size_t i = m * per; i < (m + 1) * per; ++i) trial[i] += eta[m] / gmax * G[i];
    }
    Project(radius, w.d, &trial);
    PetscCall(Objective(w, trial, &Ft, &Gt));
    PetscInt accepted = 0;
    for (PetscInt m = 0; m < w.S; ++m) {
      if (Ft[m] > (*F)[m]) {
        std::copy(trial.begin() + m * per, trial.begin() + (m + 1) * per, X->begin() + m * per);
        std::copy(Gt.begin() + m * per, Gt.begin() + (m + 1) * per, G.begin() + m * per);
        (*F)[m] = Ft[m];
        eta[m] = std::min(2 * eta[m], 1e3 * radius);
        accepted++;
      } else {
        eta[m] *= 0.5;
      }
    }
    r->objective.push_back(Largest(*F));
    r->iterations = it;
    const bool stalled = *std::max_element(eta.begin(), eta.end()) < 1e-9 * radius;
    if (!progress.empty() && (it % s.worst.log_every == 0 || it == s.worst.steps || stalled)) {
      const double spent = seconds() - t0, eta_s = spent / (double)it * (double)(s.worst.steps - it);
      PetscCall(PetscPrintf(comm, "%siteration %5" PetscInt_FMT "/%" PetscInt_FMT "  worst err %.6e  moved %" PetscInt_FMT
                                  "/%" PetscInt_FMT " starts  %.1f s, ETA %.1f s\n",
                            progress.c_str(), it, s.worst.steps, r->objective.back(), accepted, w.S, spent,
                            stalled ? 0.0 : eta_s));
    }
    if (stalled) break;
  }
  PetscFunctionReturn(0);
}

// The figures at the input found (worst.hpp): the best start by the search
// objective, scored on the held-out references.
PetscErrorCode Score(Sides &w, const std::vector<double> &X, const std::vector<double> &F, WorstResult *r) {
  std::vector<std::vector<double>> Y;
  PetscFunctionBeginUser;
  PetscCall(Outputs(w, X, 1 + w.searched + w.heldout, &Y));
  const size_t per = (size_t)(w.N * w.d), b = (size_t)(std::max_element(F.begin(), F.end()) - F.begin());
  r->best = (PetscInt)b;
  for (double f : F) r->start_err.push_back(std::sqrt(std::max(0.0, f)));
  r->raw = r->start_err[b];
  auto slice = [&](const std::vector<double> &v) { return std::vector<double>(v.begin() + b * per, v.begin() + (b + 1) * per); };
  r->tokens = slice(X);
  r->output = slice(Y[0]);
  r->reference_output = slice(Mean(Y, 1, w.searched));
  r->err = r->raw;
  r->estimator = "raw (search references only)";
  if (w.heldout == 0) PetscFunctionReturn(0);
  r->heldout_output = slice(Mean(Y, 1 + w.searched, w.heldout));
  const double e2 = SquaredDistance(r->output, r->heldout_output, 1, w.N)[0];
  r->heldout_raw = std::sqrt(e2);
  r->err = r->heldout_raw;
  r->estimator = "cross-fit raw";
  if (w.heldout < 2) PetscFunctionReturn(0);
  double floor2 = 0;
  PetscInt pairs = 0;
  for (size_t a = 1 + w.searched; a < Y.size(); ++a)
    for (size_t c = a + 1; c < Y.size(); ++c, ++pairs)
      floor2 += 0.5 * SquaredDistance(slice(Y[a]), slice(Y[c]), 1, w.N)[0];
  floor2 /= (double)pairs;
  r->floor = std::sqrt(floor2);
  r->err = std::sqrt(std::max(0.0, e2 - floor2 / (double)w.heldout));
  r->estimator = "cross-fit corrected";
  PetscFunctionReturn(0);
}

} // namespace

std::vector<double> WorstStarts(const Settings &s, PetscInt N, PetscInt d, std::vector<std::string> *names) {
  std::vector<double> x;
  names->clear();
  const auto families = study::words(s.study.probes);
  std::vector<double> seq((size_t)(N * d));
  for (size_t f = 0; f < families.size(); ++f) { // the studies' probe sequences (study::probe_sets)
    DataSettings ds = s.data;
    ds.family = families[f];
    ds.seed = s.data.seed + 7919 * (f + 1);
    for (PetscInt m = 0; m < s.study.probe_M; ++m) {
      family_sample(ds, d, m, N, seq.data());
      x.insert(x.end(), seq.begin(), seq.end());
      names->push_back(families[f] + "/" + std::to_string(m));
    }
  }
  for (PetscInt m = 0; m < s.worst.starts; ++m) {
    Stream st(s.worst.seed, kWorstStart, (std::uint64_t)m);
    for (PetscInt i = 0; i < N; ++i) { // uniform in the ball: a normal direction, radius r u^(1/d)
      double n2 = 0;
      for (PetscInt c = 0; c < d; ++c) {
        seq[i * d + c] = st.normal();
        n2 += seq[i * d + c] * seq[i * d + c];
      }
      const double scale = s.worst.radius * std::pow(st.uniform(), 1.0 / (double)d) / std::sqrt(n2);
      for (PetscInt c = 0; c < d; ++c) seq[i * d + c] *= scale;
    }
    x.insert(x.end(), seq.begin(), seq.end());
    names->push_back("random/" + std::to_string(m));
  }
  Project(s.worst.radius, d, &x);
  return x;
}

PetscErrorCode WorstSearch(MPI_Comm comm, const Settings &s, const WorstSide &model,
                           const std::vector<WorstSide> &references, const std::string &progress, WorstResult *r) {
  Sides w;
  PetscFunctionBeginUser;
  const double t0 = seconds();
  *r = WorstResult();
  const size_t R = references.size();
  PetscCheck(R > 0, comm, PETSC_ERR_USER_INPUT, "the worst input needs references (worst.references is empty)");
  w.searched = s.worst.crossfit && R >= 2 ? R / 2 : R;
  w.heldout = R - w.searched;
  w.N = s.data.N, w.d = model.settings.model.d;
  std::vector<double> X = WorstStarts(s, w.N, w.d, &r->start_names), F;
  w.S = (PetscInt)r->start_names.size();
  w.problems.emplace_back();
  PetscCall(SideCreate(comm, s, model, w.S, &w.problems.back()));
  for (const WorstSide &ref : references) {
    w.problems.emplace_back();
    PetscCall(SideCreate(comm, s, ref, w.S, &w.problems.back()));
  }
  PetscCall(Ascend(comm, s, w, progress, &X, &F, r));
  PetscCall(Score(w, X, F, r));
  r->N = w.N, r->d = w.d, r->starts = w.S;
  r->search_references = (PetscInt)w.searched, r->heldout_references = (PetscInt)w.heldout;
  r->evaluations = w.evaluations;
  for (Problem &p : w.problems) PetscCall(ProblemDestroy(&p));
  r->seconds = seconds() - t0;
  PetscFunctionReturn(0);
}

} // namespace mft
