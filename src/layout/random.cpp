// xoshiro256** seeded by splitmix64 over the stream's ids; Box-Muller normals
// with a logarithm and sines of their own (IEEE operations alone).
#include "mft/layout/random.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>

namespace mft {

namespace {
std::uint64_t splitmix(std::uint64_t &x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
} // namespace

Stream::Stream(std::uint64_t seed, std::uint64_t purpose, std::uint64_t i, std::uint64_t j) {
  std::uint64_t x = seed;
  std::uint64_t h = splitmix(x);
  for (std::uint64_t id : {purpose, i, j}) {
    x = h ^ (id * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    h = splitmix(x);
  }
  x = h;
  for (auto &s : s_) s = splitmix(x);
}

// The logarithm of x in (0, 1] (x >= 2^-53 here): x = 2^e m with m in
// [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1) (m - 1
// exact), |s| < 0.172: the series to s^23 is below 1e-19; e ln 2 in two parts.
// Within 2 ulp; IEEE operations alone (this file is built without FMA
// contraction), so the same bits on every x86-64 CPU and build, and a loop of
// them vectorizes.
static inline double log_unit(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  double e = (double)((std::int64_t)((b >> 52) & 0x7ff) - 1023);
  const std::uint64_t mb = (b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
  double m;
  std::memcpy(&m, &mb, sizeof m);
  const bool high = m > 1.4142135623730951;
  m = high ? 0.5 * m : m;
  e = high ? e + 1.0 : e;
  const double s = (m - 1.0) / (m + 1.0), z = s * s;
  double p = 1.0 / 23;
#pragma GCC unroll 16
  for (int k = 21; k >= 1; k -= 2) p = 1.0 / k + z * p;
  constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  return e * ln2_hi + (2.0 * s * p + e * ln2_lo);
}

// cos and sin of 2 pi u for u in [0, 1): u = q/4 + r, q an integer (r exact,
// |r| <= 1/8), t = 2 pi r, the Taylor series of cos and sin at |t| <= pi/4
// to t^18 and t^19 (remainders below 1e-19), rotated by q quarter turns.
static inline void sincos_turn(double u, double *c, double *s) {
  const double q = std::nearbyint(4.0 * u), r = u - 0.25 * q;
  const double t = 6.283185307179586 * r, z = t * t;
  double pc = 1.0 / 6402373705728000.0, ps = 1.0 / 121645100408832000.0; // 1/18!, 1/19!
  constexpr double f[] = {1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
                          1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0,
                          1.0 / 87178291200.0, 1.0 / 1307674368000.0, 1.0 / 20922789888000.0,
                          1.0 / 355687428096000.0}; // 1/2! .. 1/17!
#pragma GCC unroll 16
  for (int k = 16; k >= 2; k -= 2) { // pc: cos; ps: sin / t
    pc = f[k - 2] - z * pc;          // 1/k! - z pc
    ps = f[k - 1] - z * ps;          // 1/(k+1)! - z ps
  }
  const double cr = 1.0 - z * pc, sr = t * (1.0 - z * ps);
  const double k = q - 4.0 * std::floor(0.25 * q); // q mod 4
  *c = k == 0 ? cr : k == 1 ? -sr : k == 2 ? -cr : sr;
  *s = k == 0 ? sr : k == 1 ? cr : k == 2 ? -sr : -cr;
}

double Stream::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform(); // (0, 1]
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * log_unit(u1));
  double c, s;
  sincos_turn(u2, &c, &s);
  spare_ = r * s;
  has_spare_ = true;
  return r * c;
}

void Stream::normals(double *out, long n) {
  long e = 0;
  if (n > 0 && has_spare_) out[e++] = normal();
  constexpr long kPairs = 64;
  double u1[kPairs], u2[kPairs];
  while (n - e >= 2) {
    const long pairs = std::min(kPairs, (n - e) / 2);
    for (long p = 0; p < pairs; ++p) u1[p] = 1.0 - uniform(), u2[p] = uniform();
    for (long p = 0; p < pairs; ++p) {
      const double r = std::sqrt(-2.0 * log_unit(u1[p]));
      double c, s;
      sincos_turn(u2[p], &c, &s);
      out[e + 2 * p] = r * c;
      out[e + 2 * p + 1] = r * s;
    }
    e += 2 * pairs;
  }
  if (e < n) out[e] = normal(); // keeps the spare, as normal() would
}

double Stream::exponential() { return -log_unit(1.0 - uniform()); }

} // namespace mft
