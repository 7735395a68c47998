// Counter-based random streams: one independent stream per (seed, object id),
// so that any rank can draw the numbers of the objects it owns and every rank
// count gives the same data and the same heads.
#pragma once

#include <cstdint>

namespace mft {

class Stream {
public:
  // A stream for (seed, purpose, i, j): purpose separates tokens, heads, readout...
  Stream(std::uint64_t seed, std::uint64_t purpose, std::uint64_t i = 0, std::uint64_t j = 0);
  std::uint64_t next() {  // 64 random bits (xoshiro256**); inline: a head's draws are most of a sample's time
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double uniform() { return (double)(next() >> 11) * 0x1.0p-53; } // in [0, 1), 53 bits
  double normal();        // standard normal (Box-Muller, platform-independent)
  // n normals into out: bitwise the next n calls of normal(), its pairs'
  // uniforms drawn first and their logarithms and sines taken in a loop of
  // independent iterations (a head's entries at once, HeadsInitialize).
  void normals(double *out, long n);
  double exponential();   // Exp(1)

private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

// Purposes (the second argument of Stream).
enum : std::uint64_t { kTokens = 1, kHeads = 2, kReadout = 3, kSequenceParam = 4, kBatch = 5, kLsePoint = 6, kProbeVector = 10, kLawDraw = 11, kCellSeed = 12, kNeurons = 13, kEnergyDirection = 14 };

} // namespace mft
