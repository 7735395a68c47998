// Where a step's time goes, per call site: the products one (sequence, head)
// unit of a training step makes (a qkv head, its N keys at once, in blocks
// of AttentionWork::rows queries, as attention.cpp calls them), each timed
// alone on one core through mft's gemm (LIBXSMM or the BLAS), and the
// unit's exps at the kernels' exp rate, against the dgemm peak (n = 1024);
// the two rates measured as mft bench measures them (bench.hpp), on one
// rank. Then the whole unit through the kernels (attention and
// attention_reverse on the same shape, over a layer's worth of distinct
// sequences and heads, as a step calls them) against its roofline bound
// (step_bound's count): what the kernels spend beyond their products and
// exps. A benchmark, not a test.
//   products [N d k]   (default 128 16 8: S2's shape; S1 64 16 8, S3 1024 32 16)
#include "mft/kernels/attention.hpp"
#include "mft/analyses/bench.hpp"
#include "mft/kernels/linalg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace mft;

namespace {

struct Site {
  const char *what;
  bool ta;
  PetscInt m, n, k;
  double beta;
  PetscInt calls; // a unit's step
};

template <class F> double seconds_per_call(F f) {
  for (int r = 0; r < 20; ++r) f();
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) { // the best of five rounds of 200 calls
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 200; ++r) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 200);
  }
  return best;
}

// Seconds a unit of the kernels takes: attention, then attention_reverse,
// of qkv heads on N tokens (keys at once), as a step's layer calls them:
// each of `sequences` sequences with each of `heads` heads in turn, a
// sequence's velocity and token gradients summed over its heads (the best of
// five rounds).
double unit_seconds(PetscInt N, PetscInt d, PetscInt k, PetscInt sequences, PetscInt heads) {
  const HeadShape shape = head_shape(HeadKind::qkv, d, k);
  const size_t tokens = (size_t)(sequences * N * d), entries = (size_t)(heads * shape.size);
  std::vector<double> x(tokens), lam(tokens), out(tokens, 0.0), dx(tokens, 0.0), theta(entries), dtheta(entries, 0.0);
  std::mt19937_64 gen(1);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (double &v : x) v = normal(gen);
  for (double &v : lam) v = normal(gen);
  for (double &v : theta) v = normal(gen) / std::sqrt((double)d);
  AttentionWork work;
  work.reserve(shape, N);
  const AttentionOptions o;
  const double scale = 1.0 / (double)heads;
  auto sweep = [&] {
    for (PetscInt m = 0; m < sequences; ++m)
      for (PetscInt h = 0; h < heads; ++h)
        attention(shape, theta.data() + h * shape.size, o, x.data() + m * N * d, N, {0, N}, scale,
                  out.data() + m * N * d, work);
    for (PetscInt m = 0; m < sequences; ++m)
      for (PetscInt h = 0; h < heads; ++h)
        attention_reverse(shape, theta.data() + h * shape.size, o, x.data() + m * N * d, N, {0, N}, scale,
                          lam.data() + m * N * d, dx.data() + m * N * d, dtheta.data() + h * shape.size, work);
  };
  sweep();
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    sweep();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best / (double)(sequences * heads);
}

} // namespace

