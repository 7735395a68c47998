// Activations, their slopes and Gaussian kernels: closed forms and Gauss-Hermite quadrature.
#include "mft/kernels/activation.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#ifdef MFT_HAVE_SLEEF
#include <immintrin.h>
#include <sleef.h>
#endif

namespace mft {

namespace {

// The transcendental functions ActivateAll maps over arrays: SLEEF's vector
// forms (1.0 ULP; erfc 1.5) on AVX-512 or AVX2 lanes, else libm's.
enum class Fn { exp, erf, erfc, tanh };

#if defined(MFT_HAVE_SLEEF) && defined(__AVX512F__)
constexpr PetscInt kWidth = 8;
void Lanes(Fn f, const double *in, double *out) {
  const __m512d x = _mm512_loadu_pd(in);
  __m512d y;
  switch (f) {
  case Fn::exp: y = Sleef_expd8_u10avx512f(x); break;
  case Fn::erf: y = Sleef_erfd8_u10avx512f(x); break;
  case Fn::erfc: y = Sleef_erfcd8_u15avx512f(x); break;
  default: y = Sleef_tanhd8_u10avx512f(x); break;
  }
  _mm512_storeu_pd(out, y);
}
#elif defined(MFT_HAVE_SLEEF) && defined(__AVX2__)
constexpr PetscInt kWidth = 4;
void Lanes(Fn f, const double *in, double *out) {
  const __m256d x = _mm256_loadu_pd(in);
  __m256d y;
  switch (f) {
  case Fn::exp: y = Sleef_expd4_u10avx2(x); break;
  case Fn::erf: y = Sleef_erfd4_u10avx2(x); break;
  case Fn::erfc: y = Sleef_erfcd4_u15avx2(x); break;
  default: y = Sleef_tanhd4_u10avx2(x); break;
  }
  _mm256_storeu_pd(out, y);
}
#else
constexpr PetscInt kWidth = 1;
void Lanes(Fn f, const double *in, double *out) {
  *out = f == Fn::exp ? std::exp(*in) : f == Fn::erf ? std::erf(*in) : f == Fn::erfc ? std::erfc(*in) : std::tanh(*in);
}
#endif

// out[e] = f(in[e]), e < n; the last lanes padded, so that every entry takes
// the same path wherever it sits (in and out may be one array).
void Map(Fn f, const double *in, PetscInt n, double *out) {
  PetscInt e = 0;
  for (; e + kWidth <= n; e += kWidth) Lanes(f, in + e, out + e);
  if (e == n) return;
  double pad[kWidth] = {}, res[kWidth];
  std::copy(in + e, in + n, pad);
  Lanes(f, pad, res);
  std::copy(res, res + (n - e), out + e);
}

constexpr double kPi = 3.14159265358979323846;

// Nodes and weights of n-point Gauss-Hermite quadrature for E[f(z)], z ~ N(0, 1)
// (probabilists' form: the physicists' nodes times sqrt 2, weights over sqrt pi),
// by Newton's method on the Hermite recurrence (Golub-Welsch's starting guesses).
struct Hermite {
  std::vector<double> z, w;
  explicit Hermite(int n) : z((size_t)n), w((size_t)n) {
    double x = 0;
    for (int i = 0; i < (n + 1) / 2; ++i) {
      if (i == 0) x = std::sqrt(2.0 * n + 1) - 1.85575 * std::pow(2.0 * n + 1, -1.0 / 6);
      else if (i == 1) x -= 1.14 * std::pow((double)n, 0.426) / x;
      else if (i == 2) x = 1.86 * x - 0.86 * z[0] / std::sqrt(2.0);
      else if (i == 3) x = 1.91 * x - 0.91 * z[1] / std::sqrt(2.0);
      else x = 2.0 * x - z[(size_t)i - 2] / std::sqrt(2.0);
      double dp = 0;
      for (int it = 0; it < 100; ++it) { // orthonormal Hermite polynomials at x
        double p1 = std::pow(kPi, -0.25), p2 = 0;
        for (int j = 1; j <= n; ++j) {
          const double p3 = p2;
          p2 = p1;
          p1 = x * std::sqrt(2.0 / j) * p2 - std::sqrt((j - 1.0) / j) * p3;
        }
        dp = std::sqrt(2.0 * n) * p2;
        const double step = p1 / dp;
        x -= step;
        if (std::fabs(step) < 1e-15 * std::fabs(x) + 1e-300) break;
      }
      const double weight = 2.0 / (dp * dp) / std::sqrt(kPi);
      z[(size_t)i] = x * std::sqrt(2.0), w[(size_t)i] = weight;
      z[(size_t)(n - 1 - i)] = -x * std::sqrt(2.0), w[(size_t)(n - 1 - i)] = weight;
    }
  }
};

const Hermite &Nodes() {
  static const Hermite h(ActivationKernelNodes);
  return h;
}

} // namespace

double Activate(Activation a, double z) {
  switch (a) {
  case Activation::identity: return z;
  case Activation::relu: return z > 0 ? z : 0.0;
  case Activation::gelu: return 0.5 * z * std::erfc(-z / std::sqrt(2.0));
  case Activation::tanh: return std::tanh(z);
  case Activation::erf: return std::erf(z);
  }
  return 0;
}

double ActivateSlope(Activation a, double z) {
  switch (a) {
  case Activation::identity: return 1.0;
  case Activation::relu: return z > 0 ? 1.0 : 0.0;
  case Activation::gelu: return 0.5 * std::erfc(-z / std::sqrt(2.0)) + z * std::exp(-0.5 * z * z) / std::sqrt(2 * kPi);
  case Activation::tanh: {
    const double t = std::tanh(z);
    return 1.0 - t * t;
  }
  case Activation::erf: return 2.0 / std::sqrt(kPi) * std::exp(-z * z);
  }
  return 0;
}

void ActivateAll(Activation a, const double *z, PetscInt n, double *s, double *ds) {
  static thread_local std::vector<double> arg, tail;
  arg.resize((size_t)n), tail.resize((size_t)n);
  switch (a) {
  case Activation::identity:
    std::copy(z, z + n, s);
    if (ds) std::fill(ds, ds + n, 1.0);
    return;
  case Activation::relu:
    for (PetscInt e = 0; e < n; ++e) s[e] = z[e] > 0 ? z[e] : 0.0;
    if (ds)
      for (PetscInt e = 0; e < n; ++e) ds[e] = z[e] > 0 ? 1.0 : 0.0;
    return;
  case Activation::tanh:
    Map(Fn::tanh, z, n, s);
    if (ds)
      for (PetscInt e = 0; e < n; ++e) ds[e] = 1.0 - s[e] * s[e];
    return;
  case Activation::erf:
    Map(Fn::erf, z, n, s);
    if (!ds) return;
    for (PetscInt e = 0; e < n; ++e) arg[(size_t)e] = -z[e] * z[e];
    Map(Fn::exp, arg.data(), n, ds);
    for (PetscInt e = 0; e < n; ++e) ds[e] *= 2.0 / std::sqrt(kPi);
    return;
  case Activation::gelu: // z Phi(z), Phi(z) = erfc(-z / sqrt 2) / 2; slope Phi(z) + z phi(z)
    for (PetscInt e = 0; e < n; ++e) arg[(size_t)e] = -z[e] / std::sqrt(2.0);
    Map(Fn::erfc, arg.data(), n, tail.data());
    for (PetscInt e = 0; e < n; ++e) s[e] = 0.5 * z[e] * tail[(size_t)e];
    if (!ds) return;
    for (PetscInt e = 0; e < n; ++e) arg[(size_t)e] = -0.5 * z[e] * z[e];
    Map(Fn::exp, arg.data(), n, ds);
    for (PetscInt e = 0; e < n; ++e) ds[e] = 0.5 * tail[(size_t)e] + z[e] * ds[e] / std::sqrt(2 * kPi);
    return;
  }
}

double ActivationKernel(Activation a, double pp, double pq, double qq, bool quadrature) {
  const double norms = std::sqrt(pp * qq);
  if (!quadrature && a == Activation::identity) return pq;
  if (!quadrature && a == Activation::relu) {
    if (norms == 0) return 0.0;
    const double theta = std::acos(std::fmax(-1.0, std::fmin(1.0, pq / norms)));
    return norms / (2 * kPi) * (std::sin(theta) + (kPi - theta) * std::cos(theta));
  }
  if (!quadrature && a == Activation::erf)
    return 2.0 / kPi * std::asin(2.0 * pq / std::sqrt((1.0 + 2.0 * pp) * (1.0 + 2.0 * qq)));
  // p = sp z1, q = (pq / sp) z1 + r z2 with r^2 = qq - pq^2 / pp (Cholesky).
  const Hermite &h = Nodes();
  const double sp = std::sqrt(pp), c = sp > 0 ? pq / sp : 0.0, r = std::sqrt(std::fmax(0.0, qq - c * c));
  double sum = 0;
  for (size_t i = 0; i < h.z.size(); ++i) {
    const double p = sp * h.z[i], sigma_p = Activate(a, p);
    double inner = 0;
    for (size_t j = 0; j < h.z.size(); ++j) inner += h.w[j] * Activate(a, c * h.z[i] + r * h.z[j]);
    sum += h.w[i] * sigma_p * inner;
  }
  return sum;
}

double ActivationMean(Activation a, double pp) {
  switch (a) {
  case Activation::identity:
  case Activation::erf:
  case Activation::tanh: return 0.0; // odd
  case Activation::relu: return std::sqrt(pp / (2 * kPi));
  case Activation::gelu: break;
  }
  const Hermite &h = Nodes();
  double sum = 0;
  for (size_t i = 0; i < h.z.size(); ++i) sum += h.w[i] * Activate(a, std::sqrt(pp) * h.z[i]);
  return sum;
}

double ActivationMeanSlope(Activation a, double pp) {
  switch (a) {
  case Activation::identity:
  case Activation::erf:
  case Activation::tanh: return 0.0;
  case Activation::relu: return 0.5 / std::sqrt(2 * kPi * pp);
  case Activation::gelu: break;
  }
  const Hermite &h = Nodes(); // E[sigma'(sqrt(pp) z) z] / (2 sqrt(pp))
  double sum = 0;
  for (size_t i = 0; i < h.z.size(); ++i) sum += h.w[i] * ActivateSlope(a, std::sqrt(pp) * h.z[i]) * h.z[i];
  return sum / (2 * std::sqrt(pp));
}

} // namespace mft
