// The law of the heads' logit matrix at initialisation (docs/model.md, 'The
// logit exponent', 'The infinite head'): over 16384 heads drawn by
// HeadsInitialize, the entries of W = k^-1/2 Q^T K have the stated mean,
// covariance and excess kurtosis, each within 4 of its standard errors
// (delta method, from the same sample); the infinite head's forward pass.
#include "helpers.hpp"
#include "mft/flow/optimizer.hpp"
#include "mft/flow/plain.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace mft;
using namespace mft::test;

namespace {

struct Moments {
  double mean, mean_se, kurtosis, kurtosis_se;
};

// The sample mean and excess kurtosis of x, with their standard errors: the
// kurtosis m4 / m2^2 - 3 through its influence function
// (y^4 - m4) / m2^2 - 2 m4 (y^2 - m2) / m2^3, y = x - mean.
Moments moments(const std::vector<double> &x) {
  const double n = (double)x.size();
  double mean = 0, m2 = 0, m4 = 0;
  for (double v : x) mean += v / n;
  for (double v : x) m2 += (v - mean) * (v - mean) / n, m4 += std::pow(v - mean, 4) / n;
  double influence = 0;
  for (double v : x) {
    const double y = v - mean, f = (y * y * y * y - m4) / (m2 * m2) - 2 * m4 * (y * y - m2) / (m2 * m2 * m2);
    influence += f * f / n;
  }
  return {mean, std::sqrt(m2 / n), m4 / (m2 * m2) - 3, std::sqrt(influence / n)};
}

// The d x d entries of k^-1/2 Q^T K of every head, entry-major: w[e][head].
std::vector<std::vector<double>> logit_matrices(const std::vector<std::string> &args, PetscInt *k, PetscInt *d) {
  auto p = make_problem(PETSC_COMM_WORLD, args, "forward");
  const HeadShape &sh = p->heads.shape;
  *k = sh.k, *d = sh.d;
  const std::vector<double> theta = gather(p->heads.theta);
  const size_t heads = theta.size() / (size_t)sh.size;
  std::vector<std::vector<double>> w((size_t)(sh.d * sh.d), std::vector<double>(heads));
  for (size_t i = 0; i < heads; ++i) {
    const double *Q = theta.data() + i * sh.size + sh.offQ, *K = theta.data() + i * sh.size + sh.offK;
    for (PetscInt a = 0; a < sh.d; ++a)
      for (PetscInt b = 0; b < sh.d; ++b) {
        double s = 0;
        for (PetscInt r = 0; r < sh.k; ++r) s += Q[r * sh.d + a] * K[r * sh.d + b];
        w[a * sh.d + b][i] = p->heads.infinite ? s : s / std::sqrt((double)sh.k); // the infinite head's W = Q^T K
      }
  }
  return w;
}

// Centred Q and K (gains 1.5 and 0.7, d = 3): every entry of W has mean 0,
// variance (q_gain k_gain / d)^2, excess kurtosis 6/k (Gaussian entries) or
// 0.24/k (uniform), and two entries are uncorrelated; with block means
// q_mean = 0.8, k_mean = -0.5 the first min(k, d) diagonal entries move by
// k^-1/2 q_mean k_mean and the others stay centred.
// The infinite head (model.k = inf): W is that Gaussian matrix, excess
// kurtosis 0 under either law, its mean 0 with block means too.
TEST(InitLaw, LogitMatrixHasTheStatedLaw) {
  MFT_ONE_RANK_TEST();
  const double qg = 1.5, kg = 0.7, qm = 0.8, km = -0.5;
  for (const char *law : {"gaussian", "uniform"})
    for (const char *kk : {"1", "64", "inf"})
      for (bool means : {false, true}) {
        PetscInt k, d;
        const auto w = logit_matrices({"--model.L", "16", "--model.H", "1024", "--model.d", "3", "--model.k", kk,
                                       "--data.M", "1", "--data.N", "2", "--init.law", law, "--init.q_gain", "1.5",
                                       "--init.k_gain", "0.7", "--init.q_mean", means ? "0.8" : "0", "--init.k_mean",
                                       means ? "-0.5" : "0", "--model.logit_exponent", "0.5"},
                                      &k, &d);
        const size_t n = w[0].size();
        ASSERT_EQ(n, 16384u);
        const std::string where = std::string(law) + " k = " + kk + (means ? " with means" : "");
        const bool infinite = std::string(kk) == "inf";
        const double variance = qg * kg / d * (qg * kg / d),
                     excess = infinite ? 0.0 : (law[0] == 'g' ? 6.0 : 0.24) / (double)k;
        for (PetscInt a = 0; a < d; ++a)
          for (PetscInt b = 0; b < d; ++b) {
            const Moments m = moments(w[a * d + b]);
            const double shift = a == b && a < std::min(k, d) && !infinite ? qm * km / std::sqrt((double)k) : 0.0;
            EXPECT_LT(std::fabs(m.mean - (means ? shift : 0.0)), 4 * m.mean_se) << where << " entry " << a << b;
            if (means) continue; // the means add variance of their own (docs/model.md)
            EXPECT_LT(std::fabs(m.kurtosis - excess), 4 * m.kurtosis_se) << where << " entry " << a << b;
            // The covariance with every entry (its variance with itself), within 4 standard errors.
            for (PetscInt e = 0; e < d * d; ++e) {
              std::vector<double> prod(n);
              for (size_t i = 0; i < n; ++i) prod[i] = w[a * d + b][i] * w[e][i];
              const Moments c = moments(prod);
              EXPECT_LT(std::fabs(c.mean - (e == a * d + b ? variance : 0.0)), 4 * c.mean_se)
                  << where << " covariance of entries " << a * d + b << " and " << e;
            }
          }
      }
}

// At g = 1 the infinite head's W vanishes: it attends uniformly, and x(1)
// is that of the k = d model at beta = 0 (the same V draws), to round-off; at
// g = 1/2 the TS forward equals the plain loop and differs from it.
TEST(InitLaw, InfiniteHeadForward) {
  auto x1 = [](std::vector<std::string> extra, bool plain) {
    auto p = make_problem(PETSC_COMM_WORLD, tiny(extra), "forward");
    EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
    std::vector<double> x = gather(p->x0);
    if (plain) plain_forward(p->settings.model, gather(p->heads.theta), p->tokens.M, p->tokens.N, x);
    return plain ? x : gather(p->x1);
  };
  for (const char *kind : {"qkv", "qkvo"}) {
    const std::vector<std::string> model = {"--model.head_kind", kind, "--model.beta", "2", "--model.d", "3"};
    auto with = [&](std::vector<std::string> more) {
      more.insert(more.begin(), model.begin(), model.end());
      return more;
    };
    const std::vector<std::string> half = with({"--model.k", "inf", "--model.logit_exponent", "0.5"});
    const std::vector<double> ts = x1(half, false);
    EXPECT_LT(relative_error(ts, x1(half, true)), 1e-13) << kind;
    EXPECT_GT(relative_error(ts, x1(with({"--model.k", "inf", "--model.logit_exponent", "1"}), false)), 1e-3) << kind;
    if (std::string(kind) == "qkv")
      EXPECT_LT(relative_error(x1(with({"--model.k", "inf", "--model.logit_exponent", "1"}), false),
                               x1(with({"--model.k", "3", "--model.beta", "0"}), false)),
                1e-14);
  }
}

// Gradient descent at g = 1/2 (docs/model.md, 'The infinite head'): a step
// -eps (dR/dQ, dR/dK) moves W = k^-1/2 Q^T K by -eps k^-1 (G K^T K + Q^T Q G),
// G = dR/dW, which tends to -eps (q_gain^2 + k_gain^2) / d G as k grows (Q^T
// Q / k -> q_gain^2 / d I), Q^T Q / k itself moving by O(k^-1): the infinite
// head trains W itself at that rate, which mft train does (model.k = inf).
// Checked by training a finite model and the infinite head that holds its W
// (Q = I, K = W, the same V, on the same targets) side by side with the
// optimizer mft train uses: their W part by a gap, relative to how far W
// moved, that falls like k^-1/2.
TEST(InitLaw, InfiniteHeadTrainsAsFiniteHeadsDo) {
  const std::vector<std::string> common = {"--model.d", "3", "--model.beta", "1", "--model.L", "2", "--model.H", "2",
                                           "--init.q_gain", "2", "--init.k_gain", "0.5", "--init.seed", "11",
                                           "--model.logit_exponent", "0.5", "--train.optimizer", "gd",
                                           "--train.lr", "0.5"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return tiny(more);
  };
  std::vector<double> gaps;
  for (const char *k : {"16", "1024"}) {
    auto finite = make_problem(PETSC_COMM_WORLD, with({"--model.k", k}));
    auto limit = make_problem(PETSC_COMM_WORLD, with({"--model.k", "inf"}));
    const HeadShape &f = finite->heads.shape, &e = limit->heads.shape;
    ASSERT_EQ(relative_error(gather(limit->x0), gather(finite->x0)), 0.0);
    ASSERT_EQ(VecCopy(finite->targets.y, limit->targets.y), 0);
    const size_t d = (size_t)f.d, rows = (size_t)f.k;
    auto logits = [&](const std::vector<double> &theta) { // k^-1/2 Q^T K of every head
      std::vector<double> W;
      for (size_t i = 0; i < theta.size() / (size_t)f.size; ++i)
        for (size_t a = 0; a < d; ++a)
          for (size_t b = 0; b < d; ++b) {
            double s = 0;
            for (size_t r = 0; r < rows; ++r) s += theta[i * f.size + f.offQ + r * d + a] * theta[i * f.size + f.offK + r * d + b];
            W.push_back(s / std::sqrt((double)rows));
          }
      return W;
    };
    const std::vector<double> theta = gather(finite->heads.theta), W0 = logits(theta);
    std::vector<double> theta_w = gather(limit->heads.theta);
    for (size_t i = 0; i < theta.size() / (size_t)f.size; ++i)
      for (size_t a = 0; a < d; ++a) {
        for (size_t b = 0; b < d; ++b)
          theta_w[i * e.size + e.offQ + a * d + b] = a == b, theta_w[i * e.size + e.offK + a * d + b] = W0[(i * d + a) * d + b];
        for (size_t b = 0; b < d; ++b) theta_w[i * e.size + e.offV + a * d + b] = theta[i * f.size + f.offV + a * d + b];
      }
    ASSERT_EQ(SetFromAll(limit->heads.theta, theta_w), 0);
    ASSERT_EQ(ProblemSetHeads(limit.get()), 0);
    double risk[2][2];
    for (int side = 0; side < 2; ++side) {
      Problem *p = side ? limit.get() : finite.get();
      Optimizer opt;
      ASSERT_EQ(OptimizerCreate(p->settings, p->heads, &opt), 0);
      for (int step = 0; step < 10; ++step) {
        ASSERT_EQ(ProblemEvaluate(p, PETSC_TRUE), 0);
        if (step == 0) risk[side][0] = p->risk;
        ASSERT_EQ(OptimizerStep(&opt, p->heads.theta, p->grad), 0);
        ASSERT_EQ(ProblemSetHeads(p), 0);
      }
      ASSERT_EQ(ProblemEvaluate(p, PETSC_FALSE), 0);
      risk[side][1] = p->risk;
      ASSERT_EQ(OptimizerDestroy(&opt), 0);
    }
    const std::vector<double> W = logits(gather(finite->heads.theta)), trained = gather(limit->heads.theta);
    double gap = 0, moved = 0, q_moved = 0;
    for (size_t i = 0; i < W.size() / (d * d); ++i)
      for (size_t a = 0; a < d * d; ++a) {
        const double Wi = trained[i * e.size + e.offK + a];
        gap += std::pow(W[i * d * d + a] - Wi, 2), moved += std::pow(Wi - W0[i * d * d + a], 2);
        q_moved += std::pow(trained[i * e.size + e.offQ + a] - theta_w[i * e.size + e.offQ + a], 2);
      }
    EXPECT_EQ(q_moved, 0.0) << "the infinite head's Q = I moved";
    EXPECT_LT(risk[1][1], 0.9 * risk[1][0]) << "the infinite head did not train";
    EXPECT_GT(std::sqrt(moved), 0.05) << "W hardly moved: the test could not see the rate";
    gaps.push_back(std::sqrt(gap / moved));
    PetscPrintf(PETSC_COMM_WORLD, "k = %s: W moved %.3f, the infinite head's from the finite one's %.4f; risk %.4g -> "
                "%.4g (finite), %.4g -> %.4g (infinite)\n", k, std::sqrt(moved), std::sqrt(gap), risk[0][0], risk[0][1],
                risk[1][0], risk[1][1]);
  }
  EXPECT_LT(gaps[1], 0.15) << "at k = 1024 the finite heads' W does not train as the infinite head's";
  EXPECT_GT(gaps[0] / gaps[1], 3.0) << "the gap does not fall like k^-1/2: " << gaps[0] << " -> " << gaps[1];
}

} // namespace