int main(int argc, char **argv) {
  BlasSetup(argv);
  const PetscInt N = argc > 1 ? std::atoi(argv[1]) : 128, d = argc > 2 ? std::atoi(argv[2]) : 16,
                 k = argc > 3 ? std::atoi(argv[3]) : 8, dv = d;
  if (N < 1 || d < 1 || k < 1 || k > d) {
    std::fprintf(stderr, "products: expected N d k with 1 <= k <= d, got %s %s %s\n", argc > 1 ? argv[1] : "",
                 argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "");
    return 1;
  }
  PetscCall(PetscInitialize(&argc, &argv, nullptr, nullptr));
  const PetscInt b = std::min(N, AttentionWork().rows(N)), blocks = (N + b - 1) / b; // as attention.cpp blocks them
  // The forward (projections, scores, weighted sums), the reverse making the
  // projections and scores again, then its products, as attention.cpp.
  const Site sites[] = {
      {"projections q, kappa = X Q^T, X K^T", false, N, k, d, 0.0, 4},
      {"projection w = X V^T", false, N, dv, d, 0.0, 2},
      {"scores q kappa^T (a block)", false, b, N, k, 0.0, 2 * blocks},
      {"weighted sums P w (a block)", false, b, dv, N, 0.0, blocks},
      {"dP = dY w^T (a block)", false, b, N, dv, 0.0, blocks},
      {"dq = dS kappa (a block)", false, b, k, N, 0.0, blocks},
      {"dkappa += dS^T q (a block)", true, N, k, b, 1.0, blocks},
      {"dw += P^T dY/l (a block)", true, N, dv, b, 1.0, blocks},
      {"dQ, dK += dq^T X, dkappa^T X", true, k, d, N, 1.0, 2},
      {"dx += dq Q, dkappa K", false, N, d, k, 1.0, 2},
      {"dV += dw^T X", true, dv, d, N, 1.0, 1},
      {"dx += dw V", false, N, d, dv, 1.0, 1},
  };
  const size_t big = (size_t)row_stride(std::max(N, d)) * (size_t)std::max(N, d);
  std::vector<double> A(big, 0.5), B(big, 0.25), C(big, 0.0);
  std::printf("one (sequence, head) unit of a step, N = %d, d = %d, k = %d (qkv, keys at once), one core\n", (int)N,
              (int)d, (int)k);
  double products = 0, flops = 0;
  for (const Site &s : sites) {
    // Rows as attention.cpp lays them (row_stride: the scores, kappa^T, w^T).
    const PetscInt lda = row_stride(s.ta ? s.m : s.k), ld = row_stride(s.n);
    const double t = seconds_per_call(
        [&] { gemm(s.ta, false, s.m, s.n, s.k, 1.0, A.data(), lda, B.data(), ld, s.beta, C.data(), ld); });
    const double f = 2.0 * s.m * s.n * s.k;
    products += t * s.calls, flops += f * s.calls;
    std::printf("  %-38s %5d x %5d x %5d  %8.3f us  %6.1f GFLOP/s  x%d\n", s.what, (int)s.m, (int)s.n, (int)s.k,
                t * 1e6, f / t / 1e9, (int)s.calls);
  }
  double peak, gexps;
  PetscCall(MeasurePeak(PETSC_COMM_SELF, 1, &peak));
  PetscCall(MeasureExpRate(PETSC_COMM_SELF, 1, &gexps));
  peak *= 1e9;
  const double exp_each = 1e-9 / gexps;
  const double exps = 2.0 * (double)N * (double)N; // the forward's and the reverse's softmax
  std::printf("  products %.2f us (%.2f MFLOP, %.1f GFLOP/s); exps %.2f us (%.0f at %.2f Gexp/s)\n", products * 1e6,
              flops / 1e6, flops / products / 1e9, exps * exp_each * 1e6, exps, gexps);
  // The unit's bound, as mft bench's fraction_of_bound prices a step
  // (step_bound: its products at the dgemm peak, its exps at the exp rate).
  Settings one;
  one.model.L = one.model.H = 1, one.data.M = 1, one.data.N = N, one.model.d = d, one.model.k = k;
  const double bound = step_bound(one, peak / 1e9, gexps), parts = products + exps * exp_each;
  std::printf("  dgemm peak (n = 1024) %.1f GFLOP/s: the unit's bound %.2f us; its products and exps alone take %.0f%% "
              "of that\n",
              peak / 1e9, bound * 1e6, 100 * parts / bound);
  // The whole unit, as S1's layer makes 128 of them on a rank (16 heads
  // over 8 sequences; fewer at longer N).
  const PetscInt heads = std::clamp(8192 / N, (PetscInt)2, (PetscInt)16), sequences = std::max((PetscInt)1, 512 / N);
  const double unit = unit_seconds(N, d, k, sequences, heads);
  std::printf("  the unit through the kernels (attention, attention_reverse; %d heads over %d sequence%s) %.2f us: "
              "%.2f us (%.0f%%) more than its products and exps; its bound is %.0f%% of it\n",
              (int)heads, (int)sequences, sequences > 1 ? "s" : "", unit * 1e6, (unit - parts) * 1e6,
              100 * (unit - parts) / unit, 100 * bound / unit);
  PetscCall(PetscFinalize());
  return 0;
}
