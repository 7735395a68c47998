// The instruction sets this build uses, checked against the CPU before any
// other code of the program runs: a build for another CPU (e.g. -march=native
// on a login node) stops with one clear line instead of SIGILL.
#include "mft/settings/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Stops unless the CPU has `name` (MFT_TEST_CPU_LACKS=name: act as if it had not, for the tests).
void require(const char *name, bool present) {
  const char *pretend = std::getenv("MFT_TEST_CPU_LACKS");
  if (present && !(pretend && !std::strcmp(pretend, name))) return;
  std::fprintf(stderr,
               "mft: error: this build uses %s instructions, which this CPU lacks (built for another CPU: rebuild on "
               "this node, or with cmake -DMFT_ARCH=<this CPU's architecture>, e.g. x86-64-v3)\n",
               name);
  std::exit(mft::kExitInput);
}

// Runs before the other static initialisers of the program (priority 101);
// scalar code only.
__attribute__((constructor(101))) void check_cpu() {
#if defined(__x86_64__)
  __builtin_cpu_init();
#ifdef __AVX512F__
  require("avx512f", __builtin_cpu_supports("avx512f"));
#endif
#ifdef __AVX2__
  require("avx2", __builtin_cpu_supports("avx2"));
#endif
#ifdef __FMA__
  require("fma", __builtin_cpu_supports("fma"));
#endif
#ifdef __AVX__
  require("avx", __builtin_cpu_supports("avx"));
#endif
#endif
}

} // namespace
