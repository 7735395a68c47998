// Forward pass: the TS solve against the plain loop, invariants, closed forms.
#include "helpers.hpp"
#include "mft/flow/plain.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mft;
using namespace mft::test;

namespace {

struct Variant {
  const char *head_kind;
  const char *causal;
  const char *norm = "none";
};

class ForwardVariants : public ::testing::TestWithParam<Variant> {};

// x(1) of the TS solve equals the hand-written loop over layers with full attention matrices.
TEST_P(ForwardVariants, MatchesReferenceLoop) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--model.head_kind", GetParam().head_kind, "--model.causal",
                                                GetParam().causal, "--model.beta", "1.7", "--data.N", "7",
                                                "--model.norm", GetParam().norm}));
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  std::vector<double> x = gather(p->x0);
  plain_forward(p->settings.model, gather(p->heads.theta), p->tokens.M, p->tokens.N, x);
  const std::vector<double> x1 = gather(p->x1);
  EXPECT_LT(relative_error(x1, x), 1e-13);
  // The tokens did move: the comparison is not of two copies of x(0).
  EXPECT_GT(relative_error(x1, gather(p->x0)), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(All, ForwardVariants,
                         ::testing::Values(Variant{"qkv", "false"}, Variant{"qkv", "true"}, Variant{"qkvo", "false"},
                                           Variant{"qkvo", "true"}, Variant{"qkv", "false", "sphere"},
                                           Variant{"qkvo", "true", "sphere"}, Variant{"qkv", "true", "pre"},
                                           Variant{"qkvo", "false", "pre"}),
                         [](const auto &info) {
                           const std::string norm = info.param.norm;
                           return std::string(info.param.head_kind) +
                                  (std::string(info.param.causal) == "true" ? "_causal" : "") +
                                  (norm == "none" ? "" : "_" + norm);
                         });

// model.norm = sphere: after every layer every token has norm 1 (to 1e-12),
// and they did move; pre: the same run with every input token scaled by 3
// reads the same attention, so x(1) - x(0) is unchanged.
TEST(Forward, SphereKeepsEveryLayerOnTheSphere) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--model.norm", "sphere", "--model.L", "6", "--output.trajectory", "6",
                                                "--init.v_mean", "2", "--model.d", "3"}));
  Trajectory t;
  ASSERT_EQ(ProblemRecordTrajectory(p.get(), &t), 0);
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  for (PetscInt k = 0; k <= t.S; ++k) {
    const std::vector<double> x = gather(t.tokens[k]);
    for (size_t o = 0; o < x.size(); o += 3)
      EXPECT_NEAR(std::sqrt(x[o] * x[o] + x[o + 1] * x[o + 1] + x[o + 2] * x[o + 2]), 1.0, 1e-12) << k;
  }
  EXPECT_GT(relative_error(gather(p->x1), gather(p->x0)), 1e-2);
  EXPECT_EQ(TrajectoryDestroy(&t), 0);
}

TEST(Forward, PreReadsDirectionsOnly) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--model.norm", "pre", "--model.L", "1"}));
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  const std::vector<double> x0 = gather(p->x0), x1 = gather(p->x1);
  for (size_t i = 0; i < x0.size(); ++i) set_entry(p->x0, (PetscInt)i, 3 * x0[i]);
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  const std::vector<double> y1 = gather(p->x1);
  std::vector<double> step(x0.size()), scaled_step(x0.size());
  for (size_t i = 0; i < x0.size(); ++i) step[i] = x1[i] - x0[i], scaled_step[i] = y1[i] - 3 * x0[i];
  EXPECT_LT(relative_error(scaled_step, step), 1e-13);
  EXPECT_GT(relative_error(step, std::vector<double>(step.size(), 0.0)), 0.5); // the step is not zero
}

// With V = 0 every head's value map is zero: tokens do not move.
TEST(Forward, ZeroValuesLeaveTokensInPlace) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--init.v_gain", "0", "--init.v_mean", "0"}));
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  EXPECT_EQ(relative_error(gather(p->x1), gather(p->x0)), 0.0);
}

