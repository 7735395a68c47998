#!/usr/bin/env bash
# MFT against its PyTorch peer on the standard sizes, in one run, on the same
# number of threads (MFT: one rank per core, one BLAS thread each; torch: as
# many threads), the same data and heads (checked: outputs and gradients agree
# to 1e-10). Prints a table and the ratio torch time / MFT time per size.
# The peer runs six ways and counts at its fastest: one process on all the
# threads as it comes, with OMP_WAIT_POLICY=passive, with
# OPENBLAS_NUM_THREADS=1, and with both (torch's spinning OpenMP threads and
# OpenBLAS's own threads share the cores); and as data-parallel streams, one
# single-threaded process per core on its share of the sequences with the
# gradients summed every step (as DDP on one node), as it comes and with
# OPENBLAS_NUM_THREADS=1. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE of the
# caller's are unset: both sides run the kernels OpenBLAS or mft picks.
# With --avx2 both sides run their AVX2 code on any x86-64-v3 CPU: MFT the
# x86-64-v3 build (build/avx2/mft, which ctest's arch_avx2 makes) with
# LIBXSMM's hsw target, PyTorch with ATEN_CPU_CAPABILITY=avx2, and both
# OpenBLAS's Haswell kernels.
# MFT_BENCH_ARGS adds options to every mft bench (e.g. "--model.mlp_width 64
# --model.mlp_activation gelu": MLP sublayers, which the peer then runs too).
#   bash tests/bench/compare.sh [--avx2] [MFT] [sizes]   (needs python3-torch, python3-h5py, libtcmalloc-minimal4)
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
mode="" default="$top/build/mft"
if [ "${1:-}" = --avx2 ]; then
  shift
  mode=", AVX2 mode" default="$top/build/avx2/mft"
  export OPENBLAS_CORETYPE=Haswell LIBXSMM_TARGET=hsw ATEN_CPU_CAPABILITY=avx2
fi
MFT="${1:-$default}"
sizes="${2:-S1 S2 S3}"
threads="$(nproc)"
[ -x "$MFT" ] || { echo "compare.sh: no mft at $MFT (--avx2: run ctest -R arch_avx2 first)" >&2; exit 2; }
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tcmalloc=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null || true)
# The BLAS kernels mft chooses for itself (OpenBLAS's Haswell kernels where it
# would fall back to Prescott on an unknown AVX2 CPU): the peer gets the same.
blas=$("$MFT" bench --bench.sizes none 2>/dev/null | sed -n 's/.*BLAS .*, kernels \([A-Za-z0-9]*\).*/\1/p' || true)
[ -n "$blas" ] && [ -z "${OPENBLAS_CORETYPE:-}" ] && export OPENBLAS_CORETYPE="$blas"
field() { sed -nE "s/.*\"$1\": \"?([^,\"}]*)\"?.*/\1/p"; }
peer_settings="" peer_best=""
echo "| size | MFT step (s) | MFT GFLOP/s | % of matmul peak | torch step (s) | torch / MFT | same computation |"
echo "|---|---|---|---|---|---|---|"
for size in $sizes; do
  # shellcheck disable=SC2086 # MFT_BENCH_ARGS is a list of options
  m=$(mpiexec --oversubscribe -n "$threads" "$MFT" bench --bench.sizes "$size" ${MFT_BENCH_ARGS:-} --bench.write "$work" |
    grep '^mft-summary')
  t="" ts=""
  for way in "|" "OMP_WAIT_POLICY=passive|" "OPENBLAS_NUM_THREADS=1|" "OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1|" \
    "|streams" "OPENBLAS_NUM_THREADS=1|streams"; do
    setting="${way%|*}"
    args="--threads $threads" name="${setting:-as it comes}"
    if [ "${way#*|}" = streams ]; then args="--streams $threads --threads 1" name="$threads streams, $name"; fi
    # (env -u: a setting of the caller's does not stand in for "as it comes")
    r=$(env -u OMP_WAIT_POLICY -u OPENBLAS_NUM_THREADS $setting LD_PRELOAD="$tcmalloc" /usr/bin/python3 \
      "$top/tests/bench/torch_peer.py" "$work/bench_$size.h5" $args | grep '^torch-summary')
    rs=$(field step_seconds <<<"$r")
    if [ -z "$ts" ] || awk -v a="$rs" -v b="$ts" 'BEGIN { exit !(a < b) }'; then t="$r" ts="$rs" best="$name"; fi
    peer_settings="$peer_settings $size: $name $rs s;"
  done
  peer_best="$peer_best $size: $best;"
  ms=$(field step_seconds <<<"$m")
  printf '| %s | %.4g | %.1f | %.0f | %.4g | %.2f | %s |\n' "$size" "$ms" "$(field gflops <<<"$m")" \
    "$(awk -v f="$(field fraction_of_peak <<<"$m")" 'BEGIN { print 100 * f }')" "$ts" \
    "$(awk -v a="$ts" -v b="$ms" 'BEGIN { print a / b }')" "$(field same_computation <<<"$t")"
done
echo
echo "the peer's fastest setting per size:$peer_best"
echo "the peer's steps:$peer_settings"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p')$mode, $(date -u +%F), $threads cores, dgemm peak $(field peak_gflops <<<"$m") GFLOP/s on all of them (measured by mft bench); OpenBLAS kernels: ${OPENBLAS_CORETYPE:-as detected}"
