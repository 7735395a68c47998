#!/usr/bin/env bash
# The README's test command: set up, build, and run the whole test suite.
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$top/jobs/setup.sh"
cd "$top/build"
# The CPU the tests ran on (results compared across machines are compared
# with a tolerance; bit for bit only within one binary's run).
echo "mft tests on: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1) ($(nproc) cores$(grep -qw avx512f /proc/cpuinfo && echo ', AVX-512' || echo ', no AVX-512'))"
# Two cores' worth of tests at a time (tests/resources.json; tests/CMakeLists.txt
# says which take one core and which two), and the Slurm test beside them.
ctest --output-on-failure -j 3 --resource-spec-file "$top/tests/resources.json" "$@"
