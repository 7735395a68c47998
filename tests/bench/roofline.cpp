// The roofline's two rates against what this machine can do (one core):
//   dgemm: GFLOP/s of the BLAS given (-b LIB, dlopen'ed; OpenBLAS picks its
//          kernels from OPENBLAS_CORETYPE at load), n = 1024 as mft bench;
//   exp:   Gexp/s and the largest error in ulp over [-30, 0] of the kernels'
//          own exp (mft's exponentials()), SLEEF's vector exps, glibc's
//          libmvec exp and libm's scalar exp.
//   roofline [-b /path/to/libblas.so]...
// Prints one line per measurement: what, rate, error. tests/bench/roofline.sh
// runs it for every BLAS and OpenBLAS kernel set here.
#include "mft/kernels/attention.hpp"
#include "mft/kernels/softmax.hpp"

#include <dlfcn.h>
#include <immintrin.h>
#include <sleef.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#if defined(__AVX512F__)
__m512d _ZGVeN8v_exp(__m512d); // glibc's libmvec, AVX-512
#endif
#if defined(__AVX2__)
__m256d _ZGVdN4v_exp(__m256d); // glibc's libmvec, AVX2
#endif
}

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

using Dgemm = void (*)(const char *, const char *, const int *, const int *, const int *, const double *,
                       const double *, const int *, const double *, const int *, const double *, double *, const int *);

void dgemm_rate(const char *lib) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::printf("dgemm %-48s not loadable: %s\n", lib, dlerror());
    return;
  }
  auto f = (Dgemm)dlsym(h, "dgemm_");
  if (!f) {
    std::printf("dgemm %-48s has no dgemm_\n", lib);
    return;
  }
  // One thread, as every mft rank runs its BLAS.
  for (const char *name : {"openblas_set_num_threads", "bli_thread_set_num_threads"})
    if (auto set = (void (*)(int))dlsym(h, name)) set(1);
  const int n = 1024;
  std::vector<double> A((size_t)n * n, 1.0 / n), B((size_t)n * n, 0.5), C((size_t)n * n, 0.0);
  const double one = 1.0;
  f("N", "N", &n, &n, &n, &one, A.data(), &n, B.data(), &n, &one, C.data(), &n); // warm up
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    const double t0 = now();
    for (int r = 0; r < 3; ++r) f("N", "N", &n, &n, &n, &one, A.data(), &n, B.data(), &n, &one, C.data(), &n);
    best = std::fmax(best, 2.0 * n * n * n * 3 / (now() - t0) / 1e9);
  }
  const char *core = std::getenv("OPENBLAS_CORETYPE");
  std::printf("dgemm %-48s %7.1f GFLOP/s (best of 5; OPENBLAS_CORETYPE=%s)\n", lib, best, core ? core : "(unset)");
}

// The largest error of e[i] against exp(x[i]) in units in the last place.
double max_ulp(const std::vector<double> &x, const std::vector<double> &e) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const long double t = expl((long double)x[i]);
    const double ulp = std::nextafter((double)t, INFINITY) - (double)t;
    worst = std::fmax(worst, (double)std::fabs((long double)e[i] - t) / ulp);
  }
  return worst;
}

template <class F> void exp_rate(const char *what, F apply, bool print) {
  const size_t n = 1 << 16;
  std::vector<double> x(n), e(n);
  for (size_t i = 0; i < n; ++i) x[i] = -30.0 * (double)i / (double)n;
  apply(x.data(), e.data(), n); // warm up
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    const double t0 = now();
    for (int r = 0; r < 100; ++r) apply(x.data(), e.data(), n);
    best = std::fmax(best, (double)n * 100 / (now() - t0) / 1e9);
  }
  if (print) std::printf("exp   %-48s %7.2f Gexp/s, max error %.2f ulp on [-30, 0]\n", what, best, max_ulp(x, e));
}

// A vector exp applied 8 (AVX-512) or 4 (AVX2) entries at a time.
#if defined(__AVX512F__)
__m512d sleef8(__m512d v) { return Sleef_expd8_u10(v); }
__m512d mvec8(__m512d v) { return _ZGVeN8v_exp(v); }
template <__m512d (*F)(__m512d)> void wide8(const double *x, double *e, size_t n) {
  for (size_t j = 0; j < n; j += 8) _mm512_storeu_pd(e + j, F(_mm512_loadu_pd(x + j)));
}
#endif
#if defined(__AVX2__)
__m256d sleef4(__m256d v) { return Sleef_expd4_u10(v); }
__m256d mvec4(__m256d v) { return _ZGVdN4v_exp(v); }
template <__m256d (*F)(__m256d)> void wide4(const double *x, double *e, size_t n) {
  for (size_t j = 0; j < n; j += 4) _mm256_storeu_pd(e + j, F(_mm256_loadu_pd(x + j)));
}
#endif

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "-b")) dgemm_rate(argv[++i]);
  using Exp = void (*)(const double *, double *, size_t);
  std::vector<std::pair<std::string, Exp>> exps = {
      {std::string("mft kernels: ") + mft::ExponentialPath(),
       [](const double *x, double *e, size_t n) {
         std::memcpy(e, x, n * sizeof(double));
         mft::exponentials(e, (PetscInt)n);
       }},
#if defined(__AVX512F__)
      {"SLEEF Sleef_expd8_u10 (AVX-512)", wide8<sleef8>},
      {"glibc libmvec _ZGVeN8v_exp (AVX-512)", wide8<mvec8>},
#endif
#if defined(__AVX2__)
      {"SLEEF Sleef_expd4_u10 (AVX2)", wide4<sleef4>},
      {"glibc libmvec _ZGVdN4v_exp (AVX2)", wide4<mvec4>},
#endif
      {"libm std::exp (scalar)", [](const double *x, double *e, size_t n) {
         for (size_t j = 0; j < n; ++j) e[j] = std::exp(x[j]);
       }}};
  // Twice through the list, printed the second time: the first function
  // measured in a process runs slower (the core's clock ramps up).
  for (int pass = 0; pass < 2; ++pass)
    for (auto &[name, f] : exps) exp_rate(name.c_str(), f, pass == 1);
  return 0;
}
