#!/usr/bin/env bash
# The roofline's rates against what this machine can do, on one core:
# dgemm (n = 1024, one thread) of OpenBLAS with each kernel set it can pick
# here (OPENBLAS_CORETYPE unset = its own choice, Haswell, SkylakeX,
# Cooperlake) and of BLIS when installed (Debian's libblis4, not installed
# by the set-up: apt-get install libblis4); the exp of the kernels, SLEEF,
# glibc's libmvec and libm, with their largest error in ulp.
#   bash tests/bench/roofline.sh [build dir]
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$top/build}"
cmake --build "$build" --target roofline -j "$(nproc)" > /dev/null
bin="$build/tests/roofline"
lscpu | grep -m1 "Model name" || true
openblas=/usr/lib/x86_64-linux-gnu/libopenblas.so.0
for core in "" Haswell SkylakeX Cooperlake; do
  if [ -z "$core" ]; then env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=1 "$bin" -b "$openblas" | grep dgemm
  else OPENBLAS_CORETYPE=$core OMP_NUM_THREADS=1 "$bin" -b "$openblas" | grep dgemm; fi
done
for blis in /usr/lib/x86_64-linux-gnu/libblis.so.4 /usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4; do
  [ -e "$blis" ] && OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 "$bin" -b "$blis" | grep dgemm
done
OMP_NUM_THREADS=1 "$bin" | grep exp
