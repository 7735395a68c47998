// Row-major products (LIBXSMM for the small ones, else the BLAS); LAPACK dsyev
// and dpotrf/dpotrs on row-major data.
#include "mft/kernels/linalg.hpp"

#include <petscblaslapack.h>

#if defined(MFT_HAVE_LIBXSMM)
#include <libxsmm.h>
#endif

#include "mft/kernels/simd.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

namespace mft {

// Threads asked for on the command line or by OMP_NUM_THREADS.
static bool ThreadsAsked(char **argv) {
  const char *env = std::getenv("OMP_NUM_THREADS");
  if (env && std::atoi(env) > 1) return true;
  for (char **a = argv; *a; ++a)
    if (std::strncmp(*a, "--parallel.threads", 18) == 0) {
      const char *v = (*a)[18] == '=' ? *a + 19 : a[1];
      if (v && std::atoi(v) > 1) return true;
    }
  return false;
}

void BlasSetup(char **argv) {
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("MFT_KEEP_BLAS") && ThreadsAsked(argv)) {
    // OpenMP reads its wait policy when it loads: set it, and start again.
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv); // on failure, go on spinning
  }
  if (!std::getenv("OPENBLAS_CORETYPE") && !std::getenv("MFT_KEEP_BLAS")) {
    auto corename = (char *(*)())dlsym(RTLD_DEFAULT, "openblas_get_corename");
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
    if (corename && std::strcmp(corename(), "Prescott") == 0 && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
      setenv("OPENBLAS_CORETYPE", avx512 ? "SkylakeX" : "Haswell", 1);
      setenv("MFT_BLAS_CHOSEN", "1", 1); // mft bench: the kernels are mft's choice, not the user's
      execv("/proc/self/exe", argv); // on failure, go on with the kernels we have
    }
  }
  const char *env = std::getenv("MFT_BLAS_THREADS");
  const int n = env ? std::atoi(env) : 1;
  if (auto set = (void (*)(int))dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) set(n > 0 ? n : 1);
}

#if defined(MFT_HAVE_LIBXSMM)
// The LIBXSMM kernel for this product, or null (LIBXSMM 1.17 generates
// alpha = 1, beta = 0 or 1, and no transposed first column-major operand, i.e.
// no row-major op(B) = B^T; MFT_NO_LIBXSMM=1 sends everything to the BLAS).
// Each thread keeps the kernels it was last given in a table of its own
// (kKernelSlots, by a hash of the product's shape), in front of LIBXSMM's
// dispatch: a step makes 28 small products a (sequence, head) unit, and a
// dispatch per product shows in the step (docs/performance.md, "Choices in
// the kernels, measured").
static libxsmm_dmmfunction SmallKernel(bool ta, bool tb, PetscInt m, PetscInt n, PetscInt k, double alpha,
                                       PetscInt lda, PetscInt ldb, double beta, PetscInt ldc) {
  static const bool off = std::getenv("MFT_NO_LIBXSMM") && std::strcmp(std::getenv("MFT_NO_LIBXSMM"), "0") != 0;
  if (off || tb || alpha != 1.0 || (beta != 0.0 && beta != 1.0) || (double)m * n * k > 16777216.0) return nullptr;
  struct Slot {
    PetscInt shape[6] = {-1, 0, 0, 0, 0, 0}; // m, n, k, lda, ldb, ldc; -1: empty
    int form = 0;                            // ta + 2 beta
    libxsmm_dmmfunction kernel = nullptr;
  };
  constexpr std::size_t kKernelSlots = 128;
  thread_local std::array<Slot, kKernelSlots> table;
  const PetscInt shape[6] = {m, n, k, lda, ldb, ldc};
  const int form = (ta ? 1 : 0) + (beta != 0.0 ? 2 : 0);
  std::uint64_t h = (std::uint64_t)form;
  for (PetscInt v : shape) h = (h ^ (std::uint64_t)v) * 0x9E3779B97F4A7C15ull;
  Slot &slot = table[(h >> 32) % kKernelSlots];
  if (slot.form == form && std::equal(shape, shape + 6, slot.shape)) return slot.kernel;
  const libxsmm_blasint M = n, N = m, K = k, la = lda, lb = ldb, lc = ldc;
  const int flags = ta ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
  slot.kernel = libxsmm_dmmdispatch(M, N, K, &lb, &la, &lc, &alpha, &beta, &flags, nullptr);
  std::copy(shape, shape + 6, slot.shape), slot.form = form;
  return slot.kernel;
}
#endif

