// Counter-based streams: the batched normals are the scalar ones, bitwise.
#include "helpers.hpp"
#include "mft/layout/random.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace mft;

// Stream::normals(n) is n calls of normal(), whatever n and the spare a call
// before left: heads drawn either way are the same heads.
TEST(Random, BatchedNormalsAreTheScalarOnes) {
  for (long n : {1L, 2L, 7L, 128L, 129L, 1001L}) {
    for (bool spare : {false, true}) {
      Stream a(9, kHeads, 3, (std::uint64_t)n), b(9, kHeads, 3, (std::uint64_t)n);
      if (spare) (void)a.normal(), (void)b.normal();
      std::vector<double> batch((size_t)n), one((size_t)n);
      a.normals(batch.data(), n);
      for (double &x : one) x = b.normal();
      EXPECT_TRUE(batch == one) << "n " << n << (spare ? " after a spare" : "");
      EXPECT_EQ(a.normal(), b.normal()) << "n " << n << ": the streams go on alike";
    }
  }
}

// Each normal is Box-Muller's sqrt(-2 log u1) cos(2 pi u2) (and sin) of its
// stream's uniforms within 4 ulp of r = sqrt(-2 log u1), against the same
// formula in long double: mft's own logarithm and sines (random.cpp) over a
// million pairs; and Exp(1) draws are -log(1 - u).
TEST(Random, NormalsAreBoxMullerToFourUlp) {
  MFT_ONE_RANK_TEST();
  Stream drawn(11, kHeads, 3, 4), uniforms(11, kHeads, 3, 4);
  std::vector<double> x(1 << 20);
  drawn.normals(x.data(), (long)x.size());
  double worst = 0;
  for (size_t p = 0; p < x.size(); p += 2) {
    const long double u1 = 1.0 - uniforms.uniform(), u2 = uniforms.uniform();
    const long double r = std::sqrt(-2.0L * std::log(u1)), a = 2.0L * 3.14159265358979323846264338327950288L * u2;
    const double ulp = std::nextafter((double)r, INFINITY) - (double)r;
    worst = std::max(worst, (double)(std::fabs(x[p] - r * std::cos(a)) / ulp));
    worst = std::max(worst, (double)(std::fabs(x[p + 1] - r * std::sin(a)) / ulp));
  }
  EXPECT_LT(worst, 4.0) << "ulp of r";
  Stream e(12, kHeads), u(12, kHeads);
  for (int i = 0; i < 1000; ++i) {
    const long double want = -std::log(1.0L - u.uniform());
    EXPECT_NEAR(e.exponential(), (double)want, 4e-16 * (double)want + 1e-300) << i;
  }
}
