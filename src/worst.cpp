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

// The problems of one search: the models, then the search references (A),
// then the held-out ones (B). A model runs its S starts; a reference runs
// every model's, model j's at sequences j S .. (j + 1) S - 1.
struct Sides {
  std::list<Problem> problems; // Problem is not movable: the flow points into it
  size_t models = 0, searched = 0, heldout = 0;
  PetscInt S = 0, N = 0, d = 0;
  size_t per = 0; // entries a start: N d
  PetscInt evaluations = 0;
  std::vector<char> active; // the starts being ascended, all models'
  Problem &at(size_t k) { return *std::next(problems.begin(), (long)k); }
  bool reference(size_t k) const { return k >= models; }
  size_t total() const { return models + searched + heldout; }
};

PetscErrorCode SideCreate(MPI_Comm comm, const Settings &s, const WorstSide &side, PetscInt M, Problem *p) {
  Settings ps = side.settings;
  PetscFunctionBeginUser;
  PetscCheck(ps.model.norm != TokenNorm::sphere, comm, PETSC_ERR_USER_INPUT,
             "the worst-input search (mft worst, study.worst) searches a ball of inputs, not the sphere: "
             "model.norm = sphere is not taken");
  ps.data.M = M, ps.data.N = s.data.N;
  ps.data.file.clear(), ps.data.heldout.clear();
  ps.data.family = "discrete"; // drawn, then replaced by the search's tokens
  ps.scheme.zero_targets = true; // the scheme is the side's own: a mean-field reference is adaptive
  ps.loss.kind = LossKind::token;
  ps.output.trajectory = 0;
  ps.train.batch = 0;
  ps.parallel = s.parallel;
  PetscCall(ProblemCreate(comm, ps, p));
  if (side.heads) {
    PetscCall(SetFromAll(p->heads.theta, *side.heads));
    PetscCall(ProblemSetHeads(p));
  } else if (!side.file.empty()) {
    PetscCall(RunFileReadParams(side.file, p));
  }
  PetscFunctionReturn(0);
}