std::string SmallProductPath() {
#if defined(MFT_HAVE_LIBXSMM)
  const char *off = std::getenv("MFT_NO_LIBXSMM");
  if (off && std::strcmp(off, "0") != 0) return "BLAS (MFT_NO_LIBXSMM=1)";
  return std::string("LIBXSMM (target ") + libxsmm_get_target_arch() + ")";
#else
  return "BLAS (built without LIBXSMM)";
#endif
}

std::string BlasLibrary() {
  Dl_info info;
  void *f = dlsym(RTLD_DEFAULT, "dgemm_");
  if (!f || !dladdr(f, &info) || !info.dli_fname) return "(unknown)";
  char *real = realpath(info.dli_fname, nullptr); // through Debian's alternatives' links
  const std::string name = real ? real : info.dli_fname;
  std::free(real);
  return name;
}

void gemm(bool ta, bool tb, PetscInt m, PetscInt n, PetscInt k, double alpha, const double *A, PetscInt lda,
          const double *B, PetscInt ldb, double beta, double *C, PetscInt ldc) {
  if (m == 0 || n == 0) return;
#if defined(MFT_HAVE_LIBXSMM)
  if (k > 0)
    if (libxsmm_dmmfunction f = SmallKernel(ta, tb, m, n, k, alpha, lda, ldb, beta, ldc)) {
      f(B, A, C); // column-major C^T = op(B)^T op(A)^T, as below
      return;
    }
#endif
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  const PetscBLASInt M = (PetscBLASInt)n, N = (PetscBLASInt)m, K = (PetscBLASInt)k, la = (PetscBLASInt)lda,
                     lb = (PetscBLASInt)ldb, lc = (PetscBLASInt)ldc;
  if (k == 0) {
    for (PetscInt i = 0; i < m; ++i)
      for (PetscInt j = 0; j < n; ++j) C[i * ldc + j] *= beta;
    return;
  }
  BLASgemm_(tb ? "T" : "N", ta ? "T" : "N", &M, &N, &K, &alpha, B, &lb, A, &la, &beta, C, &lc);
}

PetscErrorCode SymmetricEigenvalues(std::vector<double> A, PetscInt n, std::vector<double> *w,
                                    std::vector<double> *vectors) {
  PetscBLASInt bn, lwork, info;
  PetscFunctionBeginUser;
  w->assign((size_t)n, 0.0);
  if (n == 0) PetscFunctionReturn(0);
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(8 * n, &lwork));
  std::vector<double> work((size_t)lwork);
  // Row-major upper = column-major lower: ask LAPACK for "L".
  LAPACKsyev_(vectors ? "V" : "N", "L", &bn, A.data(), &bn, w->data(), work.data(), &lwork, &info);
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dsyev failed (info %d)", (int)info);
  if (vectors) *vectors = A; // LAPACK's columns: rows here
  PetscFunctionReturn(0);
}

PetscErrorCode SolveSPD(std::vector<double> S, PetscInt n, PetscInt r, std::vector<double> &B) {
  PetscBLASInt bn, br, info;
  PetscFunctionBeginUser;
  PetscCall(PetscBLASIntCast(n, &bn));
  PetscCall(PetscBLASIntCast(r, &br));
  // Column-major B^T is row-major B: solve with B's columns as LAPACK's rows.
  std::vector<double> Bt((size_t)(n * r));
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt j = 0; j < r; ++j) Bt[j * n + i] = B[i * r + j];
  LAPACKpotrf_("L", &bn, S.data(), &bn, &info);
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "the normal equations are singular (dpotrf info %d)", (int)info);
  LAPACKpotrs_("L", &bn, &br, S.data(), &bn, Bt.data(), &bn, &info);
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dpotrs failed (info %d)", (int)info);
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt j = 0; j < r; ++j) B[i * r + j] = Bt[j * n + i];
  PetscFunctionReturn(0);
}

