// The benchmark's operation counts and its roofline bound, against counts
// made by hand from the kernels (attention.cpp) on small shapes.
#include "mft/kernels/attention.hpp"
#include "mft/analyses/bench.hpp"

#include <gtest/gtest.h>

using namespace mft;

namespace {

Settings shape(HeadKind kind, PetscInt N) {
  Settings s;
  s.model.L = 1, s.model.H = 1, s.data.M = 1, s.data.N = N, s.model.d = 2, s.model.k = 1;
  s.model.head_kind = kind;
  return s;
}

} // namespace

// qkv, N = 4, d = dv = 2, k = 1: projections 2 N d (2k + dv) = 64, scores
// 2 N N k = 32, weighted sums 2 N N dv = 64, 16 exps. A step makes the
// forward's 160 three times, the projections and scores once more (96), and
// every exp twice: at 1 GFLOP/s and 1 Gexp/s, 576 + 32 ns.
TEST(Bench, BoundCountsWhatTheReverseMakesAgain) {
  const Settings qkv = shape(HeadKind::qkv, 4);
  EXPECT_DOUBLE_EQ(forward_products(qkv), 160.0);
  EXPECT_DOUBLE_EQ(forward_exponentials(qkv), 16.0);
  EXPECT_NEAR(step_bound(qkv, 1.0, 1.0), 608e-9, 1e-18);
  // qkvo (dv = k = 1): projections 2 N d (2k + dv) = 48, scores 32, sums 32,
  // output 2 N dv d = 16; the reverse makes the sums again too (dO needs Y):
  // 3 x 128 + 48 + 32 + 32 = 496, and 32 exps.
  const Settings qkvo = shape(HeadKind::qkvo, 4);
  EXPECT_DOUBLE_EQ(forward_products(qkvo), 128.0);
  EXPECT_NEAR(step_bound(qkvo, 1.0, 1.0), 528e-9, 1e-18);
  // Keys in tiles (N past keys_at_once), or at once from N = 16 (dv + 2) =
  // 48 on: the forward's statistics pay and give Y, so qkvo's sums are not
  // made again; one key fewer, they are.
  for (PetscInt N : {AttentionWork().keys_at_once + 4, kKeysPerStatistic * 3, kKeysPerStatistic * 3 - 1}) {
    const Settings kept = shape(HeadKind::qkvo, N);
    const double n = (double)N, projections = 2 * n * 2 * 3, scores = 2 * n * n, exps = n * n, sums = 2 * n * n;
    const double forward = projections + scores + sums + 2 * n * 2;
    const double again = projections + scores + (N < kKeysPerStatistic * 3 ? sums : 0.0);
    EXPECT_NEAR(step_bound(kept, 1.0, 1.0), (3 * forward + again + 2 * exps) * 1e-9, 1e-12) << N;
  }
}

// The cost model's count of a unit (CountUnit) and the benchmark's count
// (forward_operations) are one count: the same forward, every head kind and
// mask, at shapes whose causal key sums pass 2^31.
TEST(Bench, CostModelCountsWhatTheBenchCounts) {
  for (HeadKind kind : {HeadKind::qkv, HeadKind::qkvo})
    for (bool causal : {false, true})
      for (PetscInt N : {(PetscInt)7, (PetscInt)128, (PetscInt)65536}) {
        Settings s = shape(kind, N);
        s.model.causal = causal, s.model.L = 3, s.model.H = 2, s.data.M = 5, s.model.d = 16, s.model.k = 8;
        const double unit = CountUnit(s.model, N, 0, N, (double)N).forward;
        EXPECT_NEAR(3.0 * 2.0 * 5.0 * unit, forward_operations(s), 1e-12 * forward_operations(s))
            << (kind == HeadKind::qkv ? "qkv" : "qkvo") << " causal " << causal << " N " << N;
      }
}
