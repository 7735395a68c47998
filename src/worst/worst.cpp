// The worst input: projected gradient ascent over the ball (or the sphere)
// of sequences or measures, exact gradients from adjoint solves, the
// collapsed start, cross-fitted scoring (worst.hpp).
#include "mft/worst/worst.hpp"

#include "mft/kernels/linalg.hpp"
#include "mft/files/report.hpp"
#include "mft/files/runfile.hpp"

#include <algorithm>
#include <cmath>
#include <list>
#include <numeric>

namespace mft {

namespace {

constexpr double kLeastWeight = 1e-12;     // a measure's weights stay above this (then renormalised)

// The problems of one search: the models, then the search references (A),
// then the held-out ones (B). A model runs its S starts; a reference runs
// every model's, model j's at sequences j S .. (j + 1) S - 1. A start is N
// tokens, or N atoms with their weights (`measure`).
struct Sides {
  std::list<Problem> problems; // Problem is not movable: the flow points into it
  size_t models = 0, searched = 0, heldout = 0;
  PetscInt S = 0, N = 0, d = 0;
  PetscInt common = 0; // the starts every model has (the others are its own: KeepBest)
  size_t per = 0; // entries a start: N d
  bool measure = false, sphere = false;
  PetscInt evaluations = 0;
  std::vector<char> active; // the starts being ascended, all models'
  Problem &at(size_t k) { return *std::next(problems.begin(), (long)k); }
  bool reference(size_t k) const { return k >= models; }
  size_t total() const { return models + searched + heldout; }
};

PetscErrorCode SideCreate(MPI_Comm comm, const Settings &s, const WorstSide &side, PetscInt M, Problem *p) {
  Settings ps = side.settings;
  PetscFunctionBeginUser;
  PetscCheck(ps.model.norm == s.model.norm, comm, PETSC_ERR_USER_INPUT,
             "a worst-input search compares models of one model.norm: %s against %s", to_string(ps.model.norm),
             to_string(s.model.norm));
  PetscCheck(s.worst.atoms == 0 || !ps.model.causal, comm, PETSC_ERR_USER_INPUT,
             "worst.atoms: a measure of weighted atoms has no order, and a causal model (model.causal = true) orders "
             "the tokens");
  ps.data.M = M, ps.data.N = s.worst.atoms > 0 ? s.worst.atoms : s.data.N;
  ps.data.file.clear(), ps.data.heldout.clear();
  ps.data.family = "discrete"; // drawn, then replaced by the search's tokens
  ps.scheme.zero_targets = true; // the scheme is the side's own: a mean-field reference is adaptive
  ps.loss.kind = LossKind::token;
  ps.output.trajectory = 0;
  ps.train.batch = 0;
  ps.parallel = s.parallel;
  PetscCall(ProblemCreate(comm, ps, p));
  if (side.params) {
    PetscCall(SetFromAll(p->heads.theta, side.params->heads));
    if (p->neurons.theta) PetscCall(SetFromAll(p->neurons.theta, side.params->neurons));
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
  w->measure = s.worst.atoms > 0;
  w->sphere = s.model.norm == TokenNorm::sphere;
  w->N = w->measure ? s.worst.atoms : s.data.N, w->d = models[0].settings.model.d, w->per = (size_t)(w->N * w->d);
  w->S = S;
  w->active.assign(w->models * (size_t)S, 1);
  for (size_t k = 0; k < w->total(); ++k) {
    w->problems.emplace_back();
    const bool model = k < w->models;
    PetscCall(SideCreate(comm, s, model ? models[k] : references[k - w->models], model ? S : S * (PetscInt)w->models,
                         &w->problems.back()));
  }
  // The sides live together: each keeps what it may for its adjoint (the
  // softmax statistics) within its part of the rank's share, not all of it.
  for (Problem &p : w->problems)
    if (p.velocity.memory > 0) p.velocity.memory /= (double)w->total();
  PetscFunctionReturn(0);
}

PetscErrorCode SidesDestroy(Sides *w) {
  PetscFunctionBeginUser;
  for (Problem &p : w->problems) PetscCall(ProblemDestroy(&p));
  w->problems.clear();
  PetscFunctionReturn(0);
}

// The sequences side k runs, out of all models' starts (`width` numbers a start).
std::vector<double> SideSlice(const Sides &w, size_t k, const std::vector<double> &all, size_t width) {
  if (w.reference(k)) return all;
  const size_t n = (size_t)w.S * width;
  return std::vector<double>(all.begin() + (std::ptrdiff_t)(k * n), all.begin() + (std::ptrdiff_t)((k + 1) * n));
}

// The inputs of every model's starts: tokens and (measures) weights.
struct Inputs {
  std::vector<double> x, w;
};

// x(1) of sides 0 .. n-1 at the inputs (every model's starts), gathered;
// a model's outputs at its place among all models' (as a reference's).
PetscErrorCode Outputs(Sides &w, const Inputs &in, size_t n, std::vector<std::vector<double>> *Y) {
  std::vector<double> y;
  PetscFunctionBeginUser;
  Y->assign(n, std::vector<double>());
  (*Y)[0].assign(in.x.size(), 0.0);
  for (size_t k = 0; k < n; ++k) {
    Problem &p = w.at(k);
    const size_t first = w.reference(k) ? 0 : k * (size_t)w.S;
    p.active.assign(w.active.begin() + (std::ptrdiff_t)first, w.active.begin() + (std::ptrdiff_t)first + (std::ptrdiff_t)p.tokens.M);
    PetscCall(SetFromAll(p.x0, SideSlice(w, k, in.x, w.per)));
    if (w.measure) p.tokens.weights = SideSlice(w, k, in.w, (size_t)w.N);
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

// Per sequence of `per` numbers (N tokens in R^d), (1/N) sum_i |a_i - b_i|^2,
// or with weights (one a token) sum_i w_i |a_i - b_i|^2.
std::vector<double> SquaredDistance(const std::vector<double> &a, const std::vector<double> &b, size_t per, PetscInt N,
                                    const std::vector<double> &weights = {}) {
  const size_t d = per / (size_t)N;
  std::vector<double> e(a.size() / per, 0.0);
  for (size_t m = 0; m < e.size(); ++m) {
    if (weights.empty()) {
      for (size_t i = m * per; i < (m + 1) * per; ++i) e[m] += (a[i] - b[i]) * (a[i] - b[i]);
      e[m] /= (double)N;
      continue;
    }
    for (size_t i = m * per; i < (m + 1) * per; ++i) e[m] += weights[i / d] * (a[i] - b[i]) * (a[i] - b[i]);
  }
  return e;
}

// The forward half of the objective at the inputs: every model's and
// search reference's outputs at the active starts (Y[0] holds every model's;
// references follow), their mean over the search references, and err^2 per
// start (of every model).
struct Evaluation {
  std::vector<std::vector<double>> Y;
  std::vector<double> mean, F;
};

PetscErrorCode Evaluate(Sides &w, const Inputs &in, Evaluation *e) {
  PetscFunctionBeginUser;
  PetscCall(Outputs(w, in, w.models + w.searched, &e->Y));
  e->mean = Mean(e->Y, w.models, w.searched);
  e->F = SquaredDistance(e->Y[0], e->mean, w.per, w.N, in.w);
  w.evaluations++;
  PetscFunctionReturn(0);
}

// The gradient half, after Evaluate at the same inputs: G in the tokens and
// (measures) GW in the weights of the starts in `which` (one adjoint solve a
// side, the other starts left out of it: their entries zero; worst.hpp).
PetscErrorCode Gradient(Sides &w, const Inputs &in, const Evaluation &e, const std::vector<char> &which,
                        std::vector<double> *G, std::vector<double> *GW) {
  std::vector<double> lam(in.x.size()), g;
  const std::vector<double> &Y0 = e.Y[0], &mean = e.mean;
  PetscFunctionBeginUser;
  G->assign(in.x.size(), 0.0);
  GW->assign(in.w.size(), 0.0);
  if (std::find(which.begin(), which.end(), 1) == which.end()) PetscFunctionReturn(0);
  for (size_t i = 0; i < in.x.size(); ++i) // the objective's own part: |x_i - xbar_i|^2
    if (w.measure) (*GW)[i / (size_t)w.d] += (Y0[i] - mean[i]) * (Y0[i] - mean[i]);
  for (size_t k = 0; k < w.models + w.searched; ++k) {
    Problem &p = w.at(k);
    const size_t first = w.reference(k) ? 0 : k * (size_t)w.S;
    p.active.assign(which.begin() + (std::ptrdiff_t)first, which.begin() + (std::ptrdiff_t)first + (std::ptrdiff_t)p.tokens.M);
    // p(1) = 2 w_i (x - xbar), or -2 w_i (x - xbar) / |A|; a sequence's w_i = 1/N in the scale.
    const double n = w.measure ? 1.0 : (double)w.N;
    const double scale = w.reference(k) ? -2.0 / (n * (double)w.searched) : 2.0 / n;
    for (size_t i = 0; i < lam.size(); ++i) lam[i] = scale * (w.measure ? in.w[i / (size_t)w.d] : 1.0) * (Y0[i] - mean[i]);
    PetscCall(SetFromAll(p.adjoint, SideSlice(w, k, lam, w.per)));
    PetscCall(FlowAdjoint(&p.flow, p.adjoint, p.grad));
    PetscCall(GatherAll(p.adjoint, &g));
    for (size_t i = 0; i < g.size(); ++i) (*G)[first * w.per + i] += g[i];
    for (size_t i = 0; w.measure && i < p.flow.weight_grad.size(); ++i)
      (*GW)[first * (size_t)w.N + i] += p.flow.weight_grad[i];
  }
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

// After the first evaluation: of each model's `common` starts (the first),
// the worst.keep of largest objective stay active (ties to the earlier
// start), and so do its own starts after them (the collapsed input, an
// earlier one): an earlier input, whose objective is that search's figure,
// would otherwise take the place of every fresh start.
void KeepBest(Sides &w, PetscInt keep, PetscInt common, const std::vector<double> &F) {
  if (keep <= 0 || keep >= common) return;
  for (size_t j = 0; j < w.models; ++j) {
    std::vector<PetscInt> order((size_t)common);
    std::iota(order.begin(), order.end(), 0);
    const double *f = F.data() + j * (size_t)w.S;
    std::stable_sort(order.begin(), order.end(), [&](PetscInt a, PetscInt b) { return f[a] > f[b]; });
    for (PetscInt i = 0; i < common; ++i) w.active[j * (size_t)w.S + order[i]] = i < keep;
  }
}

// A measure's weights moved by the exponentiated gradient (worst.hpp): w_j
// exp(tau (dF/dw_j / F - 1)), kept above kLeastWeight, renormalised.
void StepWeights(double tau, double F, const double *gw, PetscInt n, double *weights) {
  if (!(F > 0)) return; // nothing to scale by at an input of no error
  double sum = 0;
  for (PetscInt j = 0; j < n; ++j) {
    weights[j] *= std::exp(std::clamp(tau * (gw[j] / F - 1.0), -50.0, 50.0));
    sum += (weights[j] = std::max(weights[j], kLeastWeight));
  }
  for (PetscInt j = 0; j < n; ++j) weights[j] /= sum;
}

// One ascent step of every active start: it moves its token of largest
// gradient by eta along the gradient (the others in proportion; a measure's
// atoms by the gradient per unit of mass, its weights by StepWeights with
// tau = eta / r), then back into the domain. On the sphere the gradient's
// part tangent to it.
Inputs Step(const Sides &w, const Settings &s, const Inputs &X, const std::vector<double> &G,
            const std::vector<double> &GW, const std::vector<double> &F, const std::vector<double> &eta) {
  Inputs trial = X;
  std::vector<double> g((size_t)w.d);
  for (size_t m = 0; m < w.active.size(); ++m) {
    if (!w.active[m]) continue;
    auto direction = [&](size_t t) { // token t's: the gradient (per unit of mass, tangent to the sphere)
      const double mass = w.measure ? X.w[t / (size_t)w.d] : 1.0;
      double xg = 0;
      for (PetscInt c = 0; c < w.d; ++c) xg += w.sphere ? X.x[t + c] * G[t + c] : 0.0;
      for (PetscInt c = 0; c < w.d; ++c) g[c] = (G[t + c] - xg * X.x[t + c]) / mass;
    };
    double gmax = 0;
    for (size_t t = m * w.per; t < (m + 1) * w.per; t += (size_t)w.d) {
      direction(t);
      double n2 = 0;
      for (double v : g) n2 += v * v;
      gmax = std::max(gmax, std::sqrt(n2));
    }
    for (size_t t = m * w.per; gmax > 0 && t < (m + 1) * w.per; t += (size_t)w.d) {
      direction(t);
      for (PetscInt c = 0; c < w.d; ++c) trial.x[t + c] += eta[m] / gmax * g[c];
    }
    if (w.measure)
      StepWeights(eta[m] / s.worst.radius, F[m], GW.data() + m * w.N, w.N, trial.w.data() + m * w.N);
  }
  WorstProject(s, w.d, &trial.x);
  return trial;
}

// A start's entries of the trial (tokens, weights, gradients) taken.
void Accept(const Sides &w, size_t m, const Inputs &trial, const std::vector<double> &Gt,
            const std::vector<double> &GWt, Inputs *X, std::vector<double> *G, std::vector<double> *GW) {
  std::copy(trial.x.begin() + m * w.per, trial.x.begin() + (m + 1) * w.per, X->x.begin() + m * w.per);
  std::copy(Gt.begin() + m * w.per, Gt.begin() + (m + 1) * w.per, G->begin() + m * w.per);
  if (!w.measure) return;
  std::copy(trial.w.begin() + m * w.N, trial.w.begin() + (m + 1) * w.N, X->w.begin() + m * w.N);
  std::copy(GWt.begin() + m * w.N, GWt.begin() + (m + 1) * w.N, GW->begin() + m * w.N);
}

// Projected gradient ascent of every active start at once: a step that
// raises its objective is kept and its eta doubles, else eta halves. Ends
// after worst.steps iterations, or when every start's eta is below 1e-9 r.
// The gradient is taken only where it is used: of the starts kept after the
// first evaluation, then of the steps accepted. history: per model, its
// largest raw err before the search and after each iteration; F0: every
// start's objective before the search.
PetscErrorCode Ascend(MPI_Comm comm, const Settings &s, Sides &w, const std::string &progress, Inputs *X,
                      std::vector<double> *F, std::vector<double> *F0, std::vector<std::vector<double>> *history,
                      PetscInt *iterations) {
  const double radius = s.worst.radius;
  std::vector<double> G, GW, Gt, GWt;
  std::vector<double> eta(w.active.size(), 0.25 * radius);
  Evaluation e;
  PetscFunctionBeginUser;
  const double t0 = seconds();
  PetscCall(Evaluate(w, *X, &e));
  *F = *F0 = e.F;
  Record(w, *F, history);
  KeepBest(w, s.worst.keep, w.common, *F);
  PetscCall(Gradient(w, *X, e, w.active, &G, &GW));
  for (PetscInt it = 1; it <= s.worst.steps; ++it) {
    const Inputs trial = Step(w, s, *X, G, GW, *F, eta);
    PetscCall(Evaluate(w, trial, &e));
    std::vector<char> accepted(w.active.size(), 0);
    PetscInt moved = 0, ascending = 0;
    for (size_t m = 0; m < w.active.size(); ++m) {
      if (!w.active[m]) continue;
      ascending++;
      accepted[m] = e.F[m] > (*F)[m];
      moved += accepted[m];
      eta[m] = accepted[m] ? std::min(2 * eta[m], 1e3 * radius) : 0.5 * eta[m];
    }
    PetscCall(Gradient(w, trial, e, accepted, &Gt, &GWt));
    for (size_t m = 0; m < w.active.size(); ++m)
      if (accepted[m]) {
        Accept(w, m, trial, Gt, GWt, X, &G, &GW);
        (*F)[m] = e.F[m];
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
  auto e2 = [&](const std::vector<double> &a, const std::vector<double> &b) {
    return SquaredDistance(a, b, a.size(), N, r->weights)[0];
  };
  r->err = r->raw;
  r->estimator = "raw (search references only)";
  if (Yb.empty()) return;
  r->heldout_output = Mean(Yb, 0, Yb.size());
  for (const auto &yb : Yb) r->heldout_e2.push_back(e2(y, yb));
  for (size_t a = 0; a < Yb.size(); ++a)
    for (size_t b = a + 1; b < Yb.size(); ++b) r->heldout_pairs.push_back(0.5 * e2(Yb[a], Yb[b]));
  const double e = e2(y, r->heldout_output);
  r->heldout_raw = std::sqrt(e);
  r->err = r->heldout_raw;
  r->estimator = "cross-fit raw";
  if (Yb.size() < 2) return;
  double floor2 = 0;
  for (double p : r->heldout_pairs) floor2 += p / (double)r->heldout_pairs.size();
  r->floor = std::sqrt(floor2);
  r->err = std::sqrt(std::max(0.0, e - floor2 / (double)Yb.size()));
  r->estimator = "cross-fit corrected";
}

// The figures of every model at its input found: its best start by the
// search objective, scored on the held-out references.
PetscErrorCode Score(Sides &w, const Inputs &X, const std::vector<double> &F, std::vector<WorstResult> *rs) {
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
    auto slice = [&](const std::vector<double> &v, size_t width) {
      return std::vector<double>(v.begin() + (std::ptrdiff_t)(b * width), v.begin() + (std::ptrdiff_t)((b + 1) * width));
    };
    r.tokens = slice(X.x, w.per), r.output = slice(Y[0], w.per), r.reference_output = slice(mean, w.per);
    if (w.measure) r.weights = slice(X.w, (size_t)w.N);
    std::vector<std::vector<double>> Yb;
    for (size_t k = w.models + w.searched; k < w.total(); ++k) Yb.push_back(slice(Y[k], w.per));
    Heldout(r.output, Yb, w.N, &r);
  }
  PetscFunctionReturn(0);
}

// The search: the common starts, then each model's own (`own`), ascended
// and scored.
PetscErrorCode Search(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                      const std::vector<WorstSide> &references, const std::string &progress,
                      const std::vector<ModelStart> &own, std::vector<WorstResult> *results) {
  Sides w;
  std::vector<std::string> names;
  std::vector<double> F, F0, weights;
  std::vector<std::vector<double>> history;
  PetscInt iterations = 0;
  PetscFunctionBeginUser;
  const double t0 = seconds();
  const PetscInt d = models[0].settings.model.d, n = s.worst.atoms > 0 ? s.worst.atoms : s.data.N;
  const bool measure = s.worst.atoms > 0;
  const std::vector<double> starts = WorstStarts(s, n, d, measure, &names, &weights);
  const PetscInt common = (PetscInt)names.size();
  for (const ModelStart &o : own) names.push_back(o.name);
  PetscCall(SidesCreate(comm, s, models, references, (PetscInt)names.size(), &w));
  w.common = common;
  Inputs X;
  for (size_t j = 0; j < w.models; ++j) {
    X.x.insert(X.x.end(), starts.begin(), starts.end());
    X.w.insert(X.w.end(), weights.begin(), weights.end());
    for (const ModelStart &o : own) {
      X.x.insert(X.x.end(), o.inputs[j].tokens.begin(), o.inputs[j].tokens.end());
      X.w.insert(X.w.end(), o.inputs[j].weights.begin(), o.inputs[j].weights.end());
    }
  }
  PetscCall(Ascend(comm, s, w, progress, &X, &F, &F0, &history, &iterations));
  results->assign(w.models, WorstResult());
  for (size_t j = 0; j < w.models; ++j) {
    WorstResult &r = (*results)[j];
    r.N = w.N, r.d = w.d, r.starts = w.S, r.start_names = names, r.measure = measure;
    r.search_references = (PetscInt)w.searched, r.heldout_references = (PetscInt)w.heldout;
    r.iterations = iterations, r.evaluations = w.evaluations;
    r.objective = history[j], r.initial = history[j][0];
    const auto collapsed = std::find(names.begin(), names.end(), "collapsed") - names.begin();
    if ((size_t)collapsed < names.size()) r.collapsed = std::sqrt(std::max(0.0, F0[j * (size_t)w.S + collapsed]));
  }
  PetscCall(Score(w, X, F, results));
  PetscCall(SidesDestroy(&w));
  for (WorstResult &r : *results) r.seconds = seconds() - t0;
  PetscFunctionReturn(0);
}

// The one-token difference of every model with model.norm = none: D = the
// model's one-token map minus the search references' mean map (every layer
// is linear on one token), from their outputs at the d tokens r e_c; the
// collapsed token r v, v D's top right singular vector.
PetscErrorCode CollapsedLinear(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                               const std::vector<WorstSide> &references, std::vector<std::vector<double>> *tokens) {
  Settings one = s;
  one.data.N = 1, one.worst.atoms = 0;
  Sides w;
  std::vector<std::vector<double>> Y;
  const PetscInt d = models[0].settings.model.d;
  const double r = s.worst.radius;
  PetscFunctionBeginUser;
  PetscCall(SidesCreate(comm, one, models, references, d, &w));
  Inputs X;
  for (size_t j = 0; j < w.models; ++j)
    for (PetscInt c = 0; c < d; ++c)
      for (PetscInt e = 0; e < d; ++e) X.x.push_back(c == e ? r : 0.0);
  PetscCall(Outputs(w, X, w.models + w.searched, &Y));
  const std::vector<double> mean = Mean(Y, w.models, w.searched);
  PetscCall(SidesDestroy(&w));
  tokens->assign(models.size(), std::vector<double>());
  for (size_t j = 0; j < models.size(); ++j) {
    std::vector<double> D((size_t)(d * d)), DtD((size_t)(d * d), 0.0), lambda, vectors; // D[row][c]: column c = D e_c
    for (PetscInt c = 0; c < d; ++c)
      for (PetscInt row = 0; row < d; ++row) {
        const size_t at = (j * (size_t)d + (size_t)c) * (size_t)d + (size_t)row;
        D[row * d + c] = (Y[0][at] - mean[at]) / r;
      }
    for (PetscInt a = 0; a < d; ++a)
      for (PetscInt b = 0; b < d; ++b)
        for (PetscInt row = 0; row < d; ++row) DtD[a * d + b] += D[row * d + a] * D[row * d + b];
    PetscCall(SymmetricEigenvalues(DtD, d, &lambda, &vectors));
    (*tokens)[j].assign(vectors.end() - d, vectors.end()); // the largest eigenvalue's
    for (double &v : (*tokens)[j]) v *= r;
  }
  PetscFunctionReturn(0);
}

// Every model's collapsed token: CollapsedLinear's (model.norm = none), or
// the best input of a one-token search from the common starts and +-r e_c
// (sphere, pre: the one-token map is not linear).
PetscErrorCode Collapsed(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                         const std::vector<WorstSide> &references, std::vector<std::vector<double>> *tokens) {
  const PetscInt d = models[0].settings.model.d;
  PetscFunctionBeginUser;
  if (s.model.norm == TokenNorm::none) PetscFunctionReturn(CollapsedLinear(comm, s, models, references, tokens));
  Settings one = s;
  one.data.N = 1, one.worst.atoms = 0;
  std::vector<ModelStart> axes;
  for (PetscInt c = 0; c < 2 * d; ++c) {
    WorstInput e{std::vector<double>((size_t)d, 0.0), {}};
    e.tokens[c / 2] = c % 2 ? -s.worst.radius : s.worst.radius;
    WorstProject(one, d, &e.tokens);
    axes.push_back({"axis/" + std::to_string(c), std::vector<WorstInput>(models.size(), e)});
  }
  std::vector<WorstResult> found;
  PetscCall(Search(comm, one, models, references, "", axes, &found));
  tokens->clear();
  for (const WorstResult &r : found) tokens->push_back(r.tokens);
  PetscFunctionReturn(0);
}

// Each model's own starts: the collapsed input, and an earlier input (from)
// as it is and perturbed (WorstStartsFrom).
PetscErrorCode OwnStarts(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                         const std::vector<WorstSide> &references, const std::vector<WorstInput> &from,
                         std::vector<ModelStart> *own) {
  const PetscInt d = models[0].settings.model.d, n = s.worst.atoms > 0 ? s.worst.atoms : s.data.N;
  const bool measure = s.worst.atoms > 0;
  std::vector<std::vector<double>> collapsed;
  PetscFunctionBeginUser;
  PetscCall(Collapsed(comm, s, models, references, &collapsed));
  own->assign(1, ModelStart{"collapsed", {}});
  for (const std::vector<double> &token : collapsed) {
    own->back().inputs.emplace_back();
    PetscCall(WorstInputAs(comm, WorstInput{token, {}}, d, n, measure, "the collapsed input", &own->back().inputs.back()));
  }
  std::vector<ModelStart> earlier;
  PetscCall(WorstStartsFrom(comm, s, d, from, own->front().inputs, &earlier));
  own->insert(own->end(), earlier.begin(), earlier.end());
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode WorstSearch(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                           const std::vector<WorstSide> &references, const std::string &progress,
                           std::vector<WorstResult> *results, const std::vector<WorstInput> &from) {
  std::vector<ModelStart> own;
  PetscFunctionBeginUser;
  PetscCheck(!models.empty(), comm, PETSC_ERR_ARG_SIZ, "the worst input of no model");
  const double t0 = seconds();
  PetscCall(WorstSearchFits(comm, s, models, references, from.empty() ? 1 : 3));
  PetscCall(OwnStarts(comm, s, models, references, from, &own));
  Settings run = s;
  run.worst.steps = WorstSteps(s);
  PetscCall(Search(comm, run, models, references, progress, own, results));
  for (WorstResult &r : *results) r.seconds = seconds() - t0;
  if (!s.worst.check) PetscFunctionReturn(0);
  Settings twice = run; // the budget check: the same starts and twice as many, twice the steps
  twice.worst.starts *= 2, twice.worst.steps *= 2, twice.worst.keep *= 2;
  std::vector<WorstResult> again;
  PetscCall(Search(comm, twice, models, references, progress.empty() ? "" : progress + "check: ", own, &again));
  for (size_t j = 0; j < results->size(); ++j) {
    (*results)[j].check_raw = again[j].raw;
    (*results)[j].check_gain = again[j].raw / (*results)[j].raw - 1.0;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode WorstObjective(MPI_Comm comm, const Settings &s, const std::vector<WorstSide> &models,
                              const std::vector<WorstSide> &references, const std::vector<double> &x,
                              const std::vector<double> &weights, std::vector<double> *F, std::vector<double> *G,
                              std::vector<double> *GW) {
  Sides w;
  PetscFunctionBeginUser;
  const PetscInt n = s.worst.atoms > 0 ? s.worst.atoms : s.data.N;
  const PetscInt per = n * (models.empty() ? 0 : models[0].settings.model.d);
  PetscCheck(per > 0 && x.size() % ((size_t)per * models.size()) == 0, comm, PETSC_ERR_ARG_SIZ,
             "%zu entries are not whole sequences of every model", x.size());
  PetscCall(SidesCreate(comm, s, models, references, (PetscInt)(x.size() / ((size_t)per * models.size())), &w));
  const Inputs in{x, weights};
  Evaluation e;
  PetscCall(Evaluate(w, in, &e));
  PetscCall(Gradient(w, in, e, w.active, G, GW));
  *F = e.F;
  PetscCall(SidesDestroy(&w));
  PetscFunctionReturn(0);
}

} // namespace mft
