#!/usr/bin/env bash
# The limit's Richardson pair, coupled or not (limit.coupling): for n = 4, 16
# and 64 steps (the fine paths at 2n), `mft limit` on the depth study in
# law's design (input/study_diffusive_depth.cfg: beta = 1, d = 4, k = 2, N = 8,
# 16 heads a step) with the same paths under each coupling. Prints, per n and
# coupling, the variance of the extrapolated Gram means (the mean over entries
# of gram_stderr^2) against the independent pair's, the cost in head
# evaluations a path (3nK, or 4nK merged), the variance ratio at equal cost,
# and for merged the shift of the coarse mean (E_{n,2K} - E_{n,K}, estimated
# path by path against the halves run's coarse paths, whose fine paths are
# the same) against the extrapolation's own standard error.
#   bash tests/bench/coupling.sh [MFT] [paths] [ranks]
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MFT="${1:-$top/build/mft}"
P="${2:-8000}"
ranks="${3:-2}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1) ($(nproc) cores$(grep -qw avx512f /proc/cpuinfo && echo ', AVX-512' || echo ', no AVX-512'))"
model=(--config "$top/input/study_diffusive_depth.cfg" --limit.step_heads 16 --data.M 2 --limit.paths "$P" --init.seed 11)
for n in 4 16 64; do
  for c in independent halves merged; do
    mpiexec --oversubscribe -n "$ranks" "$MFT" limit "${model[@]}" --limit.steps "$n" --limit.coupling "$c" \
      --output.file "$work/$c-$n.h5" | sed -n 's/.*"seconds": \([0-9.e+-]*\).*/\1/p' > "$work/$c-$n.seconds"
  done
done
/usr/bin/python3 - "$work" "$P" <<'PY'
import sys
import h5py
import numpy as np
work, P = sys.argv[1], int(sys.argv[2])
K = 16
print(f"{P} paths; variance = mean over Gram entries of gram_stderr^2; cost = head evaluations a path")
print("   n  coupling      variance   ratio  cost  ratio at equal cost  seconds  merged's shift / s.e.")
for n in (4, 16, 64):
    base = None
    for c in ("independent", "halves", "merged"):
        f = h5py.File(f"{work}/{c}-{n}.h5", "r")
        var = float(np.mean(f["/limit/gram_stderr"][()] ** 2))
        cost = (2 * n + (2 * n if c == "merged" else n)) * K
        base = base or (var, cost)
        ratio = base[0] / var
        seconds = float(open(f"{work}/{c}-{n}.seconds").read() or "nan")
        shift = ""
        if c == "merged":  # E_{n,2K} - E_{n,K}: the coarse paths of both coupled runs share their fine paths
            g = lambda x: np.einsum("smic,smjc->smij", x, x)
            h = h5py.File(f"{work}/halves-{n}.h5", "r")
            d = g(f["/limit/samples_coarse"][()]) - g(h["/limit/samples_coarse"][()])
            mean, se = d.mean(axis=0), d.std(axis=0, ddof=1) / np.sqrt(len(d))
            rel = np.linalg.norm(mean) / np.linalg.norm(f["/limit/gram_mean"][()])
            z = np.max(np.abs(mean) / se)
            shift = f"{rel:.2e} relative (largest |z| {z:.1f}; extrapolation s.e. {np.sqrt(var):.2e})"
        print(f"{n:4d}  {c:12s} {var:10.3e} {ratio:7.2f} {cost:5d} {ratio * base[1] / cost:20.2f} {seconds:8.2f}  {shift}")
PY
