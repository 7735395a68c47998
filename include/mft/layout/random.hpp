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
  std::uint64_t next();   // 64 random bits (xoshiro256**)
  double uniform();       // in [0, 1), 53 bits
  double normal();        // standard normal (Box-Muller, platform-independent)
  // n normals into out: bitwise the next n calls of normal(), its pairs'
  // uniforms drawn first and their logarithms and sines taken in a loop of
  // independent iterations (a head's entries at once, HeadsInitialize).
  void normals(double *out, long n);
  double exponential();   // Exp(1)

private:
  std::uint64_t s_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

// Purposes (the second argument of Stream).
enum : std::uint64_t { kTokens = 1, kHeads = 2, kReadout = 3, kSequenceParam = 4, kBatch = 5, kLsePoint = 6, kProbeVector = 10, kLawDraw = 11 };

} // namespace mft
