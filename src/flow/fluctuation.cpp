// The error's law at initialisation: the Euler error and the head-sampling
// fluctuation of an L x H model from the limit alone (fluctuation.hpp).
#include "mft/flow/fluctuation.hpp"

#include "mft/flow/limit.hpp"
#include "mft/flow/norm.hpp"
#include "mft/flow/problem.hpp"
#include "mft/kernels/attention.hpp"
#include "mft/kernels/linalg.hpp"
#include "mft/layout/random.hpp"

#include <algorithm>
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

// The limit's schemes on the probes: the adaptive solve's X(1) (given, or
// solved and let go), the L-step Euler scheme (X_L) with its states at every
// layer (t), and the scheme the probes' adjoints sweep back through: X_L's,
// or with limit.adjoint_heads the Euler scheme of the ensemble's first heads
// (`tangent`; its tangent map is X_L's to O(adjoint_heads^-1/2), which moves
// F_L^2 only at second order).
struct Schemes {
  Problem adaptive, euler, tangent;
  Problem *sweep = &euler;
  Trajectory t;
  std::vector<double> limit; // X(1), gathered
};

PetscErrorCode SchemesCreate(MPI_Comm comm, const Settings &s, const std::vector<double> *limit, Schemes *x) {
  Settings sa = LimitSettingsFor(s), se = sa;
  PetscFunctionBeginUser;
  sa.scheme.adaptive = true;
  sa.output.trajectory = 0;
  se.scheme.adaptive = false; // model.L Euler steps of the same ensemble
  se.output.trajectory = s.model.L;
  PetscCall(ProblemCreate(comm, se, &x->euler));
  PetscCheck(!x->euler.tokens.weighted(), comm, PETSC_ERR_USER_INPUT,
             "limit.fluctuation: the error's law of weighted tokens is not derived (give a data file without "
             "/data/weights)");
  PetscCall(ProblemRecordTrajectory(&x->euler, &x->t));
  PetscCall(VecCopy(x->euler.x0, x->euler.x1));
  PetscCall(FlowForward(&x->euler.flow, x->euler.x1));
  if (s.limit.adjoint_heads > 0 && s.limit.adjoint_heads < se.model.H) {
    Settings st = se;
    st.model.H = s.limit.adjoint_heads; // heads are drawn by index: the ensemble's first ones
    st.output.trajectory = 0;
    PetscCall(ProblemCreate(comm, st, &x->tangent));
    PetscCall(VecCopy(x->tangent.x0, x->tangent.x1));
    PetscCall(FlowForward(&x->tangent.flow, x->tangent.x1));
    x->sweep = &x->tangent;
  }
  if (limit) {
    x->limit = *limit;
    PetscFunctionReturn(0);
  }
  PetscCall(ProblemCreate(comm, sa, &x->adaptive));
  PetscCall(VecCopy(x->adaptive.x0, x->adaptive.x1));
  PetscCall(FlowForward(&x->adaptive.flow, x->adaptive.x1));
  PetscCall(GatherAll(x->adaptive.x1, &x->limit));
  PetscCall(ProblemDestroy(&x->adaptive));
  PetscFunctionReturn(0);
}

