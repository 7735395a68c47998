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
      std::vector<double> x = {e, e, e / 2, e / 2}, p = {3 * e, 3 * e, 0, 0};
      EXPECT_EQ(ResultFileWrite(PETSC_COMM_SELF, s,
                                {{"/probes/discrete/tokens", {2, 2, 1}, x.data()},
                                 {"/probes/discrete/adjoint", {2, 2, 1}, p.data()}},
                                {}, dir + "/case-" + std::to_string(c.index) + ".h5"),
                0);
    }
  }
  MPI_Barrier(PETSC_COMM_WORLD);
  PetscInt missing = -1;
  ASSERT_EQ(StudyAggregate(PETSC_COMM_WORLD, s, dir, &missing), 0);
  EXPECT_EQ(missing, 0);
  std::vector<std::string> v;
  ASSERT_EQ(RunFileAttributes(PETSC_COMM_WORLD, dir + "/study.h5",
                              {"v0.tokens.a", "v0.tokens.b", "v0.tokens.C1", "v0.tokens.C2", "v0.adjoint.C2",
                               "v0.tokens.slope_H"},
                              &v),
            0);
  EXPECT_NEAR(std::stod(v[0]), a, 0.011);
  EXPECT_NEAR(std::stod(v[1]), b, 0.011);
  EXPECT_NEAR(std::stod(v[2]), C1, 0.03 * C1);
  EXPECT_NEAR(std::stod(v[3]), C2, 0.03 * C2);
  EXPECT_NEAR(std::stod(v[4]), 3 * C2, 0.03 * 3 * C2); // the adjoint's errors are 3 times larger
  // At L = 32 the H term dominates: the slope in H approaches -b.
  EXPECT_NEAR(std::stod(v[5]), -b, 0.1);
  EXPECT_LT(std::stod(v[5]), -0.35);
}

TEST(Study, CasesAreNumberedPerVariant) {
  Settings s = settings({"--study.L", "2 4", "--study.H", "3", "--study.seeds", "2", "--study.variants",
                         "data.N=4; data.N=8"},
                        "study");
  const auto cases = StudyCases(s);
  ASSERT_EQ(cases.size(), 2u * (1 + 2 * 1 * 2));
  EXPECT_TRUE(cases[0].reference);
  EXPECT_TRUE(cases[5].reference);
  EXPECT_EQ(cases[5].variant, 1);
  EXPECT_EQ(cases[4].L, 4);
  EXPECT_EQ(cases[4].seed, 2);
}

} // namespace
