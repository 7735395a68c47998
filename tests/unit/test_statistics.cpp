// The expansion fits (statistics/expansion.hpp): exact on data without
// noise, and calibrated on noisy data at the depth study's effect size: the
// misfit flag's power against a two-term truth under a one-term fit, its
// false alarms on a one-term truth, and the free order's interval coverage.
#include "helpers.hpp"
#include "mft/layout/random.hpp"
#include "mft/statistics/bootstrap.hpp"
#include "mft/statistics/expansion.hpp"
#include "mft/statistics/gls.hpp"
#include "mft/statistics/replicates.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

using namespace mft;

namespace {

const std::vector<double> kDepths = {1, 2, 4, 8, 16, 32, 64};

// Values of `truth` at the depths >= from, each with relative standard error
// rse, drawn from stream `st` (noise 0: the truth itself).
void Draw(const std::function<double(double)> &truth, double from, double rse, Stream *st, double noise,
          std::vector<double> *x, std::vector<double> *y, std::vector<double> *se) {
  x->clear(), y->clear(), se->clear();
  for (double L : kDepths) {
    if (L < from) continue;
    const double v = truth(L), s = rse * std::fabs(v);
    x->push_back(L), y->push_back(v + noise * s * st->normal()), se->push_back(s);
  }
}

} // namespace

// Data without noise: the power law's order and constant, the fixed-order
// two-term coefficients and the free order of a two-term law, exactly, with
// chi^2 zero and the fit not rejected.
TEST(Statistics, ExactDataGiveTheirExpansions) {
  std::vector<double> x, y, se;
  Stream st(1, 0);
  Draw([](double L) { return 2 * std::pow(L, -0.7); }, 1, 0.01, &st, 0, &x, &y, &se);
  Expansion one = ExpansionFit(x, y, se, 1, true);
  ASSERT_EQ(one.terms, 1);
  EXPECT_NEAR(one.p, 0.7, 1e-7);
  EXPECT_NEAR(one.c[0], 2, 1e-6);
  EXPECT_LT(one.chi2, 1e-9);
  EXPECT_EQ(one.dof, 5);
  EXPECT_FALSE(one.rejected());
  Draw([](double L) { return 1.5 / L - 2.7 / (L * L); }, 1, 0.01, &st, 0, &x, &y, &se);
  Expansion two = ExpansionFit(x, y, se, 2, false, 1);
  ASSERT_EQ(two.terms, 2);
  EXPECT_NEAR(two.c[0], 1.5, 1e-10);
  EXPECT_NEAR(two.c[1], -2.7, 1e-10);
  EXPECT_EQ(two.dof, 5);
  Draw([](double L) { return 0.8 * std::pow(L, -1.3) + 0.5 * std::pow(L, -2.3); }, 1, 0.01, &st, 0, &x, &y, &se);
  Expansion free = ExpansionFit(x, y, se, 2, true);
  EXPECT_NEAR(free.p, 1.3, 1e-6);
  EXPECT_NEAR(free.c[0], 0.8, 1e-5);
  EXPECT_LT(free.p_lo, 1.3);
  EXPECT_GT(free.p_hi, 1.3);
  // Too few points for the parameters and a degree of freedom: no fit.
  EXPECT_EQ(ExpansionFit({8, 16, 32}, {1, 0.5, 0.25}, {0.01, 0.01, 0.01}, 2, true).terms, 0);
}

// One meaning of "decided": a degree of freedom, the fit not rejected, the
// 95% interval no wider than 0.2 (and a free order not at its range's end).
TEST(Statistics, DecidedNeedsANarrowIntervalAndAFitThatHolds) {
  EXPECT_TRUE(Decided(0.90, 1.05, 0.3));
  EXPECT_FALSE(Decided(0.90, 1.15, 0.3)); // too wide
  EXPECT_FALSE(Decided(0.90, 1.05, 0.01)); // rejected
  EXPECT_FALSE(Decided(0.90, 1.05, NAN));  // no degree of freedom
  EXPECT_FALSE(Decided(NAN, 1.05, 0.3));
  Expansion e;
  EXPECT_FALSE(Decided(e)); // no fit
}

