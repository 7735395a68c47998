// Study aggregation on synthetic case files with known exponents.
#include "helpers.hpp"
#include "mft/layout/h5.hpp"
#include "mft/layout/heads.hpp"
#include "mft/files/runfile.hpp"
#include "mft/studies/study.hpp"
#include "mft/studies/study_statistics.hpp"

#include <cmath>
#include <sys/stat.h>

using namespace mft;
using namespace mft::test;

namespace {

// Writes the synthetic probe outputs of case c (one family, `discrete`).
void write_case(const Settings &s, const std::string &dir, const StudyCase &c, std::vector<unsigned long long> dims,
                const std::vector<double> &x, const std::vector<double> &p) {
  EXPECT_EQ(ResultFileWrite(PETSC_COMM_SELF, s,
                            {{"/probes/discrete/tokens", dims, x.data()}, {"/probes/discrete/adjoint", dims, p.data()}},
                            {}, dir + "/case-" + std::to_string(c.index) + ".h5"),
            0);
}

// Aggregates dir (nothing missing) and reads attributes of study.h5 as numbers.
std::vector<double> aggregate(const Settings &s, const std::string &dir, const std::vector<std::string> &keys) {
  MPI_Barrier(PETSC_COMM_WORLD);
  PetscInt missing = -1;
  EXPECT_EQ(StudyAggregate(PETSC_COMM_WORLD, s, dir, &missing), 0);
  EXPECT_EQ(missing, 0);
  std::vector<std::string> v;
  EXPECT_EQ(RunFileAttributes(PETSC_COMM_WORLD, dir + "/study.h5", keys, &v), 0);
  std::vector<double> out;
  for (auto &t : v) out.push_back(std::stod(t));
  return out;
}

// The joint fit (the first four values: a, b, C1, C2) recovers the exponents
// to 0.011 and the constants to 3%.
void expect_fit(const std::vector<double> &v, double a, double b, double C1, double C2) {
  EXPECT_NEAR(v[0], a, 0.011);
  EXPECT_NEAR(v[1], b, 0.011);
  EXPECT_NEAR(v[2], C1, 0.03 * C1);
  EXPECT_NEAR(v[3], C2, 0.03 * C2);
}

// err(L, H) = C1/L + C2 L^-a H^-b written as probe tokens at that distance from a zero reference.
TEST(Study, AggregationRecoversKnownExponents) {
  int rank;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const std::string dir = "test_study_synthetic";
  Settings s = settings({"--study.L", "2 4 8 16 32", "--study.H", "2 4 8 16 32", "--study.seeds", "1", "--study.probes",
                         "discrete", "--study.probe_M", "2", "--data.N", "2", "--model.d", "1", "--model.k", "1",
                         "--study.dir", dir},
                        "study");
  const double C1 = 0.5, C2 = 2.0, a = 0.33, b = 0.5;
  if (rank == 0) {
    mkdir(dir.c_str(), 0755);
    for (const StudyCase &c : StudyCases(s)) {
      const double e = c.reference ? 0.0 : C1 / c.L + C2 * std::pow(c.L, -a) * std::pow(c.H, -b);
      // Sequence 0 at distance e, sequence 1 at e/2: the max over probes is e.
      write_case(s, dir, c, {2, 2, 1}, {e, e, e / 2, e / 2}, {3 * e, 3 * e, 0, 0});
    }
  }
  const std::vector<double> v = aggregate(s, dir,
                                          {"v0.tokens.a", "v0.tokens.b", "v0.tokens.C1", "v0.tokens.C2", "v0.adjoint.C2",
                                           "v0.tokens.slope_H"});
  ASSERT_EQ(v.size(), 6u);
  expect_fit(v, a, b, C1, C2);
  EXPECT_NEAR((v[4]), 3 * C2, 0.03 * 3 * C2); // the adjoint's errors are 3 times larger
  // At L = 32 the H term dominates: the slope in H approaches -b.
  EXPECT_NEAR((v[5]), -b, 0.1);
  EXPECT_LT((v[5]), -0.35);
}

TEST(Study, CasesAreNumberedPerVariant) {
  Settings s = settings({"--study.L", "2 4", "--study.H", "3", "--study.seeds", "2", "--study.variants",
                         "data.N=4; data.N=8", "--study.references", "2"},
                        "study");
  const auto cases = StudyCases(s);
  ASSERT_EQ(cases.size(), 2u * (2 + 2 * 1 * 2));
  EXPECT_TRUE(cases[0].reference && cases[1].reference);
  EXPECT_EQ(cases[1].reference_index, 1);
  EXPECT_FALSE(cases[2].reference);
  EXPECT_TRUE(cases[6].reference && cases[7].reference);
  EXPECT_EQ(cases[6].variant, 1);
  EXPECT_EQ(cases[5].L, 4);
  EXPECT_EQ(cases[5].seed, 2);
}

// A learning-rate study: every base variant at each rate, in order.
TEST(Study, LearningRatesAreVariants) {
  Settings s = settings({"--study.L", "2", "--study.H", "3", "--study.seeds", "1", "--study.variants",
                         "data.N=4; data.N=8", "--study.learning_rates", "0.1 0.01 0.03", "--study.references", "0",
                         "--study.state", "trained"},
                        "study");
  const auto v = StudyVariants(s);
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0], "data.N=4 train.lr=0.1");
  EXPECT_EQ(v[5], "data.N=8 train.lr=0.03");
  EXPECT_EQ(StudyCases(s).size(), 6u); // no references: one model per variant
}