// Without a mask, attention is permutation-equivariant within a sequence.
TEST(Forward, PermutingTokensPermutesOutput) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--model.head_kind", "qkvo"}));
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  const std::vector<double> x0 = gather(p->x0), x1 = gather(p->x1);
  const PetscInt N = p->tokens.N, d = p->tokens.d, M = p->tokens.M;
  auto perm = [N](PetscInt i) { return (3 * i + 1) % N; }; // a bijection for N = 5
  for (PetscInt m = 0; m < M; ++m)
    for (PetscInt i = 0; i < N; ++i)
      for (PetscInt c = 0; c < d; ++c) set_entry(p->x0, (m * N + perm(i)) * d + c, x0[(m * N + i) * d + c]);
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  const std::vector<double> y1 = gather(p->x1);
  std::vector<double> expected(y1.size());
  for (PetscInt m = 0; m < M; ++m)
    for (PetscInt i = 0; i < N; ++i)
      for (PetscInt c = 0; c < d; ++c) expected[(m * N + perm(i)) * d + c] = x1[(m * N + i) * d + c];
  EXPECT_LT(relative_error(y1, expected), 1e-14);
}

// Mean value map of layer l: Abar_l = (1/H) sum_h A_{l,h}.
std::vector<double> mean_value_map(const Problem &p, const std::vector<double> &theta, PetscInt l) {
  const HeadShape &s = p.heads.shape;
  const PetscInt d = s.d, H = p.settings.model.H;
  std::vector<double> A(d * d, 0.0);
  for (PetscInt h = 0; h < H; ++h) {
    const double *th = theta.data() + (l * H + h) * s.size;
    for (PetscInt r = 0; r < d; ++r)
      for (PetscInt c = 0; c < d; ++c) {
        double a = 0;
        if (s.kind == HeadKind::qkv) a = th[s.offV + r * d + c];
        else
          for (PetscInt q = 0; q < s.k; ++q) a += th[s.offO + r * s.k + q] * th[s.offV + q * d + c];
        A[r * d + c] += a / (double)H;
      }
  }
  return A;
}

// y <- (I + A/L) y
void euler_step(const std::vector<double> &A, PetscInt d, PetscInt L, std::vector<double> &y) {
  std::vector<double> z(y);
  for (PetscInt r = 0; r < d; ++r)
    for (PetscInt c = 0; c < d; ++c) z[r] += A[r * d + c] * y[c] / (double)L;
  y = z;
}

// A single token attends to itself: x(1) = prod_l (I + Abar_l / L) x(0).
TEST(Forward, SingleTokenClosedForm) {
  for (const char *kind : {"qkv", "qkvo"}) {
    auto p = make_problem(PETSC_COMM_WORLD, tiny({"--data.N", "1", "--model.head_kind", kind, "--model.L", "4"}));
    ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
    const std::vector<double> theta = gather(p->heads.theta), x0 = gather(p->x0), x1 = gather(p->x1);
    const PetscInt d = p->tokens.d, L = p->settings.model.L;
    std::vector<double> expected;
    for (PetscInt m = 0; m < p->tokens.M; ++m) {
      std::vector<double> y(x0.begin() + m * d, x0.begin() + (m + 1) * d);
      for (PetscInt l = 0; l < L; ++l) euler_step(mean_value_map(*p, theta, l), d, L, y);
      expected.insert(expected.end(), y.begin(), y.end());
    }
    EXPECT_LT(relative_error(x1, expected), 1e-14) << kind;
  }
}