// At the depth data's effect size (the two-term law b/a = -1.8 and a
// relative standard error of 0.016 a level, docs/results.md 'The depth
// order'), 400 replicates each: a one-term fit of the two-term truth is
// rejected in at least 90% of them over L >= 1 (the power), a one-term fit of
// a one-term truth in at most 10% (the false alarms); the free order of a
// two-term fit of the two-term truth holds the true order 1 in 88% to 99%.
TEST(Statistics, MisfitFlagHasPowerAndFewFalseAlarms) {
  MFT_ONE_RANK_TEST();
  const int replicates = 400;
  const double rse = 0.016;
  const auto two_term = [](double L) { return 1.5 / L - 2.7 / (L * L); };
  const auto one_term = [](double L) { return 1.5 * std::pow(L, -0.9); };
  std::vector<double> x, y, se;
  Stream st(20261206, 0);
  for (double from : {1.0, 4.0, 8.0}) {
    int flagged = 0, false_alarms = 0, covered = 0, fits = 0;
    for (int r = 0; r < replicates; ++r) {
      Draw(two_term, from, rse, &st, 1, &x, &y, &se);
      flagged += ExpansionFit(x, y, se, 1, true).rejected();
      const Expansion free = ExpansionFit(x, y, se, 2, true);
      fits += free.terms == 2;
      covered += free.terms == 2 && free.p_lo <= 1 && 1 <= free.p_hi;
      Draw(one_term, from, rse, &st, 1, &x, &y, &se);
      false_alarms += ExpansionFit(x, y, se, 1, true).rejected();
    }
    std::printf("L >= %g: one term rejected for the two-term truth %.3f, for the one-term truth %.3f; the two-term "
                "free order's interval holds 1 in %.3f\n",
                from, (double)flagged / replicates, (double)false_alarms / replicates, (double)covered / fits);
    if (from == 1) EXPECT_GE(flagged, 0.9 * replicates);
    EXPECT_LE(false_alarms, 0.1 * replicates) << "L >= " << from;
    EXPECT_GE(covered, 0.88 * fits) << "L >= " << from;
    EXPECT_LE(covered, 0.99 * fits) << "L >= " << from;
  }
}

// A resample's counts sum to its units; the interval by hand: one source of
// 4 units whose replicates are 1 and 3 (variance 2) gives V = 2 * 4/3 on
// nu = 3 degrees of freedom, t_3 = 3.18245; a parametric source (infinite
// units) the normal's 1.95996; two sources add their V, nu by Welch.
TEST(Statistics, BootstrapIntervalByHand) {
  Stream st(3, 0);
  for (size_t n : {1, 4, 17}) {
    const std::vector<double> c = BootstrapCounts(n, st);
    double sum = 0;
    for (double x : c) {
      EXPECT_GE(x, 0);
      sum += x;
    }
    EXPECT_EQ(sum, (double)n);
  }
  const double V = 2 * 4.0 / 3;
  auto i = BootstrapInterval(10, {{1, 3}}, {4});
  EXPECT_NEAR(i[1] - 10, 3.182446305 * std::sqrt(V), 1e-8);
  EXPECT_NEAR(10 - i[0], 3.182446305 * std::sqrt(V), 1e-8);
  i = BootstrapInterval(10, {{1, 3, NAN}}, {INFINITY});
  EXPECT_NEAR(i[1] - 10, 1.959963985 * std::sqrt(2.0), 1e-8);
  // V = 8/3 + 8/3 (the second source also 4 units, values 0 and 2): nu = V^2 / (2 (8/3)^2 / 3) = 6, t_6 = 2.446912.
  i = BootstrapInterval(0, {{1, 3}, {0, 2}}, {4, 4});
  EXPECT_NEAR(i[1], 2.446911851 * std::sqrt(2 * V), 1e-8);
  i = BootstrapInterval(0, {{1}}, {4});
  EXPECT_TRUE(std::isnan(i[0]) && std::isnan(i[1]));
}

