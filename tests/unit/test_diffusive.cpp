// The diffusive regime (docs/model.md, 'Depth and head exponents'): samples of
// a model's law and the SDE limit against closed forms, exact at finite L and
// H, and against the Richardson extrapolation of finite models.
#include "helpers.hpp"
#include "mft/flow/limit.hpp"
#include "mft/flow/samples.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

// |xbar_m|^2 of every sample's sequence m, (S, M), from tokens (S, M, N, d).
std::vector<double> mean_squares(const std::vector<double> &x, PetscInt S, PetscInt M, PetscInt N, PetscInt d) {
  std::vector<double> q((size_t)(S * M), 0.0);
  for (PetscInt s = 0; s < S * M; ++s)
    for (PetscInt c = 0; c < d; ++c) {
      double mean = 0;
      for (PetscInt i = 0; i < N; ++i) mean += x[(s * N + i) * d + c] / (double)N;
      q[s] += mean * mean;
    }
  return q;
}

struct Estimate {
  double mean = 0, stderr_ = 0;
};

// The sample mean of sequence m's values in q (S, M) and its standard error.
Estimate estimate(const std::vector<double> &q, PetscInt M, PetscInt m) {
  const size_t S = q.size() / (size_t)M;
  Estimate e;
  for (size_t s = 0; s < S; ++s) e.mean += q[s * M + m] / (double)S;
  double var = 0;
  for (size_t s = 0; s < S; ++s) var += std::pow(q[s * M + m] - e.mean, 2) / (double)(S - 1);
  e.stderr_ = std::sqrt(var / (double)S);
  return e;
}

// At beta = 0 every token attends to its sequence's mean: the tokens keep
// their offsets from it, and E |xbar(1)|^2 = (1 + sigma^2 L^-2a H^(1-2c))^L |xbar(0)|^2.
void expect_beta_zero_closed_form(const std::vector<std::string> &args, double sigma2) {
  const PetscInt S = 16384;
  const Settings s = settings(tiny(args), "forward");
  Samples r;
  ASSERT_EQ(SamplesForward(PETSC_COMM_WORLD, s, S, &r), 0);
  const PetscInt M = r.M, N = r.N, d = r.d;
  const std::vector<double> q = mean_squares(r.tokens, S, M, N, d), q0 = mean_squares(r.inputs, 1, M, N, d);
  double offset = 0; // x_i(1) - xbar(1) against x_i(0) - xbar(0), every sample
  for (PetscInt k = 0; k < S * M; ++k)
    for (PetscInt c = 0; c < d; ++c) {
      double m1 = 0, m0 = 0;
      for (PetscInt i = 0; i < N; ++i) m1 += r.tokens[(k * N + i) * d + c] / N, m0 += r.inputs[((k % M) * N + i) * d + c] / N;
      for (PetscInt i = 0; i < N; ++i)
        offset = std::max(offset, std::fabs(r.tokens[(k * N + i) * d + c] - m1 - r.inputs[((k % M) * N + i) * d + c] + m0));
    }
  EXPECT_LT(offset, 1e-12);
  const ModelSettings &mo = s.model;
  const double factor = std::pow(1 + sigma2 * std::pow((double)mo.L, -2 * mo.depth_exponent) *
                                         std::pow((double)mo.H, 1 - 2 * mo.head_exponent),
                                 (double)mo.L);
  for (PetscInt m = 0; m < M; ++m) {
    const Estimate e = estimate(q, M, m);
    const double exact = factor * q0[m];
    EXPECT_LT(std::fabs(e.mean - exact), 4 * e.stderr_) << "sequence " << m << ": " << e.mean << " +- " << e.stderr_
                                                         << " against " << exact;
    EXPECT_GT(e.mean, q0[m] * (1 + 0.2 * (factor - 1))) << "the mean did not grow"; // the test can see a wrong law
  }
}

