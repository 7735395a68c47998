// The error's law at initialisation: the Euler error and the head-sampling
// fluctuation of an L x H model from the limit alone (fluctuation.hpp).
#include "mft/flow/fluctuation.hpp"

#include "mft/flow/limit.hpp"
#include "mft/flow/norm.hpp"
#include "mft/flow/problem.hpp"
#include "mft/kernels/attention.hpp"
#include "mft/layout/random.hpp"

#include <cmath>
#include <numeric>

namespace mft {

double FluctuationResult::predicted(PetscInt H) const {
  double sum = 0;
  for (PetscInt m = 0; m < M; ++m) sum += euler2[m] + fluctuation2[m] / ((double)L * (double)H);
  return M ? std::sqrt(sum / (double)M) : NAN;
}

double FluctuationResult::predicted_se(PetscInt H) const {
  double var = 0; // of the mean over the sequences of E^2 + F^2 / (L H): the F^2 terms' (E^2 has none)
  for (PetscInt m = 0; m < M; ++m) var += std::pow(fluctuation2_se[m] / ((double)L * (double)H * (double)M), 2);
  return std::sqrt(var) / (2 * predicted(H));
}

namespace {

// The limit's two schemes on the probes: the adaptive solve (X) and the
// L-step Euler scheme (X_L) with its states at every layer (t).
struct Schemes {
  Problem adaptive, euler;
  Trajectory t;
  std::vector<double> limit; // X(1), gathered
};

PetscErrorCode SchemesCreate(MPI_Comm comm, const Settings &s, Schemes *x) {
  Settings sa = LimitSettingsFor(s), se = sa;
  PetscFunctionBeginUser;
  sa.scheme.adaptive = true;
  sa.output.trajectory = 0;
  se.scheme.adaptive = false; // model.L Euler steps of the same ensemble
  se.output.trajectory = s.model.L;
  PetscCall(ProblemCreate(comm, sa, &x->adaptive));
  PetscCheck(!x->adaptive.tokens.weighted(), comm, PETSC_ERR_SUP,
             "limit.fluctuation: the error's law of weighted tokens is not derived (give a data file without "
             "/data/weights)");
  PetscCall(VecCopy(x->adaptive.x0, x->adaptive.x1));
  PetscCall(FlowForward(&x->adaptive.flow, x->adaptive.x1));
  PetscCall(GatherAll(x->adaptive.x1, &x->limit));
  PetscCall(ProblemCreate(comm, se, &x->euler));
  PetscCall(ProblemRecordTrajectory(&x->euler, &x->t));
  PetscCall(VecCopy(x->euler.x0, x->euler.x1));
  PetscCall(FlowForward(&x->euler.flow, x->euler.x1));
  PetscFunctionReturn(0);
}

PetscErrorCode SchemesDestroy(Schemes *x) {
  PetscFunctionBeginUser;
  PetscCall(TrajectoryDestroy(&x->t));
  PetscCall(ProblemDestroy(&x->euler));
  PetscCall(ProblemDestroy(&x->adaptive));
  PetscFunctionReturn(0);
}

// Per layer l, gathered: where the heads read the tokens (X_L(l/L), or
// n(X_L(l/L)) under pre) and the ensemble's mean velocity there.
PetscErrorCode Layers(Schemes &x, std::vector<std::vector<double>> *read, std::vector<std::vector<double>> *mean) {
  Problem &p = x.euler;
  const PetscInt L = p.flow.L, d = p.tokens.d;
  const TokenNorm norm = p.settings.model.norm;
  std::vector<double> a, b;
  Vec y;
  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(p.x0, &y));
  read->assign((size_t)L, {}), mean->assign((size_t)L, {});
  for (PetscInt l = 0; l < L; ++l) {
    PetscCall(norm == TokenNorm::pre ? NormRead(x.t.tokens[l], d, y) : VecCopy(x.t.tokens[l], y));
    PetscCall(GatherAll(y, &(*read)[l]));
    if (norm == TokenNorm::sphere) { // the bare velocity the step kept
      PetscCall(GatherAll(p.flow.velocities[l], &(*mean)[l]));
      continue;
    }
    PetscCall(GatherAll(x.t.tokens[l], &a)); // x^{l+1} = x^l + (1/L) v (at n(x^l) under pre)
    PetscCall(GatherAll(x.t.tokens[l + 1], &b));
    (*mean)[l].resize(a.size());
    for (size_t e = 0; e < a.size(); ++e) (*mean)[l][e] = (b[e] - a[e]) * (double)L;
  }
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(0);
}

// The velocity's part of layer l's adjoint after a solve, gathered: the
// adjoint of x^{l+1}, or under sphere what the retraction hands the velocity.
PetscErrorCode VelocityAdjoint(Schemes &x, PetscInt l, std::vector<double> *q) {
  Problem &p = x.euler;
  PetscFunctionBeginUser;
  if (p.settings.model.norm != TokenNorm::sphere) {
    PetscCall(GatherAll(x.t.adjoint[l + 1], q));
    PetscFunctionReturn(0);
  }
  Vec into, out;
  PetscCall(VecDuplicate(p.x0, &into));
  PetscCall(VecDuplicate(p.x0, &out));
  PetscCall(SphereStepTranspose(x.t.tokens[l], p.flow.velocities[l], p.tokens.d, 1.0 / (double)p.flow.L,
                                x.t.adjoint[l + 1], into, out));
  PetscCall(GatherAll(into, q));
  PetscCall(VecDestroy(&into));
  PetscCall(VecDestroy(&out));
  PetscFunctionReturn(0);
}

// Probe vector k of every sequence (all M N d entries): unit vector k of each
// sequence's N d coordinates (exact), or standard normal entries.
std::vector<double> ProbeVector(const Settings &s, bool exact, PetscInt k, size_t n, size_t per) {
  std::vector<double> u(n, 0.0);
  Stream st(s.init.seed, kProbeVector, (std::uint64_t)k);
  for (size_t e = 0; e < n; ++e) u[e] = exact ? (e % per == (size_t)k ? 1.0 : 0.0) : st.normal();
  return u;
}

// g[(k heads + h) M + m] += (q . (Attn_h - vbar))^2 over sequence m at layer
// l, for this rank's share of the sampled heads (theta: all of them).
void AddLayer(const Schemes &x, const std::vector<double> &theta, const std::vector<double> &read,
              const std::vector<double> &mean, const std::vector<double> &q, PetscInt k, PetscInt heads, Range mine,
              std::vector<double> *g) {
  const Problem &p = x.euler;
  const HeadShape &shape = p.heads.shape;
  const PetscInt M = p.tokens.M, N = p.tokens.N, d = p.tokens.d;
  AttentionOptions o;
  o.beta = p.settings.model.beta, o.causal = p.settings.model.causal;
  AttentionWork work;
  work.reserve(shape, N);
  std::vector<double> out((size_t)(N * d));
  for (PetscInt m = 0; m < M; ++m) {
    const size_t first = (size_t)(m * N * d);
    const double qbar = std::inner_product(q.begin() + first, q.begin() + first + N * d, mean.begin() + first, 0.0);
    for (PetscInt h = mine.begin; h < mine.end; ++h) {
      std::fill(out.begin(), out.end(), 0.0);
      attention(shape, theta.data() + h * shape.size, o, read.data() + first, N, Range{0, N}, 1.0, out.data(), work);
      const double a = std::inner_product(out.begin(), out.end(), q.begin() + first, 0.0) - qbar;
      (*g)[((size_t)k * heads + h) * M + m] += a * a;
    }
  }
}

// F^2 of every sequence and its standard error from g (summed over the
// layers): exact, the mean over heads of the sum over the unit vectors;
// else the mean over probes and heads, its error the two ways' (a two-way
// random design: the probes' and the heads' variances of their means).
void Estimate(const std::vector<double> &g, PetscInt K, PetscInt Hs, PetscInt M, bool exact, double c,
              FluctuationResult *r) {
  for (PetscInt m = 0; m < M; ++m) {
    auto at = [&](PetscInt k, PetscInt h) { return g[((size_t)k * Hs + h) * M + m]; };
    std::vector<double> byk((size_t)K, 0.0), byh((size_t)Hs, 0.0);
    for (PetscInt k = 0; k < K; ++k)
      for (PetscInt h = 0; h < Hs; ++h) byk[k] += at(k, h) / (double)Hs, byh[h] += at(k, h) / (exact ? 1.0 : (double)K);
    auto mean = [](const std::vector<double> &v) { return std::accumulate(v.begin(), v.end(), 0.0) / (double)v.size(); };
    auto var_of_mean = [&](const std::vector<double> &v) {
      if (v.size() < 2) return 0.0;
      double s2 = 0, mu = mean(v);
      for (double x : v) s2 += (x - mu) * (x - mu);
      return s2 / (double)(v.size() - 1) / (double)v.size();
    };
    r->fluctuation2.push_back(c * mean(byh));
    r->fluctuation2_se.push_back(c * std::sqrt(var_of_mean(byh) + (exact ? 0.0 : var_of_mean(byk))));
  }
}

} // namespace