// A free order's interval from replicates is BootstrapInterval's over the
// orders that ExpansionFit finds on each replicate alone, held to the
// search range; a fixed order is left as it was.
TEST(Statistics, ResampledOrderIsTheReplicatesOrders) {
  const std::vector<double> x = {1, 2, 4, 8, 16}, se = {0.02, 0.01, 0.006, 0.003, 0.002};
  std::vector<double> y;
  for (double v : x) y.push_back(0.5 * std::pow(v, -0.8));
  Stream st(11, 0);
  std::vector<Resample> sources(2);
  std::vector<std::vector<double>> orders(2);
  for (int s = 0; s < 2; ++s) {
    sources[s].units = s ? 4 : 8;
    for (int b = 0; b < 50; ++b) {
      std::vector<double> d;
      for (size_t i = 0; i < y.size(); ++i) d.push_back(y[i] + se[i] * (s ? 0.5 : 1.0) * st.normal());
      sources[s].draws.push_back(d);
      orders[s].push_back(ExpansionFit(x, d, se, 1, true).p);
    }
  }
  Expansion e = ExpansionFit(x, y, se, 1, true);
  ASSERT_EQ(e.terms, 1);
  ExpansionResampled(&e, x, se, sources);
  const std::array<double, 2> want = BootstrapInterval(e.p, orders, {8, 4});
  EXPECT_NEAR(e.p_lo, std::max(want[0], kOrderMin), 1e-12);
  EXPECT_NEAR(e.p_hi, std::min(want[1], kOrderMax), 1e-12);
  EXPECT_LT(e.p_lo, 0.8);
  EXPECT_GT(e.p_hi, 0.8);
  Expansion fixed = ExpansionFit(x, y, se, 2, false, 1);
  const double lo = fixed.p_lo;
  ExpansionResampled(&fixed, x, se, sources);
  EXPECT_EQ(fixed.p_lo, lo);
}

// Replicates (statistics/replicates.hpp): the pairs counted by hand, the
// calibrated fraction against a simulation of replicates with exact
// intervals, and the pool against its closed form.
TEST(Statistics, ReplicatesAgreeAsCounted) {
  // 0 lies in 1's interval and 1 in 0's; 2 in neither; 0 and 1 not in 2's; 3 undetermined.
  const std::vector<ReplicateFigure> f = {{0.50, 0.40, 0.60, true}, {0.55, 0.45, 0.65, true},
                                          {0.90, 0.85, 0.95, true}, {0.50, 0.0, 1.0, false}};
  const ReplicateAgreement a = AgreementOf(f);
  EXPECT_EQ(a.pairs, 6);
  EXPECT_EQ(a.agree, 2);
  EXPECT_EQ(a.undetermined, 6);
  EXPECT_DOUBLE_EQ(a.fraction(), 2.0 / 6);
  EXPECT_TRUE(std::isnan(AgreementOf({f[3]}).fraction()));
}

TEST(Statistics, ReplicatesOfExactIntervalsAgreeAsExpected) {
  EXPECT_NEAR(AgreementExpected(0.95), 0.8342, 1e-4);
  Stream st(17, 0);
  ReplicateAgreement all;
  const double z = 1.959963984540054, se = 0.1;
  for (int trial = 0; trial < 8000; ++trial) {
    std::vector<ReplicateFigure> f;
    for (int r = 0; r < 5; ++r) {
      const double x = 1 + se * st.normal();
      f.push_back({x, x - z * se, x + z * se, true});
    }
    all += AgreementOf(f);
  }
  // 160000 pairs, correlated within a trial: the fraction's error is below 0.0042.
  EXPECT_NEAR(all.fraction(), AgreementExpected(0.95), 0.006);
  // Intervals too narrow by half agree far less often.
  ReplicateAgreement narrow;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<ReplicateFigure> f;
    for (int r = 0; r < 5; ++r) {
      const double x = 1 + se * st.normal();
      f.push_back({x, x - z * se / 2, x + z * se / 2, true});
    }
    narrow += AgreementOf(f);
  }
  EXPECT_LT(narrow.fraction(), 0.6);
}

TEST(Statistics, ReplicatesPoolByInverseVariance) {
  const double z = 1.959963984540054;
  // Standard errors 0.1 and 0.2: weights 100 and 25.
  const std::vector<ReplicateFigure> f = {{1.0, 1.0 - 0.1 * z, 1.0 + 0.1 * z, true},
                                          {2.0, 2.0 - 0.2 * z, 2.0 + 0.2 * z, true},
                                          {9.0, 8.0, 10.0, false}, {5.0, 5.0, 5.0, true}};
  const PooledFigure p = PoolOf(f);
  EXPECT_EQ(p.used, 2);
  EXPECT_NEAR(p.value, (100 * 1.0 + 25 * 2.0) / 125, 1e-12);
  EXPECT_NEAR(p.hi - p.value, z / std::sqrt(125.0), 1e-12);
  EXPECT_NEAR(p.value - p.lo, z / std::sqrt(125.0), 1e-12);
  EXPECT_EQ(PoolOf({f[2]}).used, 0);
  EXPECT_TRUE(std::isnan(PoolOf({f[2]}).value));
}

