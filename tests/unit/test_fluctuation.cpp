// The error's law at initialisation (fluctuation.hpp) against truths it does
// not compute itself: at beta = 0 every token attends to the mean, the mean
// moves linearly by the heads' mean value map Abar and the deviations stay,
// so E(L) and F_L have closed forms in Abar and the ensemble's value maps;
// the Hutchinson estimate against the exact trace (every unit vector); a
// brute-force average over many seeds of the finite model against the law;
// all ranks against one. ctest runs them as fluctuation_np1, fluctuation_np3.
#include "helpers.hpp"
#include "mft/flow/fluctuation.hpp"
#include "mft/flow/limit.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

// A small dense matrix (row-major, n x n).
using Matrix = std::vector<double>;
Matrix product(const Matrix &A, const Matrix &B, PetscInt n) {
  Matrix C((size_t)(n * n), 0.0);
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt k = 0; k < n; ++k)
      for (PetscInt j = 0; j < n; ++j) C[i * n + j] += A[i * n + k] * B[k * n + j];
  return C;
}
Matrix identity_plus(const Matrix &A, double f, PetscInt n) {
  Matrix B((size_t)(n * n));
  for (PetscInt e = 0; e < n * n; ++e) B[e] = f * A[e] + (e % (n + 1) == 0 ? 1.0 : 0.0);
  return B;
}
std::vector<double> apply(const Matrix &A, const std::vector<double> &x, PetscInt n) {
  std::vector<double> y((size_t)n, 0.0);
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt j = 0; j < n; ++j) y[i] += A[i * n + j] * x[j];
  return y;
}
double norm2(const std::vector<double> &v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

std::vector<std::string> law_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--model.d", "3", "--model.k", "2", "--data.M", "2", "--data.N", "4", "--init.v_mean",
                                "0.5", "--limit.heads", "256", "--limit.sample_heads", "0", "--model.L", "6",
                                "--model.H", "8"};
  for (size_t e = 0; e + 1 < extra.size(); e += 2) {
    auto it = std::find(a.begin(), a.end(), extra[e]);
    if (it != a.end()) *(it + 1) = extra[e + 1];
    else a.insert(a.end(), {extra[e], extra[e + 1]});
  }
  return a;
}

} // namespace

// beta = 0: x_i' = Abar xbar for every token, so with xbar_l = (I + Abar/L)^l
// xbar(0), E(L) = |((I + Abar/L)^L - e^Abar) xbar| and F_L^2 = (1/L) sum_l
// E_h |(I + Abar/L)^(L-l-1) (A_h - Abar) xbar_l|^2, E_h over the ensemble's
// heads (all of them here): the exact trace meets it to 1e-10, E(L) to the
// adaptive solve's tolerance; Gaussian probes meet it within 4 of their
// standard errors.
TEST(Fluctuation, BetaZeroClosedForm) {
  for (const char *kind : {"qkv", "qkvo"}) {
    const Settings s = settings(law_args({"--model.beta", "0", "--limit.probes", "0", "--model.head_kind", kind}), "limit");
    FluctuationResult r, h;
    ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, s, &r), 0);
    Settings sh = s;
    sh.limit.probes = 16;
    ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, sh, &h), 0);
    Problem q; // the ensemble as the law draws it
    ASSERT_EQ(ProblemCreate(PETSC_COMM_WORLD, LimitSettingsFor(s), &q), 0);
    const std::vector<double> theta = gather(q.heads.theta), x0 = gather(q.x0);
    const HeadShape &shape = q.heads.shape;
    const PetscInt d = 3, H = q.heads.H, L = 6;
    std::vector<Matrix> A((size_t)H, Matrix((size_t)(d * d), 0.0));
    Matrix Abar((size_t)(d * d), 0.0);
    for (PetscInt hd = 0; hd < H; ++hd) {
      const double *th = theta.data() + hd * shape.size;
      for (PetscInt i = 0; i < d; ++i)
        for (PetscInt j = 0; j < d; ++j) {
          double a = 0;
          if (shape.kind == HeadKind::qkv) a = th[shape.offV + i * d + j];
          else
            for (PetscInt c = 0; c < shape.k; ++c) a += th[shape.offO + i * shape.k + c] * th[shape.offV + c * d + j];
          A[hd][i * d + j] = a, Abar[i * d + j] += a / (double)H;
        }
    }
    Matrix exp_A = identity_plus(Abar, 0.0, d), term = exp_A; // e^Abar by its series (|Abar| ~ 1)
    for (int n = 1; n < 40; ++n) {
      term = product(term, Abar, d);
      for (double &t : term) t /= n;
      for (PetscInt e = 0; e < d * d; ++e) exp_A[e] += term[e];
    }
    const Matrix step = identity_plus(Abar, 1.0 / L, d);
    for (PetscInt m = 0; m < 2; ++m) {
      std::vector<double> xbar((size_t)d, 0.0);
      for (PetscInt i = 0; i < 4; ++i)
        for (PetscInt c = 0; c < d; ++c) xbar[c] += x0[(m * 4 + i) * d + c] / 4.0;
      std::vector<double> xl = xbar, euler = xbar, diff;
      for (PetscInt l = 0; l < L; ++l) euler = apply(step, euler, d);
      diff = apply(exp_A, xbar, d);
      for (PetscInt c = 0; c < d; ++c) diff[c] = euler[c] - diff[c];
      double F2 = 0;
      for (PetscInt l = 0; l < L; ++l) {
        Matrix after = identity_plus(Abar, 0.0, d);
        for (PetscInt j = l + 1; j < L; ++j) after = product(after, step, d);
        for (PetscInt hd = 0; hd < H; ++hd) {
          Matrix dA = A[hd];
          for (PetscInt e = 0; e < d * d; ++e) dA[e] -= Abar[e];
          F2 += norm2(apply(after, apply(dA, xl, d), d)) / (double)(H * L);
        }
        xl = apply(step, xl, d);
      }
      EXPECT_NEAR(r.euler2[m], norm2(diff), 1e-6 * norm2(diff)) << kind << " sequence " << m;
      EXPECT_NEAR(r.fluctuation2[m], F2, 1e-10 * F2) << kind << " sequence " << m;
      EXPECT_LT(std::fabs(h.fluctuation2[m] - F2), 4 * h.fluctuation2_se[m]) << kind << " Hutchinson, sequence " << m;
      EXPECT_GT(h.fluctuation2_se[m], 0.0);
      EXPECT_GT(F2, 1e-3);
    }
    ASSERT_EQ(ProblemDestroy(&q), 0);
  }
}