PetscInt row_stride(PetscInt n) {
  constexpr PetscInt kLine = 8, kShort = 128;
  const PetscInt lines = (n + kLine - 1) / kLine;
  return kLine * (n > kShort && lines % 2 == 0 ? lines + 1 : lines);
}

#if defined(__AVX512F__)
namespace {

// An 8 x 8 block of B (row-major, leading dimension ldb) into Bt (ld):
// pairs of rows interleaved, then their 128-bit and 256-bit lanes.
inline void transpose8x8(const double *B, PetscInt ldb, double *Bt, PetscInt ld) {
  __m512d r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_pd(B + i * ldb);
  for (int i = 0; i < 8; i += 2) t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
  // u[0..3]: rows 0-3 of columns (0|4), (1|5), (2|6), (3|7); u[4..7] rows 4-7 of the same.
  const __m512i low = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), high = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  for (int h = 0; h < 2; ++h) {
    const __m512d *a = t + 4 * h;
    u[4 * h + 0] = _mm512_permutex2var_pd(a[0], low, a[2]);
    u[4 * h + 1] = _mm512_permutex2var_pd(a[1], low, a[3]);
    u[4 * h + 2] = _mm512_permutex2var_pd(a[0], high, a[2]);
    u[4 * h + 3] = _mm512_permutex2var_pd(a[1], high, a[3]);
  }
  const __m512i first = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0), second = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
  for (int c = 0; c < 4; ++c) {
    _mm512_storeu_pd(Bt + c * ld, _mm512_permutex2var_pd(u[c], first, u[4 + c]));
    _mm512_storeu_pd(Bt + (c + 4) * ld, _mm512_permutex2var_pd(u[c], second, u[4 + c]));
  }
}
} // namespace
#elif defined(__AVX2__)
namespace {

// Eight rows by four columns of B (row-major, leading dimension ldb) into Bt
// (ld): two 4 x 4 blocks, each with pairs of rows interleaved, then their
// 128-bit lanes; each column of B then makes one cache line of Bt.
inline void transpose8x4(const double *B, PetscInt ldb, double *Bt, PetscInt ld) {
  for (int h = 0; h < 8; h += 4) {
    const double *b = B + h * ldb;
    const __m256d r0 = _mm256_loadu_pd(b), r1 = _mm256_loadu_pd(b + ldb), r2 = _mm256_loadu_pd(b + 2 * ldb),
                  r3 = _mm256_loadu_pd(b + 3 * ldb);
    const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1), t2 = _mm256_unpacklo_pd(r2, r3),
                  t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(Bt + h, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(Bt + ld + h, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(Bt + 2 * ld + h, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(Bt + 3 * ld + h, _mm256_permute2f128_pd(t1, t3, 0x31));
  }
}
} // namespace
#endif

// B (rows x cols, row-major) -> Bt (cols x rows), eight rows of B at a time:
// each column then writes one cache line of Bt whole. (Row by row, the
// columns' writes are `rows` doubles apart: at rows = 1024, 8 KiB, every
// column's line falls in the same L1 set and they evict each other.) With
// AVX-512, 8 x 8 blocks in registers; with AVX2, 8 x 4.
// Bt's leading dimension is ld (rows by default).
void transpose(const double *B, PetscInt rows, PetscInt cols, double *Bt, PetscInt ld) {
  constexpr PetscInt kLine = 8;
  if (ld < 0) ld = rows;
  PetscInt r0 = 0;
  for (; r0 + kLine <= rows; r0 += kLine) {
    PetscInt c = 0;
#if defined(__AVX512F__)
    for (; c + kLine <= cols; c += kLine) transpose8x8(B + r0 * cols + c, cols, Bt + c * ld + r0, ld);
#elif defined(__AVX2__)
    for (; c + 4 <= cols; c += 4) transpose8x4(B + r0 * cols + c, cols, Bt + c * ld + r0, ld);
#endif
    for (; c < cols; ++c)
      for (PetscInt r = 0; r < kLine; ++r) Bt[c * ld + r0 + r] = B[(r0 + r) * cols + c];
  }
  for (; r0 < rows; ++r0)
    for (PetscInt c = 0; c < cols; ++c) Bt[c * ld + r0] = B[r0 * cols + c];
}

} // namespace mft