// The best rate: the vertex of a parabola in log rate is found exactly; a
// minimum at an end of the grid is that end, flagged; uneven spacing too.
TEST(StudyStatistics, BestRateIsTheParabolasVertex) {
  const double best = 0.02;
  for (const std::vector<double> &rates :
       {std::vector<double>{0.001, 0.003, 0.01, 0.03, 0.1}, std::vector<double>{0.002, 0.005, 0.03, 0.05, 0.4}}) {
    std::vector<double> risk;
    for (double r : rates) risk.push_back(std::exp(0.7 * std::pow(std::log(r / best), 2) - 1.0));
    bool edge = true;
    EXPECT_NEAR(StudyBestRate(rates, risk, &edge), best, 1e-12);
    EXPECT_FALSE(edge);
    std::vector<double> falling;
    for (double r : rates) falling.push_back(1.0 / r);
    EXPECT_EQ(StudyBestRate(rates, falling, &edge), rates.back());
    EXPECT_TRUE(edge);
    risk.front() = INFINITY; // a diverged (missing) rate away from the minimum changes nothing
    EXPECT_NEAR(StudyBestRate(rates, risk, &edge), best, 1e-12);
    risk[3] = INFINITY; // next to the minimum: the grid point itself
    EXPECT_EQ(StudyBestRate(rates, risk, &edge), rates[2]);
  }
}

