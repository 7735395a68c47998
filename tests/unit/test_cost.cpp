// The cost model and the memory check at sizes whose products pass 2^31
// (PetscInt is 32 bits in Debian's PETSc): figures formed in 64 bits.
#include "helpers.hpp"
#include "mft/kernels/attention.hpp"
#include "mft/flow/cost.hpp"
#include "mft/layout/exchange.hpp"
#include "mft/flow/velocity.hpp"

using namespace mft;

namespace {

// 100000 layers of one sequence of 40000 tokens in R^16: the kept states are
// L N d = 6.4e10 numbers.
ModelSettings deep() {
  ModelSettings m;
  m.L = 100000, m.H = 1, m.d = 16, m.k = 2;
  return m;
}

} // namespace

TEST(Cost, KeptStatesPastTwoToThe31) {
  const ModelSettings m = deep();
  for (PetscInt P : {1, 2}) { // on 2 ranks the sequence is cut: each group keeps half, plus the cut's rows
    const StepCost c = PredictStep(m, 1, 40000, P, 1, CutForm::tokens, 1e9, Network());
    const double kept = 8.0 * 100000.0 * (40000.0 / P) * 16.0, rows = P > 1 ? 2.0 * 8.0 * 16.0 * 40000.0 : 0.0;
    // One head, one sequence: threads over its queries, in Qc chunks, with
    // the keys' projections and their transposes (2 (k + dv) = 36 numbers a key) and Qc copies of their gradients.
    const double projected = 8.0 * 40000.0 * 18.0;
    const PetscInt Qc = QueryChunks(1, 40000 / P, projected);
    EXPECT_EQ(Qc, 64); // kHeadUnits chunks of 625 or 312 queries (at least kQueryRows = 256)
    EXPECT_NEAR(c.memory, kept + rows + (double)(Qc + 2) * projected, 1e-12 * kept) << P << " ranks";
  }
}

TEST(Cost, MemoryCheckRefusesPastTwoToThe31) {
  const double budget = 24.0 * 1073741824.0;
  const StepCost c = ChooseGrid(deep(), 1, 40000, 1, 1e9, Network(), 0, std::nullopt, budget);
  EXPECT_EQ(c.Ph, 0) << "a grid needing " << c.memory << " bytes was chosen within " << budget;
  EXPECT_NEAR(c.memory, 5.12e11 + 66 * 8.0 * 40000.0 * 18.0, 1.0); // the kept states, 64 query chunks' keys
  // The same sizes with ten layers fit, and are chosen.
  ModelSettings shallow = deep();
  shallow.L = 10;
  EXPECT_EQ(ChooseGrid(shallow, 1, 40000, 1, 1e9, Network(), 0, std::nullopt, budget).Ph, 1);
}

// A message's entry count is formed in 64 bits and refused past MPI's int.
TEST(Cost, MessageCountPastTwoToThe31) {
  PetscMPIInt n = -1;
  ASSERT_EQ(MessageCount(PETSC_COMM_SELF, 2147483647LL, &n), 0);
  EXPECT_EQ(n, 2147483647);
  EXPECT_EQ(PetscPushErrorHandler(PetscReturnErrorHandler, nullptr), 0); // expected errors: not printed
  EXPECT_NE(MessageCount(PETSC_COMM_SELF, 2147483648LL, &n), 0);
  EXPECT_NE(MessageCount(PETSC_COMM_SELF, 3LL * 100000 * 40000, &n), 0);
  EXPECT_EQ(PetscPopErrorHandler(), 0);
}

