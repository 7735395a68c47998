// Counter-based streams: the batched normals are the scalar ones, bitwise.
#include "mft/layout/random.hpp"

#include <gtest/gtest.h>

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