// The reference's own error: four references at +-phi along the axes 1 and 2
// (their mean at 0, their sample variance s^2 = 4 phi^2 / 3 on every token),
// the models at distance sqrt(e^2 + s^2 / 4) along axis 0 with
// e = C1/L + C2 L^-a H^-b: the corrected err, |x - mean_r x^r|^2 - s^2 / R,
// is e, and recovers its exponents; the floor is s; the raw err is pulled flat.
TEST(Study, FloorCorrectionRecoversExponentsAndFloor) {
  int rank;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const std::string dir = "test_study_floor";
  Settings s = settings({"--study.L", "2 4 8 16 32", "--study.H", "2 4 8 16 32", "--study.seeds", "1", "--study.probes",
                         "discrete", "--study.probe_M", "2", "--data.N", "2", "--model.d", "3", "--model.k", "1",
                         "--study.references", "4", "--study.dir", dir, "--study.resolution", "100"},
                        "study");
  const double C1 = 0.5, C2 = 2.0, a = 0.33, b = 0.5, phi = 0.1, s2 = 4 * phi * phi / 3;
  if (rank == 0) {
    mkdir(dir.c_str(), 0755);
    for (const StudyCase &c : StudyCases(s)) {
      std::vector<double> x(12), p(12);
      for (int m = 0; m < 2; ++m)
        for (int i = 0; i < 2; ++i) {
          double *t = &x[(m * 2 + i) * 3], *u = &p[(m * 2 + i) * 3];
          if (c.reference) { // +-phi along axis 1 (references 0, 1) and axis 2 (2, 3); the adjoint 3 times
            const int axis = 1 + (int)c.reference_index / 2;
            const double sign = c.reference_index % 2 ? -1.0 : 1.0;
            t[axis] = sign * phi, u[axis] = 3 * sign * phi;
          } else { // sequence 0 at e, sequence 1 nearer
            const double e = C1 / c.L + C2 * std::pow(c.L, -a) * std::pow(c.H, -b);
            t[0] = std::sqrt(e * e + s2 / 4) / (m + 1), u[0] = 3 * std::sqrt(e * e + s2 / 4) / (m + 1);
          }
        }
      write_case(s, dir, c, {2, 2, 3}, x, p);
    }
  }
  const std::vector<double> v = aggregate(
      s, dir,
      {"v0.tokens.corrected.a", "v0.tokens.corrected.b", "v0.tokens.corrected.C1", "v0.tokens.corrected.C2",
       "v0.tokens.floor", "v0.adjoint.floor", "v0.tokens.corrected.slope_H", "v0.tokens.slope_H",
       "v0.adjoint.corrected.C2"});
  ASSERT_EQ(v.size(), 9u);
  expect_fit(v, a, b, C1, C2);
  EXPECT_NEAR((v[4]), std::sqrt(s2), 1e-5 * phi); // written with 6 digits
  EXPECT_NEAR((v[5]), 3 * std::sqrt(s2), 1e-5 * phi);
  EXPECT_NEAR((v[8]), 3 * C2, 0.03 * 3 * C2);
  EXPECT_NEAR((v[6]), -b, 0.1);     // corrected: the H term's slope
  EXPECT_GT((v[7]), (v[6]) + 0.05); // raw: flattened by the floor
}

// Noise-free errors on a grid: the fit recovers the exponents, with no flag.
std::vector<double> grid_errors(const std::vector<long long> &L, const std::vector<long long> &H, double C1, double C2,
                                double a, double b) {
  std::vector<double> e;
  for (long long l : L)
    for (long long h : H) e.push_back(C1 / (double)l + C2 * std::pow((double)l, -a) * std::pow((double)h, -b));
  return e;
}

TEST(StudyStatistics, FitsSayWhenTheyCannotDecide) {
  const std::vector<long long> L3 = {2, 4, 8}, L2 = {4, 16}, H = {1, 4, 16};
  std::vector<double> e = grid_errors(L3, H, 0.5, 2.0, 0.3, 0.5);
  StudyFit f = StudyFitGrid(L3, H, e, std::vector<char>(e.size(), 1));
  EXPECT_EQ(f.flags, "");
  EXPECT_NEAR(f.a, 0.3, 0.003);
  EXPECT_NEAR(f.b, 0.5, 0.003);
  // Two depths: a is not identifiable.
  e = grid_errors(L2, H, 0.5, 2.0, 0.3, 0.5);
  f = StudyFitGrid(L2, H, e, std::vector<char>(e.size(), 1));
  EXPECT_NE(f.flags.find("a:few_L"), std::string::npos) << f.flags;
  // Only the 1/L term: every (a, b) fits alike.
  e = grid_errors(L3, H, 0.5, 0.0, 0.3, 0.5);
  f = StudyFitGrid(L3, H, e, std::vector<char>(e.size(), 1));
  EXPECT_NE(f.flags.find("ab:one_term"), std::string::npos) << f.flags << " a " << f.a << " b " << f.b << " C1 " << f.C1 << " C2 " << f.C2;
  // b beyond the search range: at its bound, flagged.
  e = grid_errors(L3, H, 0.01, 2.0, 0.3, 2.5);
  f = StudyFitGrid(L3, H, e, std::vector<char>(e.size(), 1));
  EXPECT_NE(f.flags.find("b:bound"), std::string::npos) << f.flags;
  // A dropped cell is named; the slope in L is taken at the largest H.
  std::vector<char> use(9, 1);
  use[0] = 0;
  e = grid_errors(L3, H, 0.5, 2.0, 0.3, 0.5);
  f = StudyFitGrid(L3, H, e, use);
  EXPECT_NE(f.flags.find("dropped:1"), std::string::npos) << f.flags;
  const StudyFit sorted = StudyFitGrid(L3, H, e, std::vector<char>(9, 1));
  EXPECT_NEAR(sorted.slope_L, std::log(e[8] / e[2]) / std::log(4.0), 1e-12);
}