// One unit's operations, counted by hand: a 4-token sequence in R^2, k = 1.
TEST(Cost, UnitOperationsByHand) {
  ModelSettings m;
  m.d = 2, m.k = 1;
  // qkv (dv = 2): projections 2 N d (k + dv) + 2 N d k = 48 + 16, scores
  // 2 N N k = 32, exps 16, weighted sums 2 N N dv = 64.
  UnitOperations u = CountUnit(m, 4, 0, 4, 4.0);
  EXPECT_EQ(u.forward, 176.0);
  EXPECT_EQ(u.reverse, 352.0);
  EXPECT_EQ(u.again, 0.0);
  // Causal: 1 + 2 + 3 + 4 = 10 keys; scores 20, exps 10, weighted sums 40.
  m.causal = true;
  EXPECT_EQ(CountUnit(m, 4, 0, 4, 4.0).forward, 134.0);
  // qkvo (dv = 1): projections 32 + 16, scores 32, exps 16, weighted sums
  // 32, O 2 N dv d = 16; without the forward's statistics the reverse
  // makes the weighted sums once more.
  m.causal = false, m.head_kind = HeadKind::qkvo;
  u = CountUnit(m, 4, 0, 4, 4.0);
  EXPECT_EQ(u.forward, 144.0);
  EXPECT_EQ(u.reverse, 2 * 144.0);
  EXPECT_EQ(u.again, 32.0);
  // Past keys_at_once keys a query is tiled: its scores, exps and weighted
  // sums made again in the sweep (and qkvo's weighted sums there, not twice).
  m.head_kind = HeadKind::qkv;
  const PetscInt N = AttentionWork().keys_at_once + 904; // 5000
  u = CountUnit(m, N, 0, 10, 10.0);
  EXPECT_EQ(u.again, 10.0 * N * (2 * 1 + 1 + 2 * 2));
  m.causal = true; // of queries 4090 ... 4099, those from 4096 on: 4097 + ... + 4100 keys
  u = CountUnit(m, N, 4090, 4100, 10.0);
  EXPECT_EQ(u.again, 16394.0 * 7);
  m.head_kind = HeadKind::qkvo; // dv = 1: the tiled queries' sweep, and the untiled ones' weighted sums
  const double keys = 4091.0 + 4092 + 4093 + 4094 + 4095 + 4096;
  u = CountUnit(m, N, 4090, 4100, 10.0);
  EXPECT_EQ(u.reverse, 2 * u.forward);
  EXPECT_EQ(u.again, 16394.0 * 5 + 2 * keys);
  // A causal sequence of 65536 tokens: 65536 * 65537 / 2 = 2147516416 keys,
  // past 2^31 (32-bit PetscInt): scores 2 k, exps 1, weighted sums 2 dv a key.
  m.head_kind = HeadKind::qkv;
  const UnitOperations big = CountUnit(m, 65536, 0, 65536, 65536.0);
  const double all = 65536.0 * 65537.0 / 2, projections = 2.0 * 65536 * 2 * 3 + 2.0 * 65536 * 2 * 1;
  EXPECT_EQ(big.forward, projections + all * (2 * 1 + 1 + 2 * 2));
  EXPECT_GT(big.again, 0.0);
}

// The reverse's operations at rate.reverse times the forward's rate.
TEST(Cost, ReverseAtItsOwnRate) {
  ModelSettings m;
  m.L = 3, m.H = 2, m.d = 2, m.k = 1;
  const UnitOperations u = CountUnit(m, 4, 0, 4, 4.0);
  const double units = 3.0 * 2.0 * 5.0; // layers, heads, sequences
  for (double reverse : {1.0, 2.0, 0.5}) {
    const StepCost c = PredictStep(m, 5, 4, 1, 1, CutForm::tokens, Rates(1e9, reverse), Network());
    EXPECT_NEAR(c.compute, units * (u.forward + u.reverse / reverse) / 1e9, 1e-12) << reverse;
    EXPECT_EQ(c.operations, units * (u.forward + u.reverse)) << reverse;
  }
}