PetscErrorCode LimitFluctuation(MPI_Comm comm, const Settings &s, FluctuationResult *r) {
  Schemes x;
  std::vector<double> theta, q, euler;
  std::vector<std::vector<double>> read, mean;
  PetscMPIInt rank, size;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(SchemesCreate(comm, s, &x));
  Problem &p = x.euler;
  const PetscInt M = p.tokens.M, N = p.tokens.N, d = p.tokens.d, L = p.flow.L;
  const bool exact = s.limit.probes == 0;
  const PetscInt K = exact ? N * d : s.limit.probes, Href = p.heads.H;
  const PetscInt Hs = s.limit.sample_heads == 0 ? Href : std::min(s.limit.sample_heads, Href);
  PetscCall(GatherAll(p.heads.theta, &theta)); // the ensemble's heads; this rank takes its share of the sample
  PetscCall(Layers(x, &read, &mean));
  std::vector<double> g((size_t)(K * Hs * M), 0.0);
  const Range mine = split(Hs, size, rank);
  for (PetscInt k = 0; k < K; ++k) { // a forward solve before each adjoint one: it takes the trajectory's states
    if (k > 0) PetscCall(VecCopy(p.x0, p.x1));
    if (k > 0) PetscCall(FlowForward(&p.flow, p.x1));
    PetscCall(SetFromAll(p.adjoint, ProbeVector(s, exact, k, (size_t)(M * N * d), (size_t)(N * d))));
    PetscCall(FlowAdjoint(&p.flow, p.adjoint, p.grad));
    for (PetscInt l = 0; l < L; ++l) {
      PetscCall(VelocityAdjoint(x, l, &q));
      AddLayer(x, theta, read[l], mean[l], q, k, Hs, mine, &g);
    }
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, g.data(), (int)g.size(), MPI_DOUBLE, MPI_SUM, comm));
  *r = FluctuationResult();
  r->M = M, r->N = N, r->L = L, r->probes = K, r->heads = Hs, r->exact = exact;
  Estimate(g, K, Hs, M, exact, 1.0 / ((double)N * (double)L), r);
  PetscCall(GatherAll(p.x1, &euler));
  for (PetscInt m = 0; m < M; ++m) {
    double e2 = 0;
    for (PetscInt e = m * N * d; e < (m + 1) * N * d; ++e) e2 += (euler[e] - x.limit[e]) * (euler[e] - x.limit[e]);
    r->euler2.push_back(e2 / (double)N);
  }
  PetscCall(SchemesDestroy(&x));
  PetscFunctionReturn(0);
}

} // namespace mft
