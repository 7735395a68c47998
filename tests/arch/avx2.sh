#!/usr/bin/env bash
# The AVX2 path on any x86-64-v3 CPU: the AVX2 twin of mft (target mft_avx2
# of BUILD: the kernels and the CPU check compiled with -march=x86-64-v3,
# linked with this build's other objects), run with OpenBLAS's Haswell kernels
# and LIBXSMM's hsw target, so that an AVX-512 machine runs the AVX2 code. It
# must say which path it ran and give the native build's results within 1e-13
# (normwise, each dataset), the native build being the one the unit and
# gradient tests check: forward passes with their gradients on six shipped
# inputs (every head kind, masks, the sphere, the digits), the NTK, the
# diffusive regime's samples, the limit in both regimes, and 10 training steps
# on two inputs.
# Usage: avx2.sh SOURCE_DIR NATIVE_MFT BUILD_DIR
set -u
top="$1"
native="$2"
build="$3"
source "$top/tests/cli/lib.sh" "$native"
if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
  echo "this CPU has no AVX2 and FMA: skipped"
  exit 77
fi
cmake --build "$build" -j "$(nproc)" --target mft_avx2 > make.txt 2>&1 ||
  { echo "FAIL: the x86-64-v3 twin: $(tail -n 20 make.txt)"; exit 1; }
export OPENBLAS_CORETYPE=Haswell LIBXSMM_TARGET=hsw OMP_WAIT_POLICY=passive
avx2="$build/mft_avx2"

# bench names the path in its first line (a tiny custom size)
"$avx2" bench --bench.sizes custom --model.L 1 --model.H 1 --data.M 1 --data.N 8 --model.d 4 --model.k 2 > path.txt 2>&1
grep -q "exp own AVX2" path.txt && grep -q "kernels Haswell" path.txt && grep -q "target hsw" path.txt && ok ||
  bad "the AVX2 build does not say it ran the AVX2 path: $(head -n 1 path.txt)"

# Normwise relative difference of every dataset of two run files, at most TOL.
close() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import sys, h5py, numpy as np
a, b, tol = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), float(sys.argv[3])
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and o.dtype.kind == "f" else None)
worst, where = 0.0, ""
for n in names:
    x, y = np.asarray(a[n], dtype=float), np.asarray(b[n], dtype=float)
    if x.size == 0: continue
    e = np.max(np.abs(x - y)) / max(np.max(np.abs(x)), 1e-300)
    if e > worst: worst, where = e, n
print(f"{len(names)} datasets, largest difference {worst:.3g} in {where}")
sys.exit(0 if len(names) > 0 and worst <= tol else 1)
PY
}
# same WHAT ARGS...: the native build on one rank and the AVX2 build on two,
# the same command, their run files within 1e-13.
same() {
  local what="$1"
  shift
  "$native" "$@" --output.file native.h5 > native.txt 2>&1 &&
    mpiexec --oversubscribe -n 2 "$avx2" "$@" --output.file avx2.h5 > avx2.txt 2>&1 ||
    { bad "$what: $(tail -n 1 native.txt avx2.txt)"; return; }
  close native.h5 avx2.h5 1e-13 > diff.txt && ok || bad "$what: $(cat diff.txt)"
  echo "$what: $(cat diff.txt)"
}
for c in quickstart qkv_token_causal qkvo_pooled qkvo_token_causal sphere_clustering digits; do
  same "forward $c" forward --config "$top/input/$c.cfg" --gradient
done
same "ntk ntk_gaussian" ntk --config "$top/input/ntk_gaussian.cfg"
same "forward diffusive (256 samples)" forward --config "$top/input/diffusive.cfg" --init.samples 256
same "limit diffusive (256 paths)" limit --config "$top/input/diffusive.cfg" --limit.paths 256
same "limit quickstart (256 heads)" limit --config "$top/input/quickstart.cfg" --limit.heads 256
for c in quickstart qkvo_token_causal; do
  same "train $c" train --config "$top/input/$c.cfg" --train.steps 10
done
finish
