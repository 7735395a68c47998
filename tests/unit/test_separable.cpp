// err(k, H)^2 = A^2 H^-2q + B^2 k^-2r (separable.hpp): exact data give their
// law back; a law outside the family is rejected; on synthetic grids with
// each cell's standard error as normal noise the 95% intervals hold q and r;
// the gap at one H recovers B.
#include "helpers.hpp"
#include "mft/layout/random.hpp"
#include "mft/statistics/separable.hpp"

#include <cmath>

using namespace mft;

namespace {

struct KHGrid {
  std::vector<double> k, H, err, se;
  std::vector<char> use;
};

// The (k, H) grid of the shipped study (k = 1 .. 64, H = 16, 64, 256) at
// err^2 = A^2 H^-2q + B^2 k^-2r + floor, each cell's se a fraction of its err.
KHGrid grid(double A, double q, double B, double r, double floor, double relative) {
  KHGrid g;
  for (double h : {16.0, 64.0, 256.0})
    for (double k = 1; k <= 64; k *= 2) {
      g.k.push_back(k), g.H.push_back(h), g.use.push_back(1);
      g.err.push_back(std::sqrt(A * A * std::pow(h, -2 * q) + B * B * std::pow(k, -2 * r) + floor));
      g.se.push_back(relative * g.err.back());
    }
  return g;
}

} // namespace

TEST(Separable, ExactDataGiveTheirLaw) {
  const KHGrid g = grid(0.5, 0.5, 0.13, 0.65, 0, 0.01);
  const SeparableFit f = SeparableFitOf(g.k, g.H, g.err, g.se, g.use, 50, 1);
  ASSERT_EQ(f.cells, 21);
  EXPECT_NEAR(f.q, 0.5, 1e-12);
  EXPECT_NEAR(f.r, 0.65, 1e-12);
  EXPECT_NEAR(f.A, 0.5, 1e-9);
  EXPECT_NEAR(f.B, 0.13, 1e-9);
  EXPECT_LT(f.chi2, 1e-12);
  EXPECT_EQ(f.dof, 17);
  EXPECT_FALSE(f.rejected());
  EXPECT_TRUE(f.q_lo <= 0.5 && 0.5 <= f.q_hi && f.r_lo <= 0.65 && 0.65 <= f.r_hi);
  EXPECT_TRUE(f.decided_q()) << f.q_lo << " " << f.q_hi; // 1% errors: narrow intervals
  // One H alone: err^2 = a + B^2 k^-2r with a = A^2 H^-2q, B recovered.
  std::vector<double> k, err, se;
  for (size_t c = 0; c < g.err.size(); ++c)
    if (g.H[c] == 64) k.push_back(g.k[c]), err.push_back(g.err[c]), se.push_back(g.se[c]);
  const SeparableGap at = SeparableGapAt(k, err, se, 0.65, 50, 2);
  EXPECT_NEAR(at.B, 0.13, 1e-9);
  EXPECT_TRUE(at.lo <= 0.13 && 0.13 <= at.hi);
  // Fewer than 5 cells: nothing fitted.
  std::vector<char> four(g.use.size(), 0);
  std::fill(four.begin(), four.begin() + 4, 1);
  EXPECT_EQ(SeparableFitOf(g.k, g.H, g.err, g.se, four, 10, 1).cells, 0);
}

// A floor of its own (err^2 + 0.002: a term in neither size) at 2% errors
// is no member of the family: its misfit is rejected.
TEST(Separable, ALawOutsideTheFamilyIsRejected) {
  const KHGrid g = grid(0.5, 0.5, 0.13, 0.65, 0.002, 0.02);
  const SeparableFit f = SeparableFitOf(g.k, g.H, g.err, g.se, g.use, 0, 1);
  EXPECT_TRUE(f.rejected()) << "chi^2 " << f.chi2 << " on " << f.dof;
  EXPECT_FALSE(f.decided_q());
}

// 60 synthetic grids of the law with each cell's standard error (4% of its
// err) as normal noise: the 95% intervals hold q and r in at least 50 of
// them (57 expected), and the misfit rejects at most 8 (3 expected).
TEST(Separable, IntervalsHoldTheLawOnSyntheticGrids) {
  MFT_ONE_RANK_TEST();
  const KHGrid g = grid(0.5, 0.5, 0.13, 0.65, 0, 0.04);
  Stream st(17, 0);
  int q_held = 0, r_held = 0, rejected = 0;
  const int replicates = 60;
  for (int i = 0; i < replicates; ++i) {
    std::vector<double> err(g.err.size());
    for (size_t c = 0; c < err.size(); ++c) err[c] = std::fabs(g.err[c] + g.se[c] * st.normal());
    const SeparableFit f = SeparableFitOf(g.k, g.H, err, g.se, g.use, 60, 100 + i);
    q_held += f.q_lo <= 0.5 + 1e-12 && 0.5 - 1e-12 <= f.q_hi;
    r_held += f.r_lo <= 0.65 + 1e-12 && 0.65 - 1e-12 <= f.r_hi;
    rejected += f.rejected();
  }
  std::printf("60 grids: q held in %d, r in %d, rejected %d\n", q_held, r_held, rejected);
  EXPECT_GE(q_held, 50);
  EXPECT_GE(r_held, 50);
  EXPECT_LE(rejected, 8);
}