std::vector<std::string> beta_zero(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--model.beta", "0", "--init.v_mean", "0", "--model.L", "6", "--model.H", "3",
                                "--data.M", "2", "--data.N", "4", "--init.seed", "17"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(Diffusive, BetaZeroQkvIsExactAtFiniteSize) {
  expect_beta_zero_closed_form(beta_zero({"--model.depth_exponent", "0.5", "--model.head_exponent", "0.5",
                                          "--init.v_gain", "1.3"}),
                               1.69);
}

TEST(Diffusive, BetaZeroQkvoUniformIsExactAtFiniteSize) {
  expect_beta_zero_closed_form(beta_zero({"--model.head_kind", "qkvo", "--init.law", "uniform", "--model.depth_exponent",
                                          "0.5", "--model.head_exponent", "0.5", "--init.v_gain", "1.2",
                                          "--init.o_gain", "0.9"}),
                               1.44 * 0.81);
}

TEST(Diffusive, BetaZeroOtherExponentsAreExactAtFiniteSize) {
  expect_beta_zero_closed_form(beta_zero({"--model.depth_exponent", "0.25", "--model.head_exponent", "1",
                                          "--init.v_gain", "0.8"}),
                               0.64);
  // O of mean 0.7 I (d = 3, k = 2): E A^T A = v_gain^2 (o_gain^2 + (k/d) o_mean^2) I, still isotropic.
  expect_beta_zero_closed_form(beta_zero({"--model.depth_exponent", "1", "--model.head_exponent", "0.5",
                                          "--model.head_kind", "qkvo", "--init.o_mean", "0.7", "--init.v_gain", "1.5"}),
                               1.5 * 1.5 * (1 + 2.0 / 3.0 * 0.49));
}

// Sample k of SamplesForward is the model of seed init.seed + k, on any ranks.
TEST(Diffusive, SamplesAreTheirSeedsModels) {
  const std::vector<std::string> args = tiny({"--model.depth_exponent", "0.5", "--model.head_exponent", "0.5",
                                              "--init.v_mean", "0", "--model.head_kind", "qkvo", "--model.causal",
                                              "true", "--init.seed", "40"});
  Samples r;
  ASSERT_EQ(SamplesForward(PETSC_COMM_WORLD, settings(args, "forward"), 5, &r), 0);
  const size_t n = (size_t)(r.M * r.N * r.d);
  for (PetscInt k = 0; k < 5; ++k) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--init.seed", std::to_string(40 + k)});
    auto p = make_problem(PETSC_COMM_WORLD, tiny(a));
    ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
    const std::vector<double> mine(r.tokens.begin() + (long)(k * n), r.tokens.begin() + (long)((k + 1) * n));
    EXPECT_LT(relative_error(mine, gather(p->x1)), 1e-13) << "sample " << k;
  }
  EXPECT_GT(relative_error(std::vector<double>(r.tokens.begin(), r.tokens.begin() + (long)n),
                           std::vector<double>(r.tokens.begin() + (long)n, r.tokens.begin() + (long)(2 * n))),
            1e-3); // the samples differ
}

// The SDE at beta = 0: E |xbar(1)|^2 = exp(sigma^2) |xbar(0)|^2. The scheme of
// n steps has (1 + sigma^2 / n)^n exactly, an error falling like 1/n; the
// extrapolation from n and 2n steps holds the exponential.
TEST(Diffusive, LimitAtBetaZeroIsTheExponential) {
  std::vector<std::string> args = beta_zero({"--model.depth_exponent", "0.5", "--model.head_exponent", "0.5",
                                             "--model.head_kind", "qkvo", "--init.v_gain", "1.1", "--init.o_gain", "1",
                                             "--limit.paths", "16384", "--limit.step_heads", "2"});
  const double sigma2 = 1.21;
  std::vector<double> errors;
  for (const char *n : {"2", "8"}) { // the plain scheme
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--limit.steps", n, "--limit.richardson", "false"});
    const Settings s = settings(a, "limit");
    LimitPaths r;
    ASSERT_EQ(LimitPathsSolve(PETSC_COMM_WORLD, s, &r), 0);
    const std::vector<double> q = mean_squares(r.fine.tokens, r.fine.S, r.fine.M, r.fine.N, r.fine.d),
                              q0 = mean_squares(r.fine.inputs, 1, r.fine.M, r.fine.N, r.fine.d);
    const Estimate e = estimate(q, r.fine.M, 0);
    const double steps = std::stod(n), scheme = std::pow(1 + sigma2 / steps, steps) * q0[0];
    EXPECT_LT(std::fabs(e.mean - scheme), 4 * e.stderr_) << n << " steps: " << e.mean << " +- " << e.stderr_;
    errors.push_back(std::exp(sigma2) * q0[0] - e.mean);
  }
  const double order = std::log(errors[0] / errors[1]) / std::log(4.0); // 0.83 for this sigma^2 at n = 2, 8
  EXPECT_GT(order, 0.55);
  EXPECT_LT(order, 1.3);
  args.insert(args.end(), {"--limit.steps", "8"});
  LimitPaths r;
  ASSERT_EQ(LimitPathsSolve(PETSC_COMM_WORLD, settings(args, "limit"), &r), 0);
  const PetscInt M = r.fine.M, N = r.fine.N, d = r.fine.d, S = r.fine.S;
  const std::vector<double> q0 = mean_squares(r.fine.inputs, 1, M, N, d);
  const std::vector<double> fine = mean_squares(r.fine.tokens, S, M, N, d), coarse = mean_squares(r.coarse.tokens, S, M, N, d);
  for (PetscInt m = 0; m < M; ++m) {
    const Estimate f = estimate(fine, M, m), c = estimate(coarse, M, m);
    const double extrapolated = 2 * f.mean - c.mean, se = std::sqrt(4 * f.stderr_ * f.stderr_ + c.stderr_ * c.stderr_);
    EXPECT_LT(std::fabs(extrapolated - std::exp(sigma2) * q0[m]), 4 * se) << "sequence " << m;
  }
}

