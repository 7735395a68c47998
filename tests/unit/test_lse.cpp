// The log-sum-exp independence test against its closed forms, for equal and
// distinct distributions; the same on every rank count.
#include "helpers.hpp"
#include "mft/analyses/lse.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

LseResult lse(std::vector<std::string> args, MPI_Comm comm = PETSC_COMM_WORLD) {
  LseResult r;
  args.insert(args.end(), {"--model.d", "3", "--lse.points", "256"});
  EXPECT_EQ(LseTest(comm, settings(args, "lse"), &r), 0);
  return r;
}

const char *closed_families[] = {"uniform_cube", "laplace", "gauss_mix2", "gaussian"};

// Equal laws: identical columns, a zero eigenvalue; distinct parameters (radii,
// covariances, separations; atoms): clearly positive.
TEST(Lse, EqualAndDistinctDistributions) {
  for (const char *family : closed_families) {
    const std::vector<std::string> common = {"--data.family", family, "--data.M", "2", "--lse.mode", "closed"};
    auto same = common, distinct = common;
    same.insert(same.end(), {"--data.param_min", "0.8", "--data.param_max", "0.8", "--data.mean_spread", "0"});
    distinct.insert(distinct.end(), {"--data.param_min", "0.4", "--data.param_max", "1.0"});
    const LseResult s = lse(same), d = lse(distinct);
    // Gaussians draw each sequence's diagonal u, so equal p is not an equal law:
    // their equal case is the one-dimensional test below.
    if (std::string(family) != "gaussian") EXPECT_LT(std::fabs(s.relative_min), 1e-12) << family;
    EXPECT_GT(d.relative_min, 1e-6) << family;
  }
  // Discrete: distinct atom sets are independent.
  EXPECT_GT(lse({"--data.family", "discrete", "--data.M", "3", "--data.N", "6"}).relative_min, 1e-6);
}

// In one dimension every Gaussian lse is <a, mu> + S a^2 / 2: modulo affine
// functions all are multiples of a^2, dependent whatever their parameters.
TEST(Lse, GaussiansInOneDimensionAreDependent) {
  LseResult r;
  EXPECT_EQ(LseTest(PETSC_COMM_WORLD,
                    settings({"--data.family", "gaussian", "--data.M", "3", "--lse.mode", "closed", "--model.d", "1",
                              "--data.param_min", "0.4", "--data.param_max", "1.0",
                              "--lse.points", "64"},
                             "lse"),
                    &r),
            0);
  EXPECT_LT(std::fabs(r.relative_min), 1e-12);
  EXPECT_GT(r.eigenvalues.back(), 1e-6);
}

// The sample-based Gram matrix tends to the closed-form one as N grows.
TEST(Lse, SamplesApproachClosedForm) {
  for (const char *family : closed_families) {
    const std::vector<std::string> common = {"--data.family", family,  "--data.M", "3", "--data.param_min", "0.5",
                                             "--data.param_max", "1.0", "--lse.radius", "0.6"};
    auto with = [&](std::vector<std::string> extra) {
      auto a = common;
      a.insert(a.end(), extra.begin(), extra.end());
      return a;
    };
    const LseResult closed = lse(with({"--lse.mode", "closed"}));
    const LseResult few = lse(with({"--data.N", "500"})), many = lse(with({"--data.N", "32000"}));
    const double e_few = relative_error(few.gram, closed.gram), e_many = relative_error(many.gram, closed.gram);
    EXPECT_LT(e_many, e_few / 2.5) << family << ": " << e_few << " -> " << e_many;
    EXPECT_LT(e_many, 0.03) << family;
  }
}

TEST(Lse, SameOnEveryRankCount) {
  const std::vector<std::string> args = {"--data.family", "laplace", "--data.M", "3", "--data.param_min", "0.5"};
  EXPECT_LT(relative_error(lse(args).gram, lse(args, PETSC_COMM_SELF).gram), 1e-12);
}

TEST(Lse, OutsideTheClosedFormIsRefused) {
  LseResult r;
  EXPECT_EQ(LseTest(PETSC_COMM_WORLD,
                    settings({"--data.family", "laplace", "--lse.mode", "closed", "--lse.radius", "2",
                              "--data.param_max", "1"},
                             "lse"),
                    &r),
            PETSC_ERR_USER_INPUT);
  EXPECT_EQ(LseTest(PETSC_COMM_WORLD, settings({"--data.family", "discrete", "--lse.mode", "closed"}, "lse"), &r),
            PETSC_ERR_USER_INPUT);
}

} // namespace
