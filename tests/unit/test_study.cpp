// Study aggregation on synthetic case files with known exponents.
#include "helpers.hpp"
#include "mft/h5.hpp"
#include "mft/runfile.hpp"
#include "mft/study.hpp"

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

// The reference's own error: two references at squared distance 2 phi^2 from
// each other (floor^2 = phi^2, orthogonal to the models' errors), the models
// at squared distance e^2 + phi^2 from reference 0 with e = C1/L + C2 L^-a H^-b.
// The correction recovers e (and its exponents) and the floor phi; the raw err
// is pulled flat by it.
TEST(Study, FloorCorrectionRecoversExponentsAndFloor) {
  int rank;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const std::string dir = "test_study_floor";
  Settings s = settings({"--study.L", "2 4 8 16 32", "--study.H", "2 4 8 16 32", "--study.seeds", "1", "--study.probes",
                         "discrete", "--study.probe_M", "2", "--data.N", "2", "--model.d", "2", "--model.k", "1",
                         "--study.references", "2", "--study.dir", dir},
                        "study");
  const double C1 = 0.5, C2 = 2.0, a = 0.33, b = 0.5, phi = 0.1;
  if (rank == 0) {
    mkdir(dir.c_str(), 0755);
    for (const StudyCase &c : StudyCases(s)) {
      std::vector<double> x(8), p(8);
      for (int m = 0; m < 2; ++m)
        for (int i = 0; i < 2; ++i) {
          double *t = &x[(m * 2 + i) * 2], *u = &p[(m * 2 + i) * 2];
          if (c.reference) { // reference 0 at (phi, 0), reference 1 at (0, phi); the adjoint 3 times
            t[c.reference_index] = phi, u[c.reference_index] = 3 * phi;
          } else { // sequence 0 at e, sequence 1 at e/2 along the second axis
            const double e = (C1 / c.L + C2 * std::pow(c.L, -a) * std::pow(c.H, -b)) / (m + 1);
            t[1] = e, u[1] = 3 * e;
          }
        }
      write_case(s, dir, c, {2, 2, 2}, x, p);
    }
  }
  const std::vector<double> v = aggregate(
      s, dir,
      {"v0.tokens.corrected.a", "v0.tokens.corrected.b", "v0.tokens.corrected.C1", "v0.tokens.corrected.C2",
       "v0.tokens.floor", "v0.adjoint.floor", "v0.tokens.corrected.slope_H", "v0.tokens.slope_H",
       "v0.adjoint.corrected.C2"});
  ASSERT_EQ(v.size(), 9u);
  expect_fit(v, a, b, C1, C2);
  EXPECT_NEAR((v[4]), phi, 1e-6 * phi); // written with 6 digits
  EXPECT_NEAR((v[5]), 3 * phi, 1e-6 * phi);
  EXPECT_NEAR((v[8]), 3 * C2, 0.03 * 3 * C2);
  EXPECT_NEAR((v[6]), -b, 0.1);     // corrected: the H term's slope
  EXPECT_GT((v[7]), (v[6]) + 0.05); // raw: flattened by the floor
}

} // namespace
