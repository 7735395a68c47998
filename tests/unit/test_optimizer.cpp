// Optimizers against hand-computed updates on a tiny case, every entry; the
// limits of AdamW; the learning-rate schedule; mini-batches.
#include "helpers.hpp"
#include "mft/flow/optimizer.hpp"

#include <cmath>
#include <string>

using namespace mft;
using namespace mft::test;

namespace {

// A tiny problem (L=2, H=2, d=3, k=2) whose theta and g are set by hand.
struct Tiny {
  ProblemPtr p;
  Optimizer opt;
  Vec g = nullptr;
  explicit Tiny(std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--model.L", "2", "--model.H", "2"});
    p = make_problem(PETSC_COMM_WORLD, tiny(extra));
    EXPECT_EQ(OptimizerCreate(p->settings, p->heads, &opt), 0);
    EXPECT_EQ(VecDuplicate(p->heads.theta, &g), 0);
  }
  ~Tiny() {
    EXPECT_EQ(VecDestroy(&g), 0);
    EXPECT_EQ(OptimizerDestroy(&opt), 0);
  }
  // theta_i and g_i from simple formulas of the global index i and the step.
  void set(Vec v, double a, double b) {
    PetscInt lo, hi;
    PetscScalar *x;
    EXPECT_EQ(VecGetOwnershipRange(v, &lo, &hi), 0);
    EXPECT_EQ(VecGetArray(v, &x), 0);
    for (PetscInt i = lo; i < hi; ++i) x[i - lo] = a * std::sin(1.0 + i) + b * std::cos(0.3 * i);
    EXPECT_EQ(VecRestoreArray(v, &x), 0);
  }
  std::vector<double> step(double ga, double gb) {
    set(g, ga, gb);
    EXPECT_EQ(OptimizerStep(&opt, p->heads.theta, g), 0);
    return gather(p->heads.theta);
  }
};

double value(PetscInt i, double a, double b) { return a * std::sin(1.0 + i) + b * std::cos(0.3 * i); }

TEST(Optimizer, GradientDescentStep) {
  Tiny t({"--train.optimizer", "gd", "--train.lr", "0.25"});
  t.set(t.p->heads.theta, 1.0, 0.5);
  const auto theta = t.step(2.0, -1.0);
  for (size_t i = 0; i < theta.size(); ++i)
    EXPECT_NEAR(theta[i], value(i, 1.0, 0.5) - 0.25 * value(i, 2.0, -1.0), 1e-15);
}

// Two AdamW steps written out entry by entry, with bias correction and decoupled decay.
TEST(Optimizer, AdamWTwoStepsByHand) {
  const double lr = 0.1, b1 = 0.8, b2 = 0.95, eps = 1e-3, wd = 0.2;
  Tiny t({"--train.optimizer", "adamw", "--train.lr", "0.1", "--train.beta1", "0.8", "--train.beta2", "0.95",
          "--train.eps", "1e-3", "--train.weight_decay", "0.2"});
  t.set(t.p->heads.theta, 1.0, 0.5);
  t.step(2.0, -1.0);
  const auto theta = t.step(-0.5, 3.0);
  for (size_t i = 0; i < theta.size(); ++i) {
    double th = value(i, 1.0, 0.5), m = 0, v = 0;
    const double g[2] = {value(i, 2.0, -1.0), value(i, -0.5, 3.0)};
    for (int s = 1; s <= 2; ++s) {
      m = b1 * m + (1 - b1) * g[s - 1];
      v = b2 * v + (1 - b2) * g[s - 1] * g[s - 1];
      const double mhat = m / (1 - std::pow(b1, s)), vhat = v / (1 - std::pow(b2, s));
      th = th - lr * (mhat / (std::sqrt(vhat) + eps) + wd * th);
    }
    EXPECT_NEAR(theta[i], th, 1e-14) << i;
  }
}

// Per-block rates (train.block_lr_exponents): each entry of block b steps at
// lr k^-e_b, gd and AdamW (one step, by hand), qkvo at k = 4.
TEST(Optimizer, PerBlockRates) {
  const double lr = 0.1, e[4] = {0.5, 1, 0, 2}, k = 4;
  for (const char *kind : {"gd", "adamw"}) {
    Tiny t({"--train.optimizer", kind, "--train.lr", "0.1", "--model.head_kind", "qkvo", "--model.k", "4",
            "--train.block_lr_exponents", "0.5 1 0 2"});
    t.set(t.p->heads.theta, 1.0, 0.5);
    const auto theta = t.step(2.0, -1.0);
    const HeadShape &sh = t.p->heads.shape;
    for (size_t i = 0; i < theta.size(); ++i) {
      const PetscInt at = (PetscInt)i % sh.size;
      PetscInt b = 0;
      while (b + 1 < sh.blocks() && at >= sh.block_offset(b + 1)) ++b;
      const double g = value(i, 2.0, -1.0), rate = lr * std::pow(k, -e[b]), eps = 1e-8;
      // AdamW's first step: mhat = g, vhat = g^2
      const double step = std::string(kind) == "gd" ? g : g / (std::fabs(g) + eps);
      EXPECT_NEAR(theta[i], value(i, 1.0, 0.5) - rate * step, 1e-14) << kind << " entry " << i << " block " << b;
    }
  }
}

// The neurons' optimizer (MLP sublayers): each entry of block u, b, w steps at
// lr L^-x' m^-y' m^-e_b, gd and AdamW (one step, by hand), L = 2, m = 4.
TEST(Optimizer, NeuronBlockRates) {
  const double lr = 0.1, L = 2, m = 4, x = 0.5, y = 1, e[3] = {0, 1, 0.5};
  for (const char *kind : {"gd", "adamw"}) {
    auto p = make_problem(PETSC_COMM_WORLD,
                          tiny({"--model.L", "2", "--model.mlp_width", "4", "--train.optimizer", kind, "--train.lr", "0.1",
                                "--train.mlp_lr_depth_exponent", "0.5", "--train.mlp_lr_width_exponent", "1",
                                "--train.mlp_block_lr_exponents", "0 1 0.5"}));
    Optimizer opt;
    ASSERT_EQ(OptimizerCreate(p->settings, p->heads, &opt, &p->neurons), 0);
    const std::vector<double> before = gather(p->neurons.theta);
    ASSERT_EQ(VecSet(p->grad, 0.0), 0);
    PetscInt lo, hi;
    PetscScalar *g;
    ASSERT_EQ(VecGetOwnershipRange(p->neuron_grad, &lo, &hi), 0);
    ASSERT_EQ(VecGetArray(p->neuron_grad, &g), 0);
    for (PetscInt i = lo; i < hi; ++i) g[i - lo] = value(i, 2.0, -1.0);
    ASSERT_EQ(VecRestoreArray(p->neuron_grad, &g), 0);
    ASSERT_EQ(OptimizerStepAll(&opt, &p->heads, p->grad, &p->neurons, p->neuron_grad), 0);
    const std::vector<double> after = gather(p->neurons.theta);
    const PetscInt d = p->neurons.d, E = p->neurons.size();
    for (size_t i = 0; i < after.size(); ++i) {
      const PetscInt at = (PetscInt)i % E, b = at < d ? 0 : at == d ? 1 : 2;
      const double gi = value((PetscInt)i, 2.0, -1.0), eps = 1e-8;
      const double rate = lr * std::pow(L, -x) * std::pow(m, -y) * std::pow(m, -e[b]);
      const double step = std::string(kind) == "gd" ? gi : gi / (std::fabs(gi) + eps);
      EXPECT_NEAR(after[i], before[i] - rate * step, 1e-14) << kind << " entry " << i << " block " << b;
    }
    EXPECT_EQ(OptimizerDestroy(&opt), 0);
  }
}

// Blockwise: one second moment per block, the mean square of the block's gradient.
TEST(Optimizer, AdamWBlockTwoStepsByHand) {
  const double lr = 0.1, b1 = 0.8, b2 = 0.95, eps = 1e-3, wd = 0.2;
  Tiny t({"--train.optimizer", "adamw-block", "--train.lr", "0.1", "--train.beta1", "0.8", "--train.beta2", "0.95",
          "--train.eps", "1e-3", "--train.weight_decay", "0.2", "--model.head_kind", "qkvo"});
  t.set(t.p->heads.theta, 1.0, 0.5);
  t.step(2.0, -1.0);
  const auto theta = t.step(-0.5, 3.0);
  const HeadShape &s = t.p->heads.shape;
  for (size_t head = 0; head < theta.size() / s.size; ++head)
    for (PetscInt b = 0; b < s.blocks(); ++b) {
      const PetscInt n = s.block_rows(b) * s.block_cols(b), first = head * s.size + s.block_offset(b);
      double vb = 0;
      std::vector<double> th(n), m(n, 0.0);
      for (PetscInt e = 0; e < n; ++e) th[e] = value(first + e, 1.0, 0.5);
      for (int st = 1; st <= 2; ++st) {
        const double ga = st == 1 ? 2.0 : -0.5, gb = st == 1 ? -1.0 : 3.0;
        double g2 = 0;
        for (PetscInt e = 0; e < n; ++e) g2 += value(first + e, ga, gb) * value(first + e, ga, gb);
        vb = b2 * vb + (1 - b2) * g2 / n;
        for (PetscInt e = 0; e < n; ++e) {
          m[e] = b1 * m[e] + (1 - b1) * value(first + e, ga, gb);
          th[e] -= lr * ((m[e] / (1 - std::pow(b1, st))) / (std::sqrt(vb / (1 - std::pow(b2, st))) + eps) + wd * th[e]);
        }
      }
      for (PetscInt e = 0; e < n; ++e) EXPECT_NEAR(theta[first + e], th[e], 1e-14) << head << " " << b;
    }
}

// beta1 = 0 and beta2 -> 1, no decay: the update is lr g_t / rms(g_1..g_t), the
// gradient over the root mean square of all gradients so far.
TEST(Optimizer, AdamWLimits) {
  Tiny t({"--train.optimizer", "adamw", "--train.lr", "0.5", "--train.beta1", "0", "--train.beta2", "0.999999999",
          "--train.eps", "1e-12"});
  t.set(t.p->heads.theta, 0.0, 0.0);
  const auto first = t.step(2.0, -1.0);
  for (size_t i = 0; i < first.size(); ++i) // first step: sign descent
    EXPECT_NEAR(first[i], -0.5 * std::copysign(1.0, value(i, 2.0, -1.0)), 1e-9);
  const auto second = t.step(-0.5, 3.0);
  for (size_t i = 0; i < second.size(); ++i) {
    const double g1 = value(i, 2.0, -1.0), g2 = value(i, -0.5, 3.0);
    EXPECT_NEAR(second[i] - first[i], -0.5 * g2 / std::sqrt((g1 * g1 + g2 * g2) / 2), 1e-6);
  }
}

TEST(Optimizer, LearningRateSchedule) {
  Settings s = settings({"--train.lr", "1.0", "--train.warmup", "4", "--train.schedule", "cosine", "--train.lr_min",
                         "0.1", "--train.steps", "14"},
                        "train");
  EXPECT_DOUBLE_EQ(learning_rate(s.train, 0), 0.25);
  EXPECT_DOUBLE_EQ(learning_rate(s.train, 3), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(s.train, 4), 1.0);                    // cosine starts at lr
  EXPECT_NEAR(learning_rate(s.train, 8), 0.1 + 0.45 * (1 + std::cos(M_PI * 4 / 9)), 1e-15); // steps 4..13 span [0, pi]
  EXPECT_NEAR(learning_rate(s.train, 13), 0.1, 1e-15);                 // and ends at lr_min
  s.train.schedule = Schedule::constant;
  EXPECT_DOUBLE_EQ(learning_rate(s.train, 13), 1.0);
}

// A batch holds train.batch sequences, the same on every rank, new each step.
TEST(Optimizer, MiniBatchesAreReproducible) {
  auto p = make_problem(PETSC_COMM_WORLD, tiny({"--data.M", "9", "--train.batch", "4"}));
  std::vector<char> seen(9, 0);
  for (PetscInt step = 0; step < 30; ++step) {
    ProblemSetBatch(p.get(), step);
    EXPECT_EQ(std::count(p->active.begin(), p->active.end(), 1), 4);
    std::vector<int> mine(p->active.begin(), p->active.end()), root(mine);
    MPI_Bcast(root.data(), (int)root.size(), MPI_INT, 0, PETSC_COMM_WORLD);
    EXPECT_EQ(mine, root);
    for (size_t m = 0; m < seen.size(); ++m) seen[m] |= p->active[m];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 9); // over 30 steps every sequence was drawn
  ProblemSetBatch(p.get(), -1);
  EXPECT_EQ(std::count(p->active.begin(), p->active.end(), 1), 9);
}

} // namespace