// MLP sublayers add their products on each rank's own tokens: forward 4 m d,
// reverse 10 m d a token and layer, the reverse at its rate; on 2 ranks of
// 2 head groups each rank owns a quarter of the 20 tokens, on threads alone.
TEST(Cost, MlpProductsOnOwnTokens) {
  ModelSettings m;
  m.L = 3, m.H = 2, m.d = 2, m.k = 1;
  const StepCost bare = PredictStep(m, 5, 4, 1, 1, CutForm::tokens, Rates(1e9, 2.0), Network());
  m.mlp_width = 6;
  const StepCost mlp = PredictStep(m, 5, 4, 1, 1, CutForm::tokens, Rates(1e9, 2.0), Network());
  const double tokens = 20, per = 2.0 * 6 * 2; // a token's m x d product
  EXPECT_EQ(mlp.operations - bare.operations, 3 * tokens * 7 * per);
  EXPECT_NEAR(mlp.compute - bare.compute, 3 * tokens * (2 * per + 5 * per / 2.0) / 1e9, 1e-15);
  const StepCost two = PredictStep(m, 5, 4, 4, 2, CutForm::tokens, Rates(1e9), Network(), 2);
  m.mlp_width = 0;
  const StepCost two_bare = PredictStep(m, 5, 4, 4, 2, CutForm::tokens, Rates(1e9), Network(), 2);
  EXPECT_NEAR(two.compute - two_bare.compute, 3 * 5 * 7 * per / 1e9, 1e-15); // 5 tokens, not divided by threads
}

// Threads over (sequence, chunk of heads) units divide a rank's compute: by
// the threads when the units share out evenly.
TEST(Cost, ThreadsDivideTheCompute) {
  ModelSettings m;
  m.L = 8, m.H = 32, m.d = 16, m.k = 8;
  const StepCost one = PredictStep(m, 16, 32, 1, 1, CutForm::tokens, 1e9, Network());
  const StepCost two = PredictStep(m, 16, 32, 1, 1, CutForm::tokens, 1e9, Network(), 2);
  EXPECT_NEAR(two.compute, one.compute / 2, 1e-12 * one.compute);
  EXPECT_EQ(two.operations, one.operations); // the work is the same
  // One sequence: its 32 heads in 32 chunks, a quarter each on 4 threads,
  // 11 units of 32 on the busiest of 3.
  const double alone = PredictStep(m, 1, 512, 1, 1, CutForm::tokens, 1e9, Network()).compute;
  EXPECT_NEAR(PredictStep(m, 1, 512, 1, 1, CutForm::tokens, 1e9, Network(), 4).compute, alone / 4, 1e-12 * alone);
  EXPECT_NEAR(PredictStep(m, 1, 512, 1, 1, CutForm::tokens, 1e9, Network(), 3).compute, alone * 11 / 32,
              1e-12 * alone);
  // On 2 ranks of 3 threads, 3 sequences each, their heads in 22 chunks: 66
  // units, a third each.
  const StepCost grid = PredictStep(m, 6, 32, 2, 1, CutForm::tokens, 1e9, Network(), 3);
  EXPECT_NEAR(grid.compute, PredictStep(m, 6, 32, 2, 1, CutForm::tokens, 1e9, Network()).compute / 3, 1e-9);
  EXPECT_EQ(HeadChunks(3, 32, 1e6), 22);
  EXPECT_EQ(HeadChunks(64, 32, 1e6), 1);
  EXPECT_EQ(HeadChunks(1, 7, 1e6), 7);
  EXPECT_EQ(HeadChunks(1, 64, 1e8), 3); // two copies of 100 MB fit in 256 MiB, not three
  EXPECT_EQ(HeadChunks(1, 64, 1e9), 1);
}

namespace {

// S2's shape (bench.cpp) on 4 ranks.
ModelSettings s2() {
  ModelSettings m;
  m.L = 32, m.H = 32, m.d = 16, m.k = 8;
  return m;
}

} // namespace

