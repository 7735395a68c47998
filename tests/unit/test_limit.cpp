// The mean-field reference: its own accuracy (halving the tolerance), the
// Euler model with the same ensemble converging to it at first order, and
// rank independence.
#include "helpers.hpp"
#include "mft/flow/limit.hpp"

#include <cmath>

using namespace mft;
using namespace mft::test;

namespace {

LimitResult solve(std::vector<std::string> extra, MPI_Comm comm = PETSC_COMM_WORLD) {
  extra.insert(extra.end(), {"--model.d", "3", "--model.k", "2", "--data.M", "2", "--data.N", "4", "--init.v_mean",
                             "0.5", "--limit.heads", "64", "--model.beta", "1.5"});
  LimitResult r;
  EXPECT_EQ(LimitSolve(comm, LimitSettingsFor(settings(extra, "limit")), &r), 0);
  return r;
}

double max_diff(const std::vector<double> &a, const std::vector<double> &b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::fmax(m, std::fabs(a[i] - b[i]));
  return m;
}

// x(1) is error-controlled: halving the tolerance (where that changes the
// steps taken) moves it by less than the tolerance.
TEST(Limit, HalvingTheToleranceMovesLessThanIt) {
  int compared = 0;
  for (double tol : {1e-7, 1e-8, 1e-9, 1e-10}) { // the regime of the reference (default 1e-10)
    char t[32], half[32];
    std::snprintf(t, sizeof t, "%.17g", tol);
    std::snprintf(half, sizeof half, "%.17g", tol / 2);
    const LimitResult a = solve({"--limit.rtol", t, "--limit.atol", t});
    const LimitResult b = solve({"--limit.rtol", half, "--limit.atol", half});
    if (a.steps == b.steps) continue;
    ++compared;
    EXPECT_LT(max_diff(a.tokens, b.tokens), tol) << tol;
  }
  EXPECT_GE(compared, 2);
}

// The adjoint reuses the forward steps (its error is not controlled by the
// tolerance) but converges with it.
TEST(Limit, AdjointConvergesWithTheTolerance) {
  const LimitResult ref = solve({"--limit.rtol", "1e-13", "--limit.atol", "1e-13"});
  const LimitResult loose = solve({"--limit.rtol", "1e-5", "--limit.atol", "1e-5"});
  const LimitResult tight = solve({"--limit.rtol", "1e-9", "--limit.atol", "1e-9"});
  EXPECT_LT(max_diff(tight.adjoint, ref.adjoint), max_diff(loose.adjoint, ref.adjoint) / 100);
  EXPECT_LT(max_diff(tight.adjoint, ref.adjoint), 1e-7);
}

// Euler steps 1/L with the same ensemble: error ratio near 2 per doubling of L.
TEST(Limit, EulerConvergesAtFirstOrder) {
  const LimitResult ref = solve({"--limit.rtol", "1e-12", "--limit.atol", "1e-13"});
  std::vector<double> err;
  for (int L : {8, 16, 32, 64, 128}) {
    const LimitResult e = solve({"--limit.scheme", "euler", "--model.L", std::to_string(L)});
    EXPECT_EQ(e.steps, L);
    err.push_back(max_diff(e.tokens, ref.tokens));
  }
  for (size_t i = 2; i + 1 < err.size(); ++i) {
    const double ratio = err[i] / err[i + 1];
    EXPECT_GT(ratio, 1.8) << i;
    EXPECT_LT(ratio, 2.2) << i;
  }
}

// Normalized tokens: the Euler model's tokens and adjoint (exact adjoints of
// its steps, tests/unit/test_gradient.cpp) converge to the adaptive solve's
// at first order (pre), so that the limit's transposes are those of the
// flow; on the sphere every token of the Euler model has norm 1 to
// round-off and the adaptive solve's to its tolerance, and the reference's
// risk (|x(1)|^2 / 2) is constant on the sphere: its gradient is zero.
void expect_normalized_limit(const char *norm) {
  const std::vector<std::string> n = {"--model.norm", norm};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), n.begin(), n.end());
    return solve(extra);
  };
  const LimitResult ref = with({"--limit.rtol", "1e-12", "--limit.atol", "1e-13"});
  std::vector<double> err, err_adjoint;
  for (int L : {16, 32, 64, 128}) {
    const LimitResult e = with({"--limit.scheme", "euler", "--model.L", std::to_string(L)});
    err.push_back(max_diff(e.tokens, ref.tokens));
    err_adjoint.push_back(max_diff(e.adjoint, ref.adjoint));
    if (std::string(norm) != "sphere") continue;
    EXPECT_LT(max_diff(e.adjoint, std::vector<double>(e.adjoint.size(), 0.0)), 1e-12);
    for (size_t i = 0; i < e.tokens.size(); i += 3)
      EXPECT_NEAR(std::sqrt(e.tokens[i] * e.tokens[i] + e.tokens[i + 1] * e.tokens[i + 1] +
                            e.tokens[i + 2] * e.tokens[i + 2]), 1.0, 1e-12);
  }
  for (size_t i = 0; i + 1 < err.size(); ++i) {
    EXPECT_NEAR(err[i] / err[i + 1], 2.0, 0.25) << norm << " tokens " << i;
    if (std::string(norm) != "sphere") EXPECT_NEAR(err_adjoint[i] / err_adjoint[i + 1], 2.0, 0.25) << norm << " adjoint " << i;
  }
  EXPECT_GT(err.back(), 1e-6) << norm; // the tokens moved: not two copies of x(0)
  if (std::string(norm) != "sphere") return;
  EXPECT_LT(max_diff(ref.adjoint, std::vector<double>(ref.adjoint.size(), 0.0)), 1e-9);
  for (size_t i = 0; i < ref.tokens.size(); i += 3)
      EXPECT_NEAR(std::sqrt(ref.tokens[i] * ref.tokens[i] + ref.tokens[i + 1] * ref.tokens[i + 1] +
                            ref.tokens[i + 2] * ref.tokens[i + 2]), 1.0, 1e-10);
}

TEST(Limit, SphereEulerConvergesAtFirstOrder) { expect_normalized_limit("sphere"); }
TEST(Limit, PreEulerConvergesAtFirstOrder) { expect_normalized_limit("pre"); }

TEST(Limit, SameOnEveryRankCount) {
  const LimitResult all = solve({}), one = solve({}, PETSC_COMM_SELF);
  EXPECT_LT(relative_error(all.tokens, one.tokens), 1e-9);
  EXPECT_LT(relative_error(all.adjoint, one.adjoint), 1e-9);
}

} // namespace