// The exponential rate in depth: on data drawn about y0 e^(-lambda s) with
// Gaussian errors of known spread, the 95% interval covers lambda in 0.95 of
// 4000 draws (within 0.012) and the line is rejected in about 0.05; on a
// curved truth, e^(-lambda s + 2 s^2), it is rejected in nearly all.
TEST(Statistics, DepthRateCoversAndRejectsCurvature) {
  Stream r(29, kLawDraw);
  const int draws = 4000;
  int covered = 0, rejected = 0, curved_rejected = 0;
  for (int n = 0; n < draws; ++n)
    for (const double bend : {0.0, 2.0}) {
      std::vector<double> s, y, se;
      for (int k = 0; k <= 8; ++k) {
        const double depth = k / 8.0, truth = 3.0 * std::exp(-1.7 * depth + bend * depth * depth);
        const double spread = k == 0 ? 0.0 : 0.02 * truth;
        s.push_back(depth), se.push_back(spread), y.push_back(truth + spread * r.normal());
      }
      std::vector<double> cov(81, 0.0); // independent depths: a diagonal covariance
      for (int k = 0; k <= 8; ++k) cov[k * 9 + k] = se[k] * se[k];
      const DepthRate f = DepthRateFit(s, y, cov);
      ASSERT_EQ(f.points, 8u);
      ASSERT_EQ(f.dof, 6);
      if (bend == 0) covered += f.lo <= 1.7 && 1.7 <= f.hi, rejected += f.p_value < 0.05;
      else curved_rejected += f.p_value < 0.05;
    }
  EXPECT_NEAR((double)covered / draws, 0.95, 0.012);
  EXPECT_NEAR((double)rejected / draws, 0.05, 0.012);
  EXPECT_GT((double)curved_rejected / draws, 0.95);
}

// Generalised least squares against closed forms. Equicorrelated points
// (C = s^2 ((1 - r) I + r 1 1^T)) about a line with an intercept: the GLS
// line is the ordinary one, its slope's variance s^2 (1 - r) / Sxx and chi^2
// the residuals' sum of squares over s^2 (1 - r) (the shared part moves
// every point alike, and the intercept takes it). Independent points of
// unequal variances: weighted least squares' closed forms.
TEST(Statistics, GlsAgreesWithClosedForms) {
  Stream st(41, 0);
  const std::vector<double> t = {0.1, 0.35, 0.4, 0.7, 0.9, 1.3};
  const size_t n = t.size();
  std::vector<double> X, y(n), C(n * n);
  for (size_t i = 0; i < n; ++i) X.push_back(t[i]), X.push_back(1), y[i] = 2 - 1.5 * t[i] + 0.3 * st.normal();
  const double s2 = 0.09, r = 0.6;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) C[i * n + j] = s2 * ((i == j ? 1 - r : 0) + r);
  double tm = 0, ym = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) tm += t[i] / n, ym += y[i] / n;
  for (size_t i = 0; i < n; ++i) sxx += (t[i] - tm) * (t[i] - tm), sxy += (t[i] - tm) * (y[i] - ym);
  const double b = sxy / sxx, a = ym - b * tm;
  double rss = 0;
  for (size_t i = 0; i < n; ++i) rss += std::pow(y[i] - a - b * t[i], 2);
  const GlsFit f = GlsFitOf(X, 2, y, C);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.beta[0], b, 1e-12);
  EXPECT_NEAR(f.beta[1], a, 1e-12);
  EXPECT_NEAR(f.cov[0], s2 * (1 - r) / sxx, 1e-12);
  EXPECT_NEAR(f.chi2, rss / (s2 * (1 - r)), 1e-10);
  EXPECT_EQ(f.dof, 4);
  // Independent, unequal variances: the weighted means' closed form.
  std::vector<double> D(n * n, 0.0), w(n);
  double W = 0, wt = 0, wy = 0, wtt = 0, wty = 0;
  for (size_t i = 0; i < n; ++i) {
    D[i * n + i] = 0.01 * (1 + i), w[i] = 1 / D[i * n + i];
    W += w[i], wt += w[i] * t[i], wy += w[i] * y[i], wtt += w[i] * t[i] * t[i], wty += w[i] * t[i] * y[i];
  }
  const double det = W * wtt - wt * wt;
  const GlsFit g = GlsFitOf(X, 2, y, D);
  ASSERT_TRUE(g.ok);
  EXPECT_NEAR(g.beta[0], (W * wty - wt * wy) / det, 1e-10);
  EXPECT_NEAR(g.cov[0], W / det, 1e-12);
  // A covariance that is not positive definite is refused.
  std::vector<double> bad = C;
  bad[1] = bad[n] = 2 * s2;
  EXPECT_FALSE(GlsFitOf(X, 2, y, bad).ok);
}