// The jackknife interval: zero width without noise; a seed's shift widens it,
// and the references' spread enters it.
TEST(StudyStatistics, IntervalsFollowSeedsAndReferences) {
  StudyErrors e;
  e.L = {2, 4, 8}, e.H = {1, 4, 16}, e.references = 3, e.sequences = 1;
  e.square = {{1.0}, {1.0}, {1.0}};
  e.pairs = {{0.0}, {0.0}, {0.0}};
  const std::vector<double> err = grid_errors(e.L, e.H, 0.5, 2.0, 0.3, 0.5);
  for (long long seed = 1; seed <= 4; ++seed)
    for (size_t k = 0; k < err.size(); ++k) {
      StudyErrors::Case c;
      c.cell = k, c.seed = seed, c.e2 = {{err[k] * err[k]}, {err[k] * err[k]}, {err[k] * err[k]}};
      e.cases.push_back(c);
    }
  StudyStatistics st = StudyStatisticsCompute(e, StudyOptions());
  EXPECT_NEAR(st.fit[1].a_ci.hi - st.fit[1].a_ci.lo, 0.0, 1e-12);
  EXPECT_NEAR(st.cells[4].err[1], err[4], 1e-12);
  for (auto &c : e.cases)
    if (c.seed == 2)
      for (auto &r : c.e2) r[0] *= 1.2;
  st = StudyStatisticsCompute(e, StudyOptions());
  EXPECT_GT(st.cells[4].ci[1].hi - st.cells[4].ci[1].lo, 0.01);
  EXPECT_LT(st.cells[4].ci[1].lo, st.cells[4].err[1]);
  // The references apart: the floor is subtracted, and a large one leaves cells unresolved.
  e.pairs = {{1.0}, {1.0}, {1.0}};
  for (auto &c : e.cases)
    for (auto &r : c.e2) r[0] += 1.0;
  st = StudyStatisticsCompute(e, StudyOptions());
  EXPECT_NEAR(st.floor, 1.0, 1e-12);
  EXPECT_FALSE(st.cells[8].resolved);
  EXPECT_NE(st.fit[1].flags.find("dropped:"), std::string::npos) << st.fit[1].flags;
}

// A trained reference's bias C1 / L_ref from the joint fit: on a grid of
// three depths C1's share, and none from one depth (the 1/L term is not
// told apart there, and the fit's C1 means nothing).
TEST(StudyStatistics, ReferenceBiasNeedsThreeDepths) {
  const auto study = [](const std::vector<long long> &L, const std::vector<long long> &H) {
    StudyErrors e;
    e.L = L, e.H = H, e.references = 3, e.sequences = 1;
    e.square = {{1.0}, {1.0}, {1.0}}, e.pairs = {{0.0}, {0.0}, {0.0}};
    const std::vector<double> err = grid_errors(L, H, 0.5, 2.0, 0.3, 0.5);
    for (long long seed = 1; seed <= 3; ++seed)
      for (size_t k = 0; k < err.size(); ++k) {
        StudyErrors::Case c;
        c.cell = k, c.seed = seed, c.e2.assign(3, {err[k] * err[k]});
        e.cases.push_back(c);
      }
    StudyOptions o;
    o.reference_L = 64, o.reference_H = 64;
    return StudyStatisticsCompute(e, o).fit[1];
  };
  const StudyFit three = study({2, 4, 8}, {1, 4, 16});
  EXPECT_NEAR(three.reference_bias, 0.5 / 64, 1e-3 * 0.5 / 64);
  const StudyFit one = study({4}, {1, 2, 4, 8, 16});
  EXPECT_NE(one.flags.find("a:few_L"), std::string::npos) << one.flags;
  EXPECT_TRUE(std::isnan(one.reference_bias) && std::isnan(one.reference_spread));
}