// At beta = 1, with the mask and both norms: the Hutchinson estimate (64
// Gaussian probes) against the exact trace (every unit vector), within 4 of
// its standard errors, with every head of the ensemble; the exact trace's
// covariance spectrum sums to F^2, its Euler coordinates to E^2.
TEST(Fluctuation, HutchinsonAgainstExactTrace) {
  for (auto variant : std::vector<std::vector<std::string>>{{"--model.causal", "true"}, {"--model.norm", "sphere"},
                                                            {"--model.norm", "pre", "--model.head_kind", "qkvo"}}) {
    Settings e = settings(law_args(variant), "limit"), gauss = e;
    e.limit.probes = 0, gauss.limit.probes = 64;
    FluctuationResult a, b;
    ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, e, &a), 0);
    ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, gauss, &b), 0);
    EXPECT_EQ(a.probes, 12);
    ASSERT_EQ(a.spectrum.size(), (size_t)(a.M * 12));
    ASSERT_EQ(b.spectrum.size(), 0u) << "no covariance from Gaussian probes";
    for (PetscInt m = 0; m < a.M; ++m) { // the spectrum and the Euler coordinates sum to F^2 and E^2
      double trace = 0, c2 = 0;
      for (PetscInt i = m * 12; i < (m + 1) * 12; ++i) trace += a.spectrum[i], c2 += a.euler_coords[i] * a.euler_coords[i];
      EXPECT_NEAR(trace / 4, a.fluctuation2[m], 1e-12 * a.fluctuation2[m]);
      EXPECT_NEAR(c2 / 4, a.euler2[m], 1e-10 * a.euler2[m] + 1e-300);
    }
    for (PetscInt m = 0; m < a.M; ++m) {
      EXPECT_LT(std::fabs(b.fluctuation2[m] - a.fluctuation2[m]), 4 * b.fluctuation2_se[m]) << variant[1] << " " << m;
      EXPECT_LT(b.fluctuation2_se[m], 0.5 * a.fluctuation2[m]);
    }
  }
}

