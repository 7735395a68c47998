// xoshiro256** seeded by splitmix64 over the stream's ids; Box-Muller normals.
#include "mft/layout/random.hpp"

#include <algorithm>
#include <cmath>
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

double Stream::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform(); // (0, 1]
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * M_PI * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * M_PI * u2);
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
      const double r = std::sqrt(-2.0 * std::log(u1[p]));
      out[e + 2 * p] = r * std::cos(2.0 * M_PI * u2[p]);
      out[e + 2 * p + 1] = r * std::sin(2.0 * M_PI * u2[p]);
    }
    e += 2 * pairs;
  }
  if (e < n) out[e] = normal(); // keeps the spare, as normal() would
}

double Stream::exponential() { return -std::log(1.0 - uniform()); }

} // namespace mft
