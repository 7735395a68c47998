// Where a step's time goes, per call site: the products one (sequence, head)
// unit of a training step makes (a qkv head, its N keys at once, in blocks
// of AttentionWork::rows queries, as attention.cpp calls them), each timed
// alone on one core through mft's gemm (LIBXSMM or the BLAS), and the
// unit's exps at the kernels' exp rate, against the dgemm peak (n = 1024);
// the two rates measured as mft bench measures them (bench.hpp), on one
// rank. A benchmark, not a test.
//   products [N d k]   (default 128 16 8: S2's shape; S1 64 16 8, S3 1024 32 16)
#include "mft/kernels/attention.hpp"
#include "mft/analyses/bench.hpp"
#include "mft/kernels/linalg.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
  // mft bench's count of the unit's step: three forwards (products and exps).
  ModelSettings m;
  m.d = d, m.k = k;
  const double counted = 3 * CountUnit(m, N, 0, N, (double)N).forward;
  std::printf("  products %.2f us (%.2f MFLOP, %.1f GFLOP/s); exps %.2f us (%.0f at %.2f Gexp/s)\n", products * 1e6,
              flops / 1e6, flops / products / 1e9, exps * exp_each * 1e6, exps, gexps);
  std::printf("  dgemm peak (n = 1024) %.1f GFLOP/s: the unit's %.2f MFLOP counted by mft bench take %.2f us at it; "
              "products and exps alone reach %.0f%% of it\n",
              peak / 1e9, counted / 1e6, counted / peak * 1e6, 100 * counted / peak / (products + exps * exp_each));
  PetscCall(PetscFinalize());
  return 0;
}