// beta > 0: the limit's Gram means are the Richardson extrapolation
// 2 E_2L - E_L of the finite models' (L = 64, H = 2), within their standard errors.
TEST(Diffusive, LimitIsTheExtrapolationOfFiniteModels) {
  const std::vector<std::string> model = {"--model.depth_exponent", "0.5", "--model.head_exponent", "0.5",
                                          "--init.v_mean", "0", "--model.beta", "1.5", "--data.M", "2", "--data.N",
                                          "3", "--model.d", "2", "--model.k", "2", "--model.H", "2",
                                          "--init.q_gain", "1.5", "--init.k_gain", "1.5"};
  const PetscInt S = 8192;
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = model;
    a.insert(a.end(), extra.begin(), extra.end());
    return tiny(a);
  };
  Samples coarse, fine;
  ASSERT_EQ(SamplesForward(PETSC_COMM_WORLD, settings(with({"--model.L", "64", "--init.seed", "1000"}), "forward"), S,
                           &coarse),
            0);
  ASSERT_EQ(SamplesForward(PETSC_COMM_WORLD, settings(with({"--model.L", "128", "--init.seed", "50000"}), "forward"), S,
                           &fine),
            0);
  LimitPaths r;
  ASSERT_EQ(LimitPathsSolve(PETSC_COMM_WORLD,
                            settings(with({"--limit.paths", std::to_string(S), "--limit.steps", "16",
                                           "--limit.step_heads", "8", "--init.seed", "90000"}),
                                     "limit"),
                            &r),
            0);
  const PetscInt N = r.fine.N, d = r.fine.d;
  double worst = 0, moved = 0;
  for (size_t e = 0; e < r.gram_mean.size(); ++e) {
    const double finite = 2 * fine.gram_mean[e] - coarse.gram_mean[e];
    const double se = std::sqrt(4 * std::pow(fine.gram_stderr[e], 2) + std::pow(coarse.gram_stderr[e], 2) +
                                std::pow(r.gram_stderr[e], 2));
    worst = std::max(worst, std::fabs(finite - r.gram_mean[e]) / se);
    const size_t m = e / (size_t)(N * N), i = e / (size_t)N % (size_t)N, j = e % (size_t)N; // G(0)
    double g0 = 0;
    for (PetscInt c = 0; c < d; ++c) g0 += r.fine.inputs[(m * N + i) * d + c] * r.fine.inputs[(m * N + j) * d + c];
    moved = std::max(moved, std::fabs(r.gram_mean[e] - g0) / r.gram_stderr[e]);
  }
  EXPECT_LT(worst, 4.0) << "largest difference, in standard errors";
  EXPECT_GT(moved, 10.0) << "the limit's Gram means are not resolved away from G(0): the test could not fail";
}

} // namespace