// The problems of a search of S starts a model; every start active.
PetscErrorCode SidesCreate(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                           const std::vector<WorstSide> &references, PetscInt S, Sides *w) {
  const size_t R = references.size();
  PetscFunctionBeginUser;
  PetscCheck(R > 0, comm, PETSC_ERR_USER_INPUT, "the worst input needs references (worst.references is empty)");
  PetscCheck(!models.empty(), comm, PETSC_ERR_ARG_SIZ, "the worst input of no model");
  w->models = models.size();
  w->searched = s.worst.crossfit && R >= 2 ? R / 2 : R;
  w->heldout = R - w->searched;
  w->N = s.data.N, w->d = models[0].settings.model.d, w->per = (size_t)(w->N * w->d);
  w->S = S;
  w->active.assign(w->models * (size_t)S, 1);
  for (size_t k = 0; k < w->total(); ++k) {
    w->problems.emplace_back();
    const bool model = k < w->models;
    PetscCall(SideCreate(comm, s, model ? models[k] : references[k - w->models], model ? S : S * (PetscInt)w->models,
                         &w->problems.back()));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode SidesDestroy(Sides *w) {
  PetscFunctionBeginUser;
  for (Problem &p : w->problems) PetscCall(ProblemDestroy(&p));
  w->problems.clear();
  PetscFunctionReturn(0);
}

// The sequences side k runs, out of all models' starts.
std::vector<double> SideSlice(const Sides &w, size_t k, const std::vector<double> &all) {
  if (w.reference(k)) return all;
  const size_t n = (size_t)w.S * w.per;
  return std::vector<double>(all.begin() + (std::ptrdiff_t)(k * n), all.begin() + (std::ptrdiff_t)((k + 1) * n));
}

// x(1) of sides 0 .. n-1 at the inputs x (every model's starts), gathered;
// a model's outputs at its place among all models' (as a reference's).
PetscErrorCode Outputs(Sides &w, const std::vector<double> &x, size_t n, std::vector<std::vector<double>> *Y) {
  std::vector<double> y;
  PetscFunctionBeginUser;
  Y->assign(n, std::vector<double>());
  (*Y)[0].assign(x.size(), 0.0);
  for (size_t k = 0; k < n; ++k) {
    Problem &p = w.at(k);
    const size_t first = w.reference(k) ? 0 : k * (size_t)w.S;
    p.active.assign(w.active.begin() + (std::ptrdiff_t)first, w.active.begin() + (std::ptrdiff_t)first + (std::ptrdiff_t)p.tokens.M);
    PetscCall(SetFromAll(p.x0, SideSlice(w, k, x)));
    PetscCall(VecCopy(p.x0, p.x1));
    PetscCall(FlowForward(&p.flow, p.x1));
    PetscCall(GatherAll(p.x1, w.reference(k) ? &(*Y)[k] : &y));
    if (!w.reference(k)) std::copy(y.begin(), y.end(), (*Y)[0].begin() + (std::ptrdiff_t)(first * w.per));
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
std::vector<double> SquaredDistance(const std::vector<double> &a, const std::vector<double> &b, size_t per, PetscInt N) {
  std::vector<double> e(a.size() / per, 0.0);
  for (size_t m = 0; m < e.size(); ++m) {
    for (size_t i = m * per; i < (m + 1) * per; ++i) e[m] += (a[i] - b[i]) * (a[i] - b[i]);
    e[m] /= (double)N;
  }
  return e;
}

// The search objective err^2 per start (of every model) at x, and its
// gradient G in x: one adjoint solve a side (worst.hpp). Y[0] holds every
// model's outputs; references follow.
PetscErrorCode Objective(Sides &w, const std::vector<double> &x, std::vector<double> *F, std::vector<double> *G) {
  std::vector<std::vector<double>> Y;
  std::vector<double> lam(x.size()), g;
  PetscFunctionBeginUser;
  PetscCall(Outputs(w, x, w.models + w.searched, &Y));
  const std::vector<double> mean = Mean(Y, w.models, w.searched);
  *F = SquaredDistance(Y[0], mean, w.per, w.N);
  G->assign(x.size(), 0.0);
  for (size_t k = 0; k < w.models + w.searched; ++k) {
    Problem &p = w.at(k);
    const double scale = w.reference(k) ? -2.0 / ((double)w.N * (double)w.searched) : 2.0 / (double)w.N;
    for (size_t i = 0; i < lam.size(); ++i) lam[i] = scale * (Y[0][i] - mean[i]);
    PetscCall(SetFromAll(p.adjoint, SideSlice(w, k, lam)));
    PetscCall(FlowAdjoint(&p.flow, p.adjoint, p.grad));
    PetscCall(GatherAll(p.adjoint, &g));
    const size_t first = w.reference(k) ? 0 : k * (size_t)w.S * w.per;
    for (size_t i = 0; i < g.size(); ++i) (*G)[first + i] += g[i];
  }
  w.evaluations++;
  PetscFunctionReturn(0);
}

// Per model, the largest raw err of its active starts.
std::vector<double> Largest(const Sides &w, const std::vector<double> &F) {
  std::vector<double> f(w.models, 0.0);
  for (size_t m = 0; m < F.size(); ++m)
    if (w.active[m]) f[m / (size_t)w.S] = std::max(f[m / (size_t)w.S], F[m]);
  for (double &x : f) x = std::sqrt(x);
  return f;
}

// Appends each model's largest raw err to its history; the largest of all.
double Record(const Sides &w, const std::vector<double> &F, std::vector<std::vector<double>> *history) {
  const std::vector<double> f = Largest(w, F);
  history->resize(w.models);
  for (size_t j = 0; j < w.models; ++j) (*history)[j].push_back(f[j]);
  return *std::max_element(f.begin(), f.end());
}

// After the first evaluation: the worst.keep starts of largest objective of
// each model stay active (ties to the earlier start).
void KeepBest(Sides &w, PetscInt keep, const std::vector<double> &F) {
  if (keep <= 0 || keep >= w.S) return;
  for (size_t j = 0; j < w.models; ++j) {
    std::vector<PetscInt> order((size_t)w.S);
    for (PetscInt m = 0; m < w.S; ++m) order[m] = m;
    const double *f = F.data() + j * (size_t)w.S;
    std::stable_sort(order.begin(), order.end(), [&](PetscInt a, PetscInt b) { return f[a] > f[b]; });
    for (PetscInt i = 0; i < w.S; ++i) w.active[j * (size_t)w.S + order[i]] = i < keep;
  }
}

// One ascent step of every active start: it moves its token of largest
// gradient by eta along the gradient (the others in proportion), then back
// into the ball.
std::vector<double> Step(const Sides &w, double radius, const std::vector<double> &X, const std::vector<double> &G,
                         const std::vector<double> &eta) {
  std::vector<double> trial = X;
  for (size_t m = 0; m < w.active.size(); ++m) {
    if (!w.active[m]) continue;
    double gmax = 0;
    for (size_t t = m * w.per; t < (m + 1) * w.per; t += (size_t)w.d) {
      double n2 = 0;
      for (PetscInt c = 0; c < w.d; ++c) n2 += G[t + c] * G[t + c];
      gmax = std::max(gmax, std::sqrt(n2));
    }
    if (gmax > 0)
      for (size_t i = m * w.per; i < (m + 1) * w.per; ++i) trial[i] += eta[m] / gmax * G[i];
  }
  Project(radius, w.d, &trial);
  return trial;
}

// Projected gradient ascent of every active start at once: a step that
// raises its objective is kept and its eta doubles, else eta halves. Ends
// after worst.steps iterations, or when every start's eta is below 1e-9 r.
// history: per model, its largest raw err before the search and after each iteration.
PetscErrorCode Ascend(MPI_Comm comm, const Settings &s, Sides &w, const std::string &progress, std::vector<double> *X,
                      std::vector<double> *F, std::vector<std::vector<double>> *history, PetscInt *iterations) {
  const double radius = s.worst.radius;
  std::vector<double> G, Ft, Gt;
  std::vector<double> eta(w.active.size(), 0.25 * radius);
  PetscFunctionBeginUser;
  const double t0 = seconds();
  PetscCall(Objective(w, *X, F, &G));
  Record(w, *F, history);
  KeepBest(w, s.worst.keep, *F);
  for (PetscInt it = 1; it <= s.worst.steps; ++it) {
    const std::vector<double> trial = Step(w, radius, *X, G, eta);
    PetscCall(Objective(w, trial, &Ft, &Gt));
    PetscInt moved = 0, ascending = 0;
    for (size_t m = 0; m < w.active.size(); ++m) {
      if (!w.active[m]) continue;
      ascending++;
      if (Ft[m] > (*F)[m]) {
        std::copy(trial.begin() + m * w.per, trial.begin() + (m + 1) * w.per, X->begin() + m * w.per);
        std::copy(Gt.begin() + m * w.per, Gt.begin() + (m + 1) * w.per, G.begin() + m * w.per);
        (*F)[m] = Ft[m];
        eta[m] = std::min(2 * eta[m], 1e3 * radius);
        moved++;
      } else {
        eta[m] *= 0.5;
      }
    }
    const double largest = Record(w, *F, history);
    *iterations = it;
    double largest_eta = 0;
    for (size_t m = 0; m < eta.size(); ++m) largest_eta = w.active[m] ? std::max(largest_eta, eta[m]) : largest_eta;
    const bool stalled = largest_eta < 1e-9 * radius;
    if (!progress.empty() && (it % s.worst.log_every == 0 || it == s.worst.steps || stalled)) {
      const double spent = seconds() - t0, left = stalled ? 0.0 : spent / (double)it * (double)(s.worst.steps - it);
      PetscCall(PetscPrintf(comm, "%siteration %5" PetscInt_FMT "/%" PetscInt_FMT "  worst err %.6e  moved %" PetscInt_FMT
                                  "/%" PetscInt_FMT " starts  %.1f s, ETA %.1f s\n",
                            progress.c_str(), it, s.worst.steps, largest, moved, ascending, spent, left));
    }
    if (stalled) break;
  }
  PetscFunctionReturn(0);
}

// The held-out figures of one model at its input found (worst.hpp), from
// its outputs y and the held-out references' outputs Yb there.
void Heldout(const std::vector<double> &y, const std::vector<std::vector<double>> &Yb, PetscInt N, WorstResult *r) {
  r->err = r->raw;
  r->estimator = "raw (search references only)";
  if (Yb.empty()) return;
  r->heldout_output = Mean(Yb, 0, Yb.size());
  for (const auto &yb : Yb) r->heldout_e2.push_back(SquaredDistance(y, yb, y.size(), N)[0]);
  for (size_t a = 0; a < Yb.size(); ++a)
    for (size_t b = a + 1; b < Yb.size(); ++b)
      r->heldout_pairs.push_back(0.5 * SquaredDistance(Yb[a], Yb[b], y.size(), N)[0]);
  const double e2 = SquaredDistance(y, r->heldout_output, y.size(), N)[0];
  r->heldout_raw = std::sqrt(e2);
  r->err = r->heldout_raw;
  r->estimator = "cross-fit raw";
  if (Yb.size() < 2) return;
  double floor2 = 0;
  for (double p : r->heldout_pairs) floor2 += p / (double)r->heldout_pairs.size();
  r->floor = std::sqrt(floor2);
  r->err = std::sqrt(std::max(0.0, e2 - floor2 / (double)Yb.size()));
  r->estimator = "cross-fit corrected";
}

// The figures of every model at its input found: its best start by the
// search objective, scored on the held-out references.
PetscErrorCode Score(Sides &w, const std::vector<double> &X, const std::vector<double> &F, std::vector<WorstResult> *rs) {
  std::vector<std::vector<double>> Y;
  PetscFunctionBeginUser;
  PetscCall(Outputs(w, X, w.total(), &Y));
  const std::vector<double> mean = Mean(Y, w.models, w.searched);
  for (size_t j = 0; j < w.models; ++j) {
    WorstResult &r = (*rs)[j];
    size_t b = w.active.size(); // the active start of largest objective (the first of equals)
    for (size_t m = j * (size_t)w.S; m < (j + 1) * (size_t)w.S; ++m) {
      r.start_err.push_back(w.active[m] ? std::sqrt(std::max(0.0, F[m])) : NAN);
      if (w.active[m] && (b == w.active.size() || F[m] > F[b])) b = m;
    }
    r.best = (PetscInt)(b - j * (size_t)w.S);
    r.raw = std::sqrt(std::max(0.0, F[b]));
    auto slice = [&](const std::vector<double> &v) {
      return std::vector<double>(v.begin() + (std::ptrdiff_t)(b * w.per), v.begin() + (std::ptrdiff_t)((b + 1) * w.per));
    };
    r.tokens = slice(X), r.output = slice(Y[0]), r.reference_output = slice(mean);
    std::vector<std::vector<double>> Yb;
    for (size_t k = w.models + w.searched; k < w.total(); ++k) Yb.push_back(slice(Y[k]));
    Heldout(r.output, Yb, w.N, &r);
  }
  PetscFunctionReturn(0);
}

} // namespace

std::vector<double> WorstStarts(const Settings &s, PetscInt N, PetscInt d, std::vector<std::string> *names) {
  std::vector<double> x;
  names->clear();
  Settings ps = s; // the studies' probe sequences of the families, at this N
  ps.data.N = N, ps.study.probe_N.clear(), ps.study.probe_file.clear();
  std::vector<double> seq((size_t)(N * d));
  for (const study::ProbeSet &p : study::probe_sets(ps)) {
    DataSettings ds = s.data;
    ds.family = p.family, ds.seed = p.seed;
    for (PetscInt m = 0; m < s.study.probe_M; ++m) {
      family_sample(ds, d, m, N, seq.data());
      x.insert(x.end(), seq.begin(), seq.end());
      names->push_back(p.name + "/" + std::to_string(m));
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

PetscErrorCode WorstSearch(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                           const std::vector<WorstSide> &references, const std::string &progress,
                           std::vector<WorstResult> *results) {
  Sides w;
  std::vector<std::string> names;
  std::vector<double> F;
  std::vector<std::vector<double>> history;
  PetscInt iterations = 0;
  PetscFunctionBeginUser;
  const double t0 = seconds();
  const PetscInt d = models.empty() ? 0 : models[0].settings.model.d;
  const std::vector<double> starts = WorstStarts(s, s.data.N, d, &names);
  PetscCall(SidesCreate(comm, s, models, references, (PetscInt)names.size(), &w));
  std::vector<double> X;
  for (size_t j = 0; j < w.models; ++j) X.insert(X.end(), starts.begin(), starts.end());
  PetscCall(Ascend(comm, s, w, progress, &X, &F, &history, &iterations));
  results->assign(w.models, WorstResult());
  for (size_t j = 0; j < w.models; ++j) {
    WorstResult &r = (*results)[j];
    r.N = w.N, r.d = w.d, r.starts = w.S, r.start_names = names;
    r.search_references = (PetscInt)w.searched, r.heldout_references = (PetscInt)w.heldout;
    r.iterations = iterations, r.evaluations = w.evaluations;
    r.objective = history[j], r.initial = history[j][0];
  }
  PetscCall(Score(w, X, F, results));
  PetscCall(SidesDestroy(&w));
  for (WorstResult &r : *results) r.seconds = seconds() - t0;
  PetscFunctionReturn(0);
}

PetscErrorCode WorstObjective(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                              const std::vector<WorstSide> &references, const std::vector<double> &x,
                              std::vector<double> *F, std::vector<double> *G) {
  Sides w;
  PetscFunctionBeginUser;
  const PetscInt per = s.data.N * (models.empty() ? 0 : models[0].settings.model.d);
  PetscCheck(per > 0 && x.size() % ((size_t)per * models.size()) == 0, comm, PETSC_ERR_ARG_SIZ,
             "%zu entries are not whole sequences of every model", x.size());
  PetscCall(SidesCreate(comm, s, models, references, (PetscInt)(x.size() / ((size_t)per * models.size())), &w));
  PetscCall(Objective(w, x, F, G));
  PetscCall(SidesDestroy(&w));
  PetscFunctionReturn(0);
}

} // namespace mft
