#!/usr/bin/env bash
# The AVX2 path on any x86-64-v3 CPU: a second build with -DMFT_ARCH=x86-64-v3
# (in BUILD/avx2), run with OpenBLAS's Haswell kernels and LIBXSMM's hsw
# target, so that an AVX-512 machine runs the AVX2 code. It must pass the
# unit and gradient tests (but the diffusive regime's statistical ones,
# Diffusive.*, whose kernels the others run), say which path it ran, and give the native build's
# results within 1e-13 (normwise, each dataset): forward passes with their
# gradients on four shipped inputs, and 10 training steps on two.
# Usage: avx2.sh SOURCE_DIR NATIVE_MFT BUILD_DIR
set -u
top="$1"
native="$2"
build="$3/avx2"
source "$top/tests/cli/lib.sh" "$native"
if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
  echo "this CPU has no AVX2 and FMA: skipped"
  exit 77
fi
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMFT_ARCH=x86-64-v3 > cmake.txt 2>&1 &&
  cmake --build "$build" -j "$(nproc)" --target mft mft_tests > make.txt 2>&1 ||
  { echo "FAIL: the x86-64-v3 build: $(tail -n 20 cmake.txt make.txt)"; exit 1; }
export OPENBLAS_CORETYPE=Haswell LIBXSMM_TARGET=hsw OMP_WAIT_POLICY=passive
avx2="$build/mft"

mpiexec --oversubscribe -n 2 "$build/tests/mft_tests" --gtest_filter='-*Weights*:Measure*:Fluctuation*:Diffusive.*' > unit.txt 2>&1 &&
  grep -q "PASSED" unit.txt && ok || { bad "the unit tests on the AVX2 build"; tail -n 40 unit.txt; }

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
for c in quickstart qkv_token_causal qkvo_pooled qkvo_token_causal; do
  "$native" forward --config "$top/input/$c.cfg" --gradient --output.file native.h5 > native.txt 2>&1 &&
    mpiexec --oversubscribe -n 2 "$avx2" forward --config "$top/input/$c.cfg" --gradient --output.file avx2.h5 > avx2.txt 2>&1 ||
    { bad "forward on $c: $(tail -n 1 native.txt avx2.txt)"; continue; }
  close native.h5 avx2.h5 1e-13 > diff.txt && ok || bad "forward $c: $(cat diff.txt)"
  echo "forward $c: $(cat diff.txt)"
done
for c in quickstart qkvo_token_causal; do
  "$native" train --config "$top/input/$c.cfg" --train.steps 10 --output.file native.h5 > native.txt 2>&1 &&
    mpiexec --oversubscribe -n 2 "$avx2" train --config "$top/input/$c.cfg" --train.steps 10 --output.file avx2.h5 > avx2.txt 2>&1 ||
    { bad "train on $c: $(tail -n 1 native.txt avx2.txt)"; continue; }
  close native.h5 avx2.h5 1e-13 > diff.txt && ok || bad "train $c: $(cat diff.txt)"
  echo "train $c: $(cat diff.txt)"
done
finish