// The estimator at weights (a bootstrap's resample) against the same
// estimator on the study it stands for, made by hand: a seed index drawn
// twice is its cases written twice; a reference at weight 0 is a study
// without it; one reference weighed alone leaves no floor, and no estimate.
TEST(StudyStatistics, WeightsAreTheResampledStudy) {
  StudyErrors e;
  e.L = {4}, e.H = {2, 8}, e.references = 3, e.sequences = 2;
  Stream st(5, 0);
  for (size_t r = 0; r < 3; ++r) e.square.push_back({1 + st.uniform(), 1 + st.uniform()});
  for (size_t p = 0; p < 3; ++p) e.pairs.push_back({0.1 * st.uniform(), 0.1 * st.uniform()});
  for (long long seed = 1; seed <= 3; ++seed)
    for (size_t k = 0; k < 2; ++k) {
      StudyErrors::Case c;
      c.cell = k, c.seed = seed;
      for (size_t r = 0; r < 3; ++r) c.e2.push_back({0.2 + st.uniform(), 0.2 + st.uniform()});
      e.cases.push_back(c);
    }
  const StudyStatistics point = StudyStatisticsCompute(e, StudyOptions());
  const std::vector<double> unit = StudyErrAt(e, StudyWeights());
  for (size_t k = 0; k < 2; ++k) EXPECT_DOUBLE_EQ(unit[k], point.cells[k].err[1]);

  StudyWeights w;
  w.seed = {{1, 2.0}, {2, 0.0}, {3, 1.0}};
  StudyErrors twice = e; // seed 1 twice (as seed 4 too), seed 2 left out
  twice.cases.clear();
  for (const auto &c : e.cases)
    if (c.seed != 2) {
      twice.cases.push_back(c);
      if (c.seed == 1) twice.cases.push_back(c), twice.cases.back().seed = 4;
    }
  const std::vector<double> drawn = StudyErrAt(e, w);
  const StudyStatistics by_hand = StudyStatisticsCompute(twice, StudyOptions());
  for (size_t k = 0; k < 2; ++k) EXPECT_NEAR(drawn[k], by_hand.cells[k].err[1], 1e-14);

  StudyWeights without;
  without.reference = {1.0, 0.0, 1.0};
  StudyErrors two = e; // reference 1 removed: its pairs (0,1) and (1,2) go
  two.references = 2, two.square = {e.square[0], e.square[2]}, two.pairs = {e.pairs[1]};
  for (auto &c : two.cases) c.e2 = {c.e2[0], c.e2[2]};
  const std::vector<double> left = StudyErrAt(e, without);
  const StudyStatistics removed = StudyStatisticsCompute(two, StudyOptions());
  for (size_t k = 0; k < 2; ++k) EXPECT_NEAR(left[k], removed.cells[k].err[1], 1e-14);

  StudyWeights alone;
  alone.reference = {0.0, 3.0, 0.0};
  for (double x : StudyErrAt(e, alone)) EXPECT_TRUE(std::isnan(x));
}

} // namespace

namespace {

// Layer 0 of two heads (qkv, d = 2, k = 1: Q and K of 2 entries, V of 4),
// every entry 1; head 0's Q moves by (3, 4), head 1's V by 0.5 in every
// entry; layer 1 does not move. Relative changes by hand: Q 5 / 2,
// K 0, V sqrt(4 * 0.25) / sqrt(8).
TEST(Study, BlockChangeIsEachLayersRelativeChange) {
  const HeadShape shape = head_shape(HeadKind::qkv, 2, 1);
  ASSERT_EQ(shape.size, 8);
  const PetscInt L = 2, H = 2;
  const std::vector<double> start((size_t)(L * H * shape.size), 1.0);
  std::vector<double> now = start;
  now[shape.offQ] += 3, now[shape.offQ + 1] += 4;
  for (PetscInt e = 0; e < 4; ++e) now[shape.size + shape.offV + e] += 0.5;
  const std::vector<double> c = HeadsBlockChange(shape, L, H, now, start);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_NEAR(c[0], 5.0 / 2.0, 1e-15);
  EXPECT_EQ(c[1], 0.0);
  EXPECT_NEAR(c[2], 1.0 / std::sqrt(8.0), 1e-15);
  for (int b = 3; b < 6; ++b) EXPECT_EQ(c[b], 0.0);
}

} // namespace