// With Q = 0 attention is uniform, m_i = xbar: the mean follows
// xbar(1) = prod_l (I + Abar_l/L) xbar(0), and every token moves by xbar(1) - xbar(0).
TEST(Forward, UniformAttentionClosedForm) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--init.q_gain", "0", "--model.L", "6"}));
  ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  const std::vector<double> theta = gather(p->heads.theta), x0 = gather(p->x0), x1 = gather(p->x1);
  const PetscInt d = p->tokens.d, N = p->tokens.N, L = p->settings.model.L;
  std::vector<double> expected(x0.size());
  for (PetscInt m = 0; m < p->tokens.M; ++m) {
    std::vector<double> xbar(d, 0.0);
    for (PetscInt i = 0; i < N; ++i)
      for (PetscInt c = 0; c < d; ++c) xbar[c] += x0[(m * N + i) * d + c] / (double)N;
    std::vector<double> y(xbar);
    for (PetscInt l = 0; l < L; ++l) euler_step(mean_value_map(*p, theta, l), d, L, y);
    for (PetscInt i = 0; i < N; ++i)
      for (PetscInt c = 0; c < d; ++c)
        expected[(m * N + i) * d + c] = x0[(m * N + i) * d + c] + y[c] - xbar[c];
  }
  EXPECT_LT(relative_error(x1, expected), 1e-13);
}

// model.logit_exponent g: the logits beta k^-g x^T Q^T K x. At g = 1/2 and 1
// (k = 3, so k^-g is no power of 2), qkv and qkvo, masked and normalized,
// x(1) equals the model whose beta is beta k^-g (given to 17 digits) at
// g = 0, bitwise, and the plain loop to 1e-13; at beta = 0 g changes
// nothing, bitwise (every token attends to the mean).
TEST(Forward, LogitExponentScalesBeta) {
  auto x1 = [](const char *kind, const char *causal, const char *norm, const std::string &beta, const char *g) {
    auto p = make_problem(PETSC_COMM_WORLD, tiny({"--model.head_kind", kind, "--model.causal", causal, "--model.norm",
                                                  norm, "--model.k", "3", "--model.beta", beta,
                                                  "--model.logit_exponent", g}));
    EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
    std::vector<double> x = gather(p->x0);
    plain_forward(p->settings.model, gather(p->heads.theta), p->tokens.M, p->tokens.N, x);
    const std::vector<double> out = gather(p->x1);
    EXPECT_LT(relative_error(out, x), 1e-13) << kind << " g = " << g;
    return out;
  };
  const char *kinds[][3] = {{"qkv", "true", "none"}, {"qkvo", "false", "pre"}, {"qkvo", "true", "sphere"}};
  for (const auto &v : kinds)
    for (const char *g : {"0.5", "1"}) {
      char scaled[32];
      std::snprintf(scaled, sizeof scaled, "%.17g", 1.7 * std::pow(3.0, -std::atof(g)));
      const std::vector<double> a = x1(v[0], v[1], v[2], "1.7", g), b = x1(v[0], v[1], v[2], scaled, "0");
      EXPECT_EQ(a, b) << v[0] << " " << v[2] << " g = " << g << ": not the model of beta k^-g";
      EXPECT_NE(a, x1(v[0], v[1], v[2], "1.7", "0")) << "g changed nothing";
      EXPECT_EQ(x1(v[0], v[1], v[2], "0", g), x1(v[0], v[1], v[2], "0", "0")) << "beta = 0, g = " << g;
    }
}

// k is a sum index of the logits and of O V, not a rank: keys wider than the
// tokens (k = 7 > d = 3), qkv and qkvo, causal or not, under a block mean
// of Q, K and O (the rectangular identity's first d rows): the TS forward
// equals the plain loop, and the tokens moved.
TEST(Forward, KeysWiderThanTokens) {
  for (const char *kind : {"qkv", "qkvo"})
    for (const char *causal : {"false", "true"}) {
      auto p = make_problem(PETSC_COMM_WORLD, tiny({"--model.head_kind", kind, "--model.causal", causal, "--model.k", "7",
                                                    "--init.q_mean", "0.3", "--init.k_mean", "0.3", "--init.o_mean",
                                                    "0.5", "--model.logit_exponent", "0.5"}));
      ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
      std::vector<double> x = gather(p->x0);
      plain_forward(p->settings.model, gather(p->heads.theta), p->tokens.M, p->tokens.N, x);
      EXPECT_LT(relative_error(gather(p->x1), x), 1e-13) << kind << (std::string(causal) == "true" ? " causal" : "");
      EXPECT_GT(relative_error(gather(p->x1), gather(p->x0)), 1e-3);
    }
}

} // namespace
