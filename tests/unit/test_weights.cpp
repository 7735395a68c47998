// Weighted tokens (docs/model.md, 'Token measures'): a sequence of K atoms
// a_j with weights w_j is the measure sum_j w_j delta_{a_j}. Checked against
// independent truths: the blocked kernels against the plain ones (forward,
// reverse and the weights' gradient); integer multiplicities w_j = n_j / N
// against the sequence that repeats atom j n_j times (outputs, risk, head
// and token gradients, every head kind, loss and norm, and the adaptive
// limit); the weights' gradient against central differences of the risk
// (the L-layer model and the adaptive limit); the run on all ranks, cut
// sequences shared as tokens and as projections, against the run on one.
// ctest runs them as weights_np1 and weights_np3.
#include "helpers.hpp"
#include "mft/kernels/attention.hpp"
#include "mft/flow/limit.hpp"
#include "mft/layout/random.hpp"

#include <cmath>
#include <numeric>

using namespace mft;
using namespace mft::test;

namespace {

// Positive weights summing to 1 in each row of n, from stream `seed`.
std::vector<double> random_weights(PetscInt rows, PetscInt n, std::uint64_t seed) {
  Stream r(43, seed);
  std::vector<double> w((size_t)(rows * n));
  for (PetscInt m = 0; m < rows; ++m) {
    double sum = 0;
    for (PetscInt j = 0; j < n; ++j) sum += (w[m * n + j] = 0.2 + r.uniform());
    for (PetscInt j = 0; j < n; ++j) w[m * n + j] /= sum;
  }
  return w;
}

// The blocked kernels against the plain ones with weighted keys, at once and
// in tiles, with and without the forward's statistics: the forward to 1e-13,
// the reverse and the weights' gradient to 1e-12.
TEST(Weights, KernelsEqualPlain) {
  const PetscInt N = 150, d = 5, k = 3;
  for (HeadKind kind : {HeadKind::qkv, HeadKind::qkvo}) {
    const HeadShape s = head_shape(kind, d, k);
    AttentionOptions o;
    o.beta = 0.9;
    Stream r(42, 7);
    std::vector<double> theta(s.size), x(N * d), lam(N * d);
    for (auto &t : theta) t = r.normal() / std::sqrt((double)d);
    for (auto &v : x) v = 1.5 * r.normal();
    for (auto &v : lam) v = r.normal();
    const std::vector<double> w = random_weights(1, N, 3);
    for (auto [at_once, tile] : {std::pair<PetscInt, PetscInt>{4096, 256}, {40, 40}, {100, 13}})
      for (bool kept : {false, true})
        for (Range q : {Range{0, N}, Range{37, 140}}) {
          const std::string what = std::string(kind == HeadKind::qkv ? "qkv" : "qkvo") + " tile " +
                                   std::to_string(tile) + (kept ? " statistics" : "");
          AttentionWork wf, wr;
          wf.keys_at_once = at_once, wf.key_tile = tile;
          wf.reserve(s, N), wr.reserve(s, N);
          std::vector<double> stats(kept ? q.size() * attention_statistics_width(s) : 0);
          wf.weights = wr.weights = w.data();
          wf.statistics = kept ? stats.data() : nullptr;
          std::vector<double> of(q.size() * d, 0.1), orf(q.size() * d, 0.1);
          attention(s, theta.data(), o, x.data(), N, q, 0.7, of.data(), wf);
          attention_plain(s, theta.data(), o, x.data(), N, q, 0.7, orf.data(), wr);
          EXPECT_LT(relative_error(of, orf), 1e-13) << what;
          std::vector<double> dxf(N * d, 0.2), dxr(N * d, 0.2), dtf(s.size, 0.3), dtr(s.size, 0.3), gf(N, 0.4),
              gr(N, 0.4);
          wf.weight_grad = gf.data(), wr.weight_grad = gr.data();
          attention_reverse(s, theta.data(), o, x.data(), N, q, 0.7, lam.data() + q.begin * d, dxf.data(), dtf.data(),
                            wf);
          attention_plain_reverse(s, theta.data(), o, x.data(), N, q, 0.7, lam.data() + q.begin * d, dxr.data(),
                                  dtr.data(), wr);
          EXPECT_LT(relative_error(dxf, dxr), 1e-12) << what;
          EXPECT_LT(relative_error(dtf, dtr), 1e-12) << what;
          EXPECT_LT(relative_error(gf, gr), 1e-12) << what;
          double moved = 0;
          for (double g : gr) moved = std::max(moved, std::fabs(g - 0.4));
          EXPECT_GT(moved, 1e-3) << what; // the weights' gradient is not nothing
        }
  }
}

// A problem of `size` tokens a sequence from the test's sizes.
std::vector<std::string> measure_args(PetscInt tokens, const std::vector<std::string> &variant) {
  std::vector<std::string> extra = variant;
  extra.insert(extra.end(), {"--data.N", std::to_string(tokens), "--data.M", "3", "--loss.c", "2", "--model.beta",
                             "1.3", "--init.seed", "11", "--model.H", "4", "--model.L", "3"});
  return tiny(extra);
}

ProblemPtr problem_of(MPI_Comm comm, const Settings &s) {
  ProblemPtr p(new Problem);
  EXPECT_EQ(ProblemCreate(comm, s, p.get()), 0);
  return p;
}

// The atoms (M sequences of K tokens, on the sphere for model.norm = sphere),
// token targets and pooled targets of the measure problems, from one stream.
struct Measure {
  PetscInt M = 3, K = 4, d = 3, c = 2;
  std::vector<double> atoms, targets, z;
  std::vector<PetscInt> counts; // multiplicities, (M, K), each row summing to `total`
  PetscInt total = 8;
  explicit Measure(bool sphere) : atoms((size_t)(M * K * d)), targets(atoms.size()), z((size_t)(M * c)) {
    Stream r(44, 1);
    for (auto &v : atoms) v = r.normal();
    for (auto &v : targets) v = r.normal();
    for (auto &v : z) v = r.normal();
    for (PetscInt t = 0; sphere && t < M * K; ++t) {
      double n = 0;
      for (PetscInt e = 0; e < d; ++e) n += atoms[t * d + e] * atoms[t * d + e];
      for (PetscInt e = 0; e < d; ++e) atoms[t * d + e] /= std::sqrt(n);
    }
    const PetscInt rows[3][4] = {{1, 2, 3, 2}, {3, 1, 1, 3}, {2, 2, 2, 2}};
    for (auto &row : rows) counts.insert(counts.end(), row, row + 4);
  }
  // Sequence m's atom j at each of its copies: the repeated sequence's token index.
  std::vector<PetscInt> copies(PetscInt m, PetscInt j) const {
    PetscInt first = 0;
    for (PetscInt i = 0; i < j; ++i) first += counts[m * K + i];
    std::vector<PetscInt> at((size_t)counts[m * K + j]);
    std::iota(at.begin(), at.end(), first);
    return at;
  }
  // An array of (M, K, width) per atom, spread to (M, total, width) over the copies.
  std::vector<double> repeat(const std::vector<double> &a, PetscInt width) const {
    std::vector<double> out((size_t)(M * total * width));
    for (PetscInt m = 0; m < M; ++m)
      for (PetscInt j = 0; j < K; ++j)
        for (PetscInt i : copies(m, j))
          std::copy(a.begin() + (m * K + j) * width, a.begin() + (m * K + j + 1) * width,
                    out.begin() + (m * total + i) * width);
    return out;
  }
  std::vector<double> weights() const {
    std::vector<double> w(counts.size());
    for (size_t e = 0; e < w.size(); ++e) w[e] = (double)counts[e] / (double)total;
    return w;
  }
};

// Sets a problem's input tokens, weights and targets.
void set_data(Problem *p, const std::vector<double> &x0, const std::vector<double> &weights,
              const std::vector<double> &targets, const std::vector<double> &z) {
  ASSERT_EQ(SetFromAll(p->x0, x0), 0);
  p->tokens.weights = weights;
  if (p->targets.kind == LossKind::token && !targets.empty()) ASSERT_EQ(SetFromAll(p->targets.y, targets), 0);
  else if (p->targets.kind == LossKind::pooled) p->targets.z = z;
}

struct Variant {
  const char *head_kind, *loss, *norm;
};
class WeightsVariants : public ::testing::TestWithParam<Variant> {
protected:
  std::vector<std::string> variant() const {
    const Variant v = GetParam();
    return {"--model.head_kind", v.head_kind, "--loss.kind", v.loss, "--model.norm", v.norm};
  }
  bool sphere() const { return std::string(GetParam().norm) == "sphere"; }
};

// Integer multiplicities: the weighted atoms give the outputs, the risk and
// the head gradients of the sequence that repeats atom j n_j times, and each
// atom's token gradient is the sum of its copies' (1e-12).
TEST_P(WeightsVariants, MultiplicitiesEqualTheRepeatedSequence) {
  const Measure me(sphere());
  auto weighted = make_problem(PETSC_COMM_WORLD, measure_args(me.K, variant()));
  auto repeated = make_problem(PETSC_COMM_WORLD, measure_args(me.total, variant()));
  set_data(weighted.get(), me.atoms, me.weights(), me.targets, me.z);
  set_data(repeated.get(), me.repeat(me.atoms, me.d), {}, me.repeat(me.targets, me.d), me.z);
  ASSERT_EQ(ProblemEvaluate(weighted.get(), PETSC_TRUE), 0);
  ASSERT_EQ(ProblemEvaluate(repeated.get(), PETSC_TRUE), 0);
  EXPECT_NEAR(weighted->risk, repeated->risk, 1e-12 * repeated->risk);
  EXPECT_LT(relative_error(gather(weighted->grad), gather(repeated->grad)), 1e-12);
  const std::vector<double> x1 = gather(weighted->x1), y1 = gather(repeated->x1);
  const std::vector<double> p0 = gather(weighted->adjoint), q0 = gather(repeated->adjoint);
  std::vector<double> summed(p0.size(), 0.0);
  for (PetscInt m = 0; m < me.M; ++m)
    for (PetscInt j = 0; j < me.K; ++j)
      for (PetscInt i : me.copies(m, j))
        for (PetscInt e = 0; e < me.d; ++e) {
          const size_t a = (size_t)((m * me.K + j) * me.d + e), b = (size_t)((m * me.total + i) * me.d + e);
          EXPECT_NEAR(x1[a], y1[b], 1e-12 * (1 + std::fabs(y1[b])));
          summed[a] += q0[b];
        }
  EXPECT_LT(relative_error(p0, summed), 1e-12);
  EXPECT_EQ(weighted->weight_grad.size(), (size_t)(me.M * me.K));
}

// The weights' gradient against central differences of the risk in each
// weight (the risk is defined for any positive weights; 1e-7 relative).
TEST_P(WeightsVariants, WeightGradientMatchesFiniteDifferences) {
  const Measure me(sphere());
  auto p = make_problem(PETSC_COMM_WORLD, measure_args(me.K, variant()));
  const std::vector<double> w = random_weights(me.M, me.K, 5);
  set_data(p.get(), me.atoms, w, me.targets, me.z);
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  const std::vector<double> g = p->weight_grad;
  std::vector<double> fd(w.size());
  const double eps = 1e-6;
  for (size_t e = 0; e < w.size(); ++e) {
    double risks[2];
    for (int side = 0; side < 2; ++side) {
      p->tokens.weights = w;
      p->tokens.weights[e] += side ? -eps : eps;
      ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
      risks[side] = p->risk;
    }
    fd[e] = (risks[0] - risks[1]) / (2 * eps);
  }
  double diff = 0, norm = 0;
  for (size_t e = 0; e < w.size(); ++e) diff += (g[e] - fd[e]) * (g[e] - fd[e]), norm += fd[e] * fd[e];
  EXPECT_LT(std::sqrt(diff / norm), 1e-7);
  EXPECT_GT(std::sqrt(norm), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(All, WeightsVariants,
                         ::testing::Values(Variant{"qkv", "token", "none"}, Variant{"qkv", "pooled", "none"},
                                           Variant{"qkvo", "token", "none"}, Variant{"qkvo", "pooled", "none"},
                                           Variant{"qkv", "token", "sphere"}, Variant{"qkvo", "pooled", "sphere"},
                                           Variant{"qkv", "pooled", "pre"}, Variant{"qkvo", "token", "pre"}),
                         [](const auto &info) {
                           return std::string(info.param.head_kind) + "_" + info.param.loss + "_" + info.param.norm;
                         });

// The adaptive limit (a shared ensemble, TSRK 5dp): multiplicities give the
// repeated sequence's x(1) and summed p(0) to its tolerance, and the weights'
// gradient, taken from the stages' own factors, matches central differences.
TEST(Weights, LimitMultiplicitiesAndGradient) {
  const Measure me(false);
  Settings s = LimitSettingsFor(settings(tiny({"--data.N", std::to_string(me.K), "--model.beta", "1.3",
                                                "--limit.heads", "64", "--limit.rtol", "1e-12"}),
                                          "limit"));
  Settings rs = s;
  rs.data.N = me.total;
  auto weighted = problem_of(PETSC_COMM_WORLD, s), repeated = problem_of(PETSC_COMM_WORLD, rs);
  set_data(weighted.get(), me.atoms, me.weights(), {}, {});
  set_data(repeated.get(), me.repeat(me.atoms, me.d), {}, {}, {});
  ASSERT_EQ(ProblemEvaluate(weighted.get(), PETSC_TRUE), 0);
  ASSERT_EQ(ProblemEvaluate(repeated.get(), PETSC_TRUE), 0);
  EXPECT_LT(relative_error(gather(weighted->x1), [&] {
              const std::vector<double> y1 = gather(repeated->x1);
              std::vector<double> first(me.atoms.size());
              for (PetscInt m = 0; m < me.M; ++m)
                for (PetscInt j = 0; j < me.K; ++j)
                  for (PetscInt e = 0; e < me.d; ++e)
                    first[(m * me.K + j) * me.d + e] = y1[(m * me.total + me.copies(m, j)[0]) * me.d + e];
              return first;
            }()), 1e-9);
  const std::vector<double> w = random_weights(me.M, me.K, 6);
  weighted->tokens.weights = w;
  ASSERT_EQ(ProblemEvaluate(weighted.get(), PETSC_TRUE), 0);
  const std::vector<double> g = weighted->weight_grad;
  double diff = 0, norm = 0;
  const double eps = 1e-4;
  for (size_t e = 0; e < w.size(); ++e) {
    double risks[2];
    for (int side = 0; side < 2; ++side) {
      weighted->tokens.weights = w;
      weighted->tokens.weights[e] += side ? -eps : eps;
      ASSERT_EQ(ProblemEvaluate(weighted.get(), PETSC_FALSE), 0);
      risks[side] = weighted->risk;
    }
    const double fd = (risks[0] - risks[1]) / (2 * eps);
    diff += (g[e] - fd) * (g[e] - fd), norm += fd * fd;
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-7);
}

// All ranks (every head-group count, cut sequences as tokens and as
// projections: one sequence of 9 atoms cut over the token groups) against
// one rank: outputs, head, token and weight gradients (1e-12).
TEST(Weights, RanksAgree) {
  int size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  const std::vector<std::string> base = tiny({"--data.M", "1", "--data.N", "9", "--model.H", "6", "--loss.kind",
                                              "pooled", "--loss.c", "2", "--model.head_kind", "qkvo"});
  const std::vector<double> w = random_weights(1, 9, 8);
  auto run = [&](MPI_Comm comm, std::vector<std::string> args) {
    auto p = make_problem(comm, args);
    p->tokens.weights = w;
    EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
    std::vector<double> all = gather(p->x1), grad = gather(p->grad), adjoint = gather(p->adjoint);
    all.insert(all.end(), grad.begin(), grad.end());
    all.insert(all.end(), adjoint.begin(), adjoint.end());
    all.insert(all.end(), p->weight_grad.begin(), p->weight_grad.end());
    return all;
  };
  const std::vector<double> serial = run(PETSC_COMM_SELF, base);
  for (int hg = 1; hg <= size; ++hg) {
    if (size % hg) continue;
    for (const char *form : {"tokens", "projections"}) {
      std::vector<std::string> args = base;
      args.insert(args.end(), {"--parallel.head_groups", std::to_string(hg), "--parallel.cut_sequences", form});
      EXPECT_LT(relative_error(run(PETSC_COMM_WORLD, args), serial), 1e-12) << hg << " head groups, " << form;
    }
  }
}

} // namespace