// The law against a brute-force average over 300 seeds of the finite 8 x 16
// model (L H = 128), beta 0 and 1: the mean over seeds of err^2 against a
// reference of 16384 shared heads (its own error about 128/16384 of the
// models') is within 3 standard errors (the seeds' and the law's) of E^2 +
// F^2 / (L H), summed over the probe sequences.
TEST(Fluctuation, BruteForceOverSeeds) {
  for (const char *beta : {"0", "1"}) {
    const Settings s = settings(law_args({"--model.beta", beta, "--model.L", "8", "--model.H", "16", "--limit.heads",
                                          "4096", "--limit.sample_heads", "1024", "--limit.probes", "0"}),
                                "limit");
    const std::vector<std::string> model = {"--model.d", "3", "--model.k", "2", "--data.M", "2", "--data.N", "4",
                                            "--init.v_mean", "0.5", "--model.beta", beta, "--model.L", "8",
                                            "--model.H", "16"};
    FluctuationResult r;
    ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, s, &r), 0);
    Settings big = s;
    big.limit.heads = 16384;
    LimitResult reference;
    ASSERT_EQ(LimitSolve(PETSC_COMM_WORLD, LimitSettingsFor(big), &reference), 0);
    const int seeds = 300;
    double sum = 0, sum2 = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      std::vector<std::string> a = model;
      a.insert(a.end(), {"--init.seed", std::to_string(1000 + seed)});
      auto p = make_problem(PETSC_COMM_WORLD, a);
      ASSERT_EQ(ProblemEvaluate(p.get(), PETSC_FALSE), 0);
      const std::vector<double> x1 = gather(p->x1);
      double e2 = 0; // summed over the sequences of (1/N) sum_i |x_i - X_i|^2
      for (size_t e = 0; e < x1.size(); ++e) e2 += (x1[e] - reference.tokens[e]) * (x1[e] - reference.tokens[e]) / 4.0;
      sum += e2, sum2 += e2 * e2;
    }
    const double mean = sum / seeds, se = std::sqrt((sum2 / seeds - mean * mean) / (seeds - 1));
    double law = 0, law_var = 0;
    for (PetscInt m = 0; m < r.M; ++m) {
      law += r.euler2[m] + r.fluctuation2[m] / 128.0;
      law_var += std::pow(r.fluctuation2_se[m] / 128.0, 2);
    }
    EXPECT_LT(std::fabs(mean - law), 3 * std::sqrt(se * se + law_var)) << "beta " << beta << ": brute force " << mean
                                                                       << " +- " << se << ", law " << law;
    double euler = 0;
    for (double e2 : r.euler2) euler += e2;
    EXPECT_GT(law, 2 * euler) << "the fluctuation, not the Euler error, is what is checked";
    PetscPrintf(PETSC_COMM_WORLD, "beta %s: brute force %.5g +- %.2g, law %.5g (Euler part %.5g)\n", beta, mean, se, law,
                euler);
  }
}

// The tangent map of the ensemble's first heads (limit.adjoint_heads) moves
// F_L^2 by little (here under 2% of 4096 heads' with 512), leaves E(L) as it
// is; X(1) handed in (a study's reference 0) gives what it solves itself.
TEST(Fluctuation, TangentOfTheFirstHeadsAndAGivenLimit) {
  Settings s = settings(law_args({"--limit.heads", "4096", "--limit.probes", "0", "--limit.sample_heads", "512"}), "limit");
  s.limit.adjoint_heads = 0;
  FluctuationResult all, first, given;
  ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, s, &all), 0);
  LimitResult limit;
  ASSERT_EQ(LimitSolve(PETSC_COMM_WORLD, LimitSettingsFor(s), &limit), 0);
  s.limit.adjoint_heads = 512;
  ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, s, &first), 0);
  ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, s, &given, &limit.tokens), 0);
  EXPECT_LT(relative_error(first.euler2, all.euler2), 1e-13);
  EXPECT_LT(relative_error(first.fluctuation2, all.fluctuation2), 0.02);
  EXPECT_GT(relative_error(first.fluctuation2, all.fluctuation2), 0.0) << "the tangent is another ensemble's";
  EXPECT_LT(relative_error(given.euler2, first.euler2), 1e-12);
  EXPECT_LT(relative_error(given.fluctuation2, first.fluctuation2), 1e-13);
}

// All ranks against one (every estimate to 1e-10), the tangent of the first heads too.
TEST(Fluctuation, RanksAgree) {
  const Settings s =
      settings(law_args({"--model.causal", "true", "--limit.probes", "3", "--limit.adjoint_heads", "64"}), "limit");
  FluctuationResult all, one;
  ASSERT_EQ(LimitFluctuation(PETSC_COMM_WORLD, s, &all), 0);
  ASSERT_EQ(LimitFluctuation(PETSC_COMM_SELF, s, &one), 0);
  EXPECT_LT(relative_error(all.euler2, one.euler2), 1e-10);
  EXPECT_LT(relative_error(all.fluctuation2, one.fluctuation2), 1e-10);
  EXPECT_LT(relative_error(all.fluctuation2_se, one.fluctuation2_se), 1e-10);
}