PetscErrorCode SchemesDestroy(Schemes *x) {
  PetscFunctionBeginUser;
  PetscCall(TrajectoryDestroy(&x->t));
  PetscCall(ProblemDestroy(&x->euler));
  if (x->sweep == &x->tangent) PetscCall(ProblemDestroy(&x->tangent));
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

// The velocity's part of layer l's adjoint, gathered, from lam the adjoint of
// x^{l+1}: lam itself, or under sphere what the retraction hands the velocity.
PetscErrorCode VelocityAdjoint(Schemes &x, PetscInt l, Vec lam, std::vector<double> *q) {
  Problem &p = x.euler;
  PetscFunctionBeginUser;
  if (p.settings.model.norm != TokenNorm::sphere) {
    PetscCall(GatherAll(lam, q));
    PetscFunctionReturn(0);
  }
  Vec into, out;
  PetscCall(VecDuplicate(p.x0, &into));
  PetscCall(VecDuplicate(p.x0, &out));
  PetscCall(SphereStepTranspose(x.t.tokens[l], p.flow.velocities[l], p.tokens.d, 1.0 / (double)p.flow.L, lam, into,
                                out));
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

// g[(k heads + h) M + m] += (q_k . (Attn_h - vbar))^2 over sequence m at
// layer l, for every probe k and this rank's share of the sampled heads
// (theta: all of them): each head's velocity once, against every q_k. With
// `gram` (the exact trace: q_k . w is coordinate k of w = J D dv), also the
// upper triangle of sum over heads of w w^T, sequence m's at [m K^2, (m + 1) K^2).
void AddLayer(const Schemes &x, const std::vector<double> &theta, const std::vector<double> &read,
              const std::vector<double> &mean, const std::vector<std::vector<double>> &q, PetscInt heads, Range mine,
              std::vector<double> *g, std::vector<double> *gram) {
  const Problem &p = x.euler;
  const HeadShape &shape = p.heads.shape;
  const PetscInt M = p.tokens.M, N = p.tokens.N, d = p.tokens.d;
  const size_t K = q.size();
  AttentionOptions o;
  o.beta = LogitScale(p.settings.model), o.causal = p.settings.model.causal;
  AttentionWork work;
  work.reserve(shape, N);
  std::vector<double> out((size_t)(N * d)), a(K);
  for (PetscInt m = 0; m < M; ++m) {
    const size_t first = (size_t)(m * N * d);
    for (PetscInt h = mine.begin; h < mine.end; ++h) {
      std::fill(out.begin(), out.end(), 0.0);
      attention(shape, theta.data() + h * shape.size, o, read.data() + first, N, Range{0, N}, 1.0, out.data(), work);
      for (size_t e = 0; e < out.size(); ++e) out[e] -= mean[first + e];
      for (size_t k = 0; k < K; ++k) {
        a[k] = std::inner_product(out.begin(), out.end(), q[k].begin() + first, 0.0);
        (*g)[(k * heads + h) * M + m] += a[k] * a[k];
      }
      for (size_t j = 0; gram && j < K; ++j)
        for (size_t k = j; k < K; ++k) (*gram)[m * K * K + j * K + k] += a[j] * a[k];
    }
  }
}

// Sequence m's covariance G = (1/L) E_theta sum_l w w^T (exact trace only:
// F_L^2 = tr G / N) as its eigenvalues, and the Euler error X_L(1) - X(1) in
// its eigenvectors (FluctuationResult::spectrum, euler_coords).
PetscErrorCode Spectra(const std::vector<double> &gram, double scale, const std::vector<double> &euler,
                       const std::vector<double> &limit, PetscInt M, PetscInt n, FluctuationResult *r) {
  std::vector<double> G((size_t)(n * n)), values, vectors;
  PetscFunctionBeginUser;
  for (PetscInt m = 0; m < M; ++m) {
    for (PetscInt e = 0; e < n * n; ++e) G[e] = scale * gram[m * n * n + e];
    PetscCall(SymmetricEigenvalues(G, n, &values, &vectors));
    for (PetscInt i = 0; i < n; ++i) {
      double c = 0;
      for (PetscInt e = 0; e < n; ++e) c += vectors[i * n + e] * (euler[m * n + e] - limit[m * n + e]);
      r->spectrum.push_back(std::max(values[i], 0.0)), r->euler_coords.push_back(c);
    }
  }
  PetscFunctionReturn(0);
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

FluctuationCost FluctuationPrice(const Settings &s, PetscInt M, PetscInt N, PetscInt P) {
  const double d = (double)s.model.d, L = (double)s.model.L, m = (double)M, n = (double)N;
  const bool exact = s.limit.probes == 0;
  const double K = exact ? n * d : (double)s.limit.probes, Href = (double)s.limit.heads;
  const double Hs = s.limit.sample_heads == 0 ? Href : std::min((double)s.limit.sample_heads, Href);
  const double Ha = s.limit.adjoint_heads == 0 ? Href : std::min((double)s.limit.adjoint_heads, Href);
  const UnitOperations unit = CountUnit(s.model, N, 0, N, n);
  FluctuationCost c;
  c.probes = (PetscInt)K;
  c.bytes = 8.0 * (K * m * n * d * (1.0 + 1.0 / (double)P) + K * Hs * m + (exact ? m * K * K : 0.0) +
                   (3.0 * L + 2.0) * m * n * d);
  const double sweep = L * K * Ha * m * unit.reverse;                                           // the probes' adjoints
  const double heads = L * Hs / (double)P * m * (unit.forward + 2.0 * K * n * d + (exact ? K * K : 0.0)); // every head
  const double spectra = exact ? 10.0 * m * K * K * K : 0.0;
  c.seconds = (sweep + heads + spectra) / s.parallel.rate;
  return c;
}

PetscErrorCode FluctuationPriceCheck(MPI_Comm comm, const Settings &s) {
  PetscMPIInt size, sharing;
  double available;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(NodeMemory(comm, &available, &sharing));
  double share = available / (double)sharing;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &share, 1, MPI_DOUBLE, MPI_MIN, comm));
  const FluctuationCost c = FluctuationPrice(s, s.data.M, s.data.N, size);
  const bool exact = s.limit.probes == 0;
  PetscCheck(c.bytes <= share, comm, PETSC_ERR_USER_INPUT,
             "limit.fluctuation would hold %.3g GiB a rank (%s%" PetscInt_FMT " probe vectors of %" PetscInt_FMT
             " x %" PetscInt_FMT " tokens in R^%" PetscInt_FMT ", each whole on every rank%s), more than the %.3g GiB "
             "a rank has, and take about %.3g s: %s",
             c.bytes / 1073741824.0, exact ? "the exact trace: N d = " : "", c.probes, s.data.M, s.data.N, s.model.d,
             exact ? ", and their M (N d)^2 covariance" : "", share / 1073741824.0, c.seconds,
             exact ? "set limit.probes (Gaussian probes, e.g. 64: a few percent of error) or take fewer tokens"
                   : "take fewer limit.probes or fewer tokens");
  PetscCall(PetscPrintf(comm,
                        "limit.fluctuation: %" PetscInt_FMT " %s probe vectors, predicted %.3g s and %.3g GiB a rank "
                        "(at parallel.rate %.3g operations a second)\n",
                        c.probes, exact ? "unit" : "Gaussian", c.seconds, c.bytes / 1073741824.0, s.parallel.rate));
  PetscFunctionReturn(0);
}

PetscErrorCode LimitFluctuation(MPI_Comm comm, const Settings &s, FluctuationResult *r,
                                const std::vector<double> *limit) {
  Schemes x;
  std::vector<double> theta, euler;
  std::vector<std::vector<double>> read, mean;
  PetscMPIInt rank, size;
  Vec *lam;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(SchemesCreate(comm, s, limit, &x));
  Problem &p = x.euler;
  const PetscInt M = p.tokens.M, N = p.tokens.N, d = p.tokens.d, L = p.flow.L;
  const bool exact = s.limit.probes == 0;
  const PetscInt K = exact ? N * d : s.limit.probes, Href = p.heads.H;
  const PetscInt Hs = s.limit.sample_heads == 0 ? Href : std::min(s.limit.sample_heads, Href);
  PetscCall(GatherAll(p.heads.theta, &theta)); // the ensemble's heads; this rank takes its share of the sample
  PetscCall(Layers(x, &read, &mean));
  std::vector<double> g((size_t)(K * Hs * M), 0.0), gram(exact ? (size_t)(M * K * K) : 0, 0.0);
  const Range mine = split(Hs, size, rank);
  PetscCall(VecDuplicateVecs(x.sweep->adjoint, K, &lam));
  for (PetscInt k = 0; k < K; ++k)
    PetscCall(SetFromAll(lam[k], ProbeVector(s, exact, k, (size_t)(M * N * d), (size_t)(N * d))));
  std::vector<std::vector<double>> q((size_t)K);
  auto visit = [&](PetscInt step, const Vec *at) -> PetscErrorCode { // the adjoints of x^step: layer step - 1's
    if (step == 0) return 0;
    for (PetscInt k = 0; k < K; ++k) PetscCall(VelocityAdjoint(x, step - 1, at[k], &q[k]));
    AddLayer(x, theta, read[step - 1], mean[step - 1], q, Hs, mine, &g, exact ? &gram : nullptr);
    return 0;
  };
  PetscCall(FlowAdjointStates(&x.sweep->flow, K, lam, visit)); // every probe vector in one backward sweep
  PetscCall(VecDestroyVecs(K, &lam));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, g.data(), (int)g.size(), MPI_DOUBLE, MPI_SUM, comm));
  if (exact) PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, gram.data(), (int)gram.size(), MPI_DOUBLE, MPI_SUM, comm));
  *r = FluctuationResult();
  r->M = M, r->N = N, r->L = L, r->probes = K, r->heads = Hs, r->exact = exact;
  Estimate(g, K, Hs, M, exact, 1.0 / ((double)N * (double)L), r);
  PetscCall(GatherAll(p.x1, &euler));
  for (PetscInt m = 0; m < M; ++m) {
    double e2 = 0;
    for (PetscInt e = m * N * d; e < (m + 1) * N * d; ++e) e2 += (euler[e] - x.limit[e]) * (euler[e] - x.limit[e]);
    r->euler2.push_back(e2 / (double)N);
  }
  if (exact) PetscCall(Spectra(gram, 1.0 / ((double)L * (double)Hs), euler, x.limit, M, K, r));
  PetscCall(SchemesDestroy(&x));
  PetscFunctionReturn(0);
}

} // namespace mft
