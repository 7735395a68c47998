// Rank independence: the run on all ranks (every grid shape, cut sequences
// shared as tokens and as projections) equals the run on one rank, for the
// forward pass, the gradient and 20 training steps; and neither the thread
// count nor running the heads' exchanges behind the kernels changes anything,
// bitwise.
#include "helpers.hpp"
#include "mft/flow/optimizer.hpp"

#include <algorithm>

using namespace mft;
using namespace mft::test;

namespace {

struct Outcome {
  std::vector<double> x1, grad, trained, risks;
};

Outcome run(MPI_Comm comm, std::vector<std::string> args, int steps = 20) {
  Outcome o;
  auto p = make_problem(comm, args);
  EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
  o.x1 = gather(p->x1);
  o.grad = gather(p->grad);
  Optimizer opt;
  EXPECT_EQ(OptimizerCreate(p->settings, p->heads, &opt), 0);
  for (int step = 0; step < steps; ++step) {
    ProblemSetBatch(p.get(), step); // (draws the batch: nothing can fail)
    EXPECT_EQ(ProblemEvaluate(p.get(), PETSC_TRUE), 0);
    o.risks.push_back(p->risk);
    EXPECT_EQ(OptimizerStep(&opt, p->heads.theta, p->grad), 0);
    EXPECT_EQ(ProblemSetHeads(p.get()), 0);
  }
  EXPECT_EQ(OptimizerDestroy(&opt), 0);
  o.trained = gather(p->heads.theta);
  return o;
}

void expect_same(const Outcome &a, const Outcome &b, const std::string &what) {
  EXPECT_LT(relative_error(a.x1, b.x1), 1e-12) << what;
  EXPECT_LT(relative_error(a.grad, b.grad), 1e-12) << what;
  EXPECT_LT(relative_error(a.trained, b.trained), 1e-12) << what;
  EXPECT_LT(relative_error(a.risks, b.risks), 1e-12) << what;
}

// Sizes chosen so that token groups cut sequences and head groups are uneven:
// 7 heads (prime), 3 sequences of 5 tokens (15 tokens over 2, 3, 4 ranks).
void check(std::vector<std::string> extra) {
  int size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  extra.insert(extra.end(), {"--model.H", "7", "--train.lr", "0.3"});
  const std::vector<std::string> base = tiny(extra);
  const Outcome serial = run(PETSC_COMM_SELF, base);
  EXPECT_LT(serial.risks.back(), serial.risks.front()); // training does something
  for (int hg = 1; hg <= std::min(size, 7); ++hg) { // at most model.H head groups
    if (size % hg) continue;
    for (const char *form : {"tokens", "projections"}) { // how cut sequences cross between token groups
      std::vector<std::string> args = base;
      args.insert(args.end(), {"--parallel.head_groups", std::to_string(hg), "--parallel.cut_sequences", form});
      expect_same(run(PETSC_COMM_WORLD, args), serial, "head groups " + std::to_string(hg) + ", cut sequences as " + form);
    }
  }
  // Threads over each rank's sequences (parallel.threads): bitwise the same
  // for 1, 2 and 3 threads, on all ranks, and the serial run to round-off.
  std::vector<std::string> threaded = base;
  threaded.insert(threaded.end(), {"--parallel.threads", "1"});
  const Outcome one = run(PETSC_COMM_WORLD, threaded);
  for (const char *n : {"2", "3"}) {
    threaded.back() = n;
    const Outcome o = run(PETSC_COMM_WORLD, threaded);
    EXPECT_TRUE(o.x1 == one.x1 && o.grad == one.grad && o.trained == one.trained && o.risks == one.risks)
        << n << " threads differ from 1 thread (bitwise)";
    expect_same(o, serial, std::string(n) + " threads");
  }
  // The heads' exchanges waited for at once (parallel.overlap false) rather
  // than run behind the kernels in buckets: the same sums, bitwise.
  threaded.back() = "1";
  threaded.insert(threaded.end(), {"--parallel.overlap", "false"});
  const Outcome waited = run(PETSC_COMM_WORLD, threaded);
  EXPECT_TRUE(waited.x1 == one.x1 && waited.grad == one.grad && waited.trained == one.trained &&
              waited.risks == one.risks)
      << "the exchanges behind the kernels change the result";
}

// A node's token groups take a cut sequence's rows from other nodes once
// (parallel.node_ranks, NodeSharing): on every grid whose nodes hold two or
// three token groups (the last node fewer), the tokens form equals the serial
// run to round-off, its forward equals the group sharing's bitwise (the rows
// are copies), and threads and the overlap change nothing, bitwise. One long
// sequence (every node spans it) and three that each span some nodes only.
void check_nodes(std::vector<std::string> extra) {
  int size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  if (size < 3) GTEST_SKIP() << "a node of two token groups beside another node needs 3 ranks or more";
  extra.insert(extra.end(), {"--model.H", "7", "--train.lr", "0.3", "--parallel.cut_sequences", "tokens"});
  const std::vector<std::string> base = tiny(extra);
  const Outcome serial = run(PETSC_COMM_SELF, base);
  int shared = 0;
  for (int hg = 1; hg <= std::min(size, 7); ++hg) {
    if (size % hg) continue;
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--parallel.head_groups", std::to_string(hg)});
    const Outcome groups = run(PETSC_COMM_WORLD, args);
    for (int C = 2; C <= 3 && C * hg < size; ++C) {
      std::vector<std::string> nodes = args;
      nodes.insert(nodes.end(), {"--parallel.node_ranks", std::to_string(C * hg), "--parallel.threads", "1"});
      const std::string what = "head groups " + std::to_string(hg) + ", nodes of " + std::to_string(C * hg);
      shared += make_problem(PETSC_COMM_WORLD, nodes)->tokens.node_comm != MPI_COMM_NULL;
      const Outcome o = run(PETSC_COMM_WORLD, nodes);
      expect_same(o, serial, what);
      EXPECT_TRUE(o.x1 == groups.x1) << what << ": the forward differs from the group sharing's";
      nodes.back() = "2";
      const Outcome threads = run(PETSC_COMM_WORLD, nodes);
      EXPECT_TRUE(threads.grad == o.grad && threads.trained == o.trained) << what << ": 2 threads differ, bitwise";
      nodes.insert(nodes.end(), {"--parallel.overlap", "false"});
      const Outcome waited = run(PETSC_COMM_WORLD, nodes);
      EXPECT_TRUE(waited.grad == threads.grad && waited.trained == threads.trained)
          << what << ": waiting at once differs, bitwise";
    }
  }
  EXPECT_GT(shared, 0) << "no grid shared rows over a node";
}

// Threads over a sequence's queries (Velocity::query_chunks): one sequence
// of 2100 tokens and 3 heads gives 8 query chunks on one rank (fewer where a
// token group holds part of it, the cut sequence's rows as tokens, and one
// from 8 token groups on). Every grid equals the serial run to round-off; 1,
// 2 and 3 threads are bitwise the same. Four training steps (each a forward
// and an adjoint over 2100^2 pairs): the other grids' tests train for 20.
constexpr int kQuerySteps = 4;
void check_queries(std::vector<std::string> extra) {
  int size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  extra.insert(extra.end(), {"--model.H", "3", "--model.L", "2", "--data.M", "1", "--data.N", "2100", "--train.lr",
                             "0.3", "--parallel.cut_sequences", "tokens"});
  const std::vector<std::string> base = tiny(extra);
  EXPECT_EQ(make_problem(PETSC_COMM_SELF, base)->velocity.query_chunks, 2100 / kQueryRows);
  const Outcome serial = run(PETSC_COMM_SELF, base, kQuerySteps);
  EXPECT_LT(serial.risks.back(), serial.risks.front());
  for (int hg = 1; hg <= std::min(size, 3); ++hg) {
    if (size % hg) continue;
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--parallel.head_groups", std::to_string(hg), "--parallel.threads", "1"});
    const Outcome one = run(PETSC_COMM_WORLD, args, kQuerySteps);
    expect_same(one, serial, "query chunks, head groups " + std::to_string(hg));
    for (const char *n : {"2", "3"}) {
      args.back() = n;
      const Outcome o = run(PETSC_COMM_WORLD, args, kQuerySteps);
      EXPECT_TRUE(o.x1 == one.x1 && o.grad == one.grad && o.trained == one.trained)
          << "query chunks, head groups " << hg << ": " << n << " threads differ from 1 (bitwise)";
    }
  }
}

TEST(Ranks, QueryChunks) { check_queries({}); }
TEST(Ranks, QueryChunksQkvoCausal) { check_queries({"--model.head_kind", "qkvo", "--model.causal", "true"}); }

TEST(Ranks, NodesShareOneLongSequence) { check_nodes({"--data.M", "1", "--data.N", "23"}); }
TEST(Ranks, NodesShareSomeSequences) { check_nodes({"--data.M", "2", "--data.N", "9", "--loss.kind", "pooled"}); }

TEST(Ranks, QkvTokenLoss) { check({}); }
TEST(Ranks, QkvoPooledCausal) { check({"--model.head_kind", "qkvo", "--loss.kind", "pooled", "--model.causal", "true"}); }
TEST(Ranks, ManySequencesFewTokens) { check({"--data.M", "5", "--data.N", "2"}); }
TEST(Ranks, QkvoTokenCausalAdamW) {
  check({"--model.head_kind", "qkvo", "--model.causal", "true", "--train.optimizer", "adamw", "--train.lr", "0.01"});
}
TEST(Ranks, QkvPooledAdamW) { check({"--loss.kind", "pooled", "--train.optimizer", "adamw", "--train.lr", "0.01"}); }
TEST(Ranks, SphereQkvoPooledCausalAdamW) {
  check({"--model.norm", "sphere", "--model.head_kind", "qkvo", "--loss.kind", "pooled", "--model.causal", "true",
         "--train.optimizer", "adamw", "--train.lr", "0.01"});
}
TEST(Ranks, PreQkvToken) { check({"--model.norm", "pre"}); }
TEST(Ranks, AdamWBlockMiniBatches) {
  check({"--train.optimizer", "adamw-block", "--train.lr", "0.01", "--data.M", "5", "--train.batch", "2",
         "--train.weight_decay", "0.1"});
}

} // namespace
