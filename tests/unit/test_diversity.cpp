// The heads' diversity (diversity.hpp) against its definition computed
// another way: each head's attention matrix from plain.hpp's x_i^T Q^T K x_j
// (the diversity goes through the projections Q x_i . K x_j), and the
// heads' spread about their mean summed entry by entry, at the tokens a
// trajectory records entering each layer; on any number of ranks; 0 where
// every head attends alike.
#include "helpers.hpp"
#include "mft/flow/diversity.hpp"
#include "mft/flow/plain.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

// The definition: mean over layers and sequences of (1/H) sum_h |A_h - Abar|_F^2.
double definition(const ModelSettings &m, const std::vector<double> &theta, const std::vector<std::vector<double>> &x,
                  PetscInt M, PetscInt N) {
  const HeadShape shape = head_shape(m.head_kind, m.d, m.k);
  const PetscInt d = m.d;
  double total = 0;
  for (PetscInt l = 0; l < m.L; ++l)
    for (PetscInt s = 0; s < M; ++s) {
      std::vector<double> read(x[l].begin() + s * N * d, x[l].begin() + (s + 1) * N * d);
      if (m.norm == TokenNorm::pre)
        for (PetscInt i = 0; i < N; ++i) {
          double r = 0;
          for (PetscInt c = 0; c < d; ++c) r += read[i * d + c] * read[i * d + c];
          for (PetscInt c = 0; c < d; ++c) read[i * d + c] *= std::sqrt((double)d / r);
        }
      std::vector<std::vector<double>> A(m.H, std::vector<double>(N * N, 0.0));
      for (PetscInt h = 0; h < m.H; ++h)
        plain_attention(m, theta.data() + (l * m.H + h) * shape.size, read.data(), N, nullptr, A[h].data());
      double spread = 0;
      for (PetscInt e = 0; e < N * N; ++e) {
        double mean = 0;
        for (PetscInt h = 0; h < m.H; ++h) mean += A[h][e] / (double)m.H;
        for (PetscInt h = 0; h < m.H; ++h) spread += (A[h][e] - mean) * (A[h][e] - mean) / (double)m.H;
      }
      total += spread;
    }
  return total / (double)(m.L * M);
}

// mft's diversity of a model and the definition's, at the slices its forward records.
std::pair<double, double> both(const std::vector<std::string> &args) {
  auto p = make_problem(PETSC_COMM_WORLD, args, "forward");
  Trajectory t;
  EXPECT_EQ(ProblemRecordTrajectory(p.get(), &t), 0);
  EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
  std::vector<std::vector<double>> x;
  for (PetscInt l = 0; l <= t.S; ++l) x.push_back(gather(t.tokens[l]));
  const std::vector<double> theta = gather(p->heads.theta);
  double D = NAN;
  EXPECT_EQ(HeadDiversity(PETSC_COMM_WORLD, p->settings.model, theta, t, p->tokens.weights, &D), 0);
  EXPECT_EQ(TrajectoryDestroy(&t), 0);
  return {D, definition(p->settings.model, theta, x, p->tokens.M, p->tokens.N)};
}

} // namespace

TEST(Diversity, MeetsItsDefinition) {
  const std::vector<std::vector<std::string>> variants = {
      {}, {"--model.head_kind", "qkvo", "--model.causal", "true"}, {"--model.norm", "pre"},
      {"--model.norm", "sphere", "--model.logit_exponent", "0.5", "--model.k", "4"},
      {"--model.k", "inf", "--model.logit_exponent", "0.5"}};
  for (const auto &v : variants) {
    std::vector<std::string> args = {"--model.beta", "2", "--output.trajectory", "3", "--init.q_gain", "2",
                                     "--init.k_gain", "2"};
    args.insert(args.end(), v.begin(), v.end());
    const auto [D, truth] = both(tiny(args));
    const std::string where = v.empty() ? "qkv" : v[0] + " " + v[1];
    EXPECT_GT(truth, 1e-3) << where << ": heads that differ";
    EXPECT_NEAR(D, truth, 1e-13 * truth) << where;
  }
}

TEST(Diversity, ZeroWhereEveryHeadAttendsAlike) {
  const auto [flat, flat_truth] = both(tiny({"--model.beta", "0", "--output.trajectory", "3"}));
  EXPECT_LT(std::fabs(flat), 1e-15) << "beta = 0: every head attends uniformly";
  const auto [one, one_truth] = both(tiny({"--model.H", "1", "--model.beta", "2", "--output.trajectory", "3"}));
  EXPECT_LT(std::fabs(one), 1e-15) << "one head a layer";
  EXPECT_LT(flat_truth + one_truth, 1e-15);
}

TEST(Diversity, NeedsEveryLayersTokens) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--output.trajectory", "1"}), "forward");
  Trajectory t;
  ASSERT_EQ(ProblemRecordTrajectory(p.get(), &t), 0);
  double D;
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(HeadDiversity(PETSC_COMM_WORLD, p->settings.model, gather(p->heads.theta), t, {}, &D), 0);
  PetscPopErrorHandler();
  EXPECT_EQ(TrajectoryDestroy(&t), 0);
}