// All ranks on one node (node_ranks 0 or P): nothing is remote, and the time
// is the flat messages * latency + bytes / bandwidth of the busiest rank.
TEST(Cost, OneNodeIsTheFlatNetwork) {
  Network net;
  for (PetscInt per : {0, 4}) {
    net.node_ranks = per;
    const StepCost c = PredictStep(s2(), 16, 128, 4, 2, CutForm::tokens, 1e9, net);
    EXPECT_EQ(c.remote_messages, 0.0);
    EXPECT_EQ(c.remote_bytes, 0.0);
    // The ranks are alike here: the busiest rank's figures are the mean's.
    EXPECT_NEAR(c.communication + c.hidden, c.max_messages * net.latency + c.max_bytes / net.bandwidth, 1e-15);
  }
}

// One rank a node: every message leaves its node, at the remote figures.
TEST(Cost, OneRankANodeSendsEverythingOffTheNode) {
  Network net;
  net.node_ranks = 1, net.card_bandwidth = 1e15;
  const StepCost c = PredictStep(s2(), 16, 128, 4, 2, CutForm::tokens, 1e9, net);
  ASSERT_GT(c.messages, 0.0);
  EXPECT_EQ(c.remote_messages, c.messages);
  EXPECT_EQ(c.remote_bytes, c.bytes);
  EXPECT_NEAR(c.communication + c.hidden, c.max_messages * net.remote_latency + c.max_bytes / net.remote_bandwidth,
              1e-15);
}

// Two nodes of two ranks, two head groups (ranks 0 1 | 2 3): the head
// groups' exchanges stay on their node, the token groups' (0-2, 1-3) cross;
// with a slow card, the two ranks of a node share it: each waits for both.
TEST(Cost, ANodesRanksShareItsCard) {
  Network net;
  net.node_ranks = 2;
  const StepCost fast = PredictStep(s2(), 16, 128, 4, 2, CutForm::tokens, 1e9, net);
  EXPECT_GT(fast.remote_bytes, 0.0);
  EXPECT_LT(fast.remote_bytes, fast.bytes);
  EXPECT_LT(fast.remote_messages, fast.messages);
  net.card_bandwidth = 1e6;
  const StepCost slow = PredictStep(s2(), 16, 128, 4, 2, CutForm::tokens, 1e9, net);
  const double card = 2 * slow.remote_bytes / net.card_bandwidth; // the node's two ranks, alike
  EXPECT_GT(slow.communication, card);
  EXPECT_LT(slow.communication, card + fast.communication);
}

// With messages costing a second each, the layout of fewest ranks wins: one
// rank a node, its threads over the node's cores.
TEST(Cost, SlowMessagesChooseThreadsOverRanks) {
  Network net;
  net.latency = net.remote_latency = 1.0;
  const StepCost c = ChooseLayout(s2(), 64, 128, 32, 8, 1e9, net);
  ASSERT_GT(c.Ph, 0);
  EXPECT_EQ(c.threads, 8);
  EXPECT_EQ(c.P, 4);
}

// A node's token groups take the rows of a cut sequence from other nodes
// once (NodeSharing): 16 ranks on two nodes of 8, one sequence of 65536
// tokens in R^64 (its rows dwarf the heads' exchanges). With two head groups
// a node holds four token groups, with eight one: either way the node
// receives each remote row once (and returns its gradient once), so the
// bytes off a node agree; sharing within the groups alone sent four times as
// many with two head groups.
TEST(Cost, ANodeTakesEachRemoteRowOnce) {
  ModelSettings m;
  m.L = 2, m.H = 8, m.d = 64, m.k = 8;
  Network net;
  net.node_ranks = 8;
  const StepCost four = PredictStep(m, 1, 65536, 16, 2, CutForm::tokens, 1e9, net);
  const StepCost one = PredictStep(m, 1, 65536, 16, 8, CutForm::tokens, 1e9, net);
  ASSERT_GT(one.remote_bytes, 0.0);
  EXPECT_NEAR(four.remote_bytes / one.remote_bytes, 1.0, 0.05);
  // The same rows on a flat network (one node): nothing leaves it.
  net.node_ranks = 0;
  EXPECT_EQ(PredictStep(m, 1, 65536, 16, 2, CutForm::tokens, 1e9, net).remote_bytes, 0.0);
}
