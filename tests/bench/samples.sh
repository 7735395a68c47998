#!/usr/bin/env bash
# Samples of a model's law a second: `mft forward --init.samples` on 2 ranks
# against its batched PyTorch peer (tests/bench/samples_peer.py) at its best
# on the 2 cores (one process of 2 threads, or 2 processes of one thread;
# tcmalloc as its allocator where installed), in one run, at L x H = 64 x 16, N = 8, d = 4 (k = 2, qkv, one
# probe sequence, a = c = 1/2). Prints each side's samples a second (the best
# of `repeats` runs of each) and the ratio MFT / torch.
#   bash tests/bench/samples.sh [MFT] [samples] [repeats]
# (needs python3-torch, python3-h5py; libtcmalloc-minimal4 for the peer's best)
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MFT="${1:-$top/build/mft}"
S="${2:-4096}"
repeats="${3:-3}"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE # the BLAS at its full speed on both sides
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
model=(--model.L 64 --model.H 16 --data.N 8 --model.d 4 --model.k 2 --data.M 1
       --model.depth_exponent 0.5 --model.head_exponent 0.5)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1) ($(nproc) cores$(grep -qw avx512f /proc/cpuinfo && echo ', AVX-512' || echo ', no AVX-512'))"
"$MFT" forward "${model[@]}" --output.file "$work/one.h5" > /dev/null
mft_best=0
for r in $(seq "$repeats"); do
  rate=$(mpiexec --oversubscribe -n 2 "$MFT" forward "${model[@]}" --init.samples "$S" --output.file "$work/s.h5" |
         sed -n 's/.*"samples_per_second": \([0-9.e+-]*\).*/\1/p')
  echo "mft   2 ranks, $S samples: $rate samples/s"
  mft_best=$(python3 -c "print(max($mft_best, $rate))")
done
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
[ -f "$tcmalloc" ] || tcmalloc=
torch_best=0
for r in $(seq "$repeats"); do
  for mode in "--threads 2 --streams 1" "OMP_WAIT_POLICY=passive --threads 2 --streams 1" \
              "OPENBLAS_NUM_THREADS=1 --threads 1 --streams 2"; do
    envs=(); args=()
    for w in $mode; do case "$w" in *=*) envs+=("$w");; *) args+=("$w");; esac; done
    out=$(env LD_PRELOAD=$tcmalloc "${envs[@]}" /usr/bin/python3 "$top/tests/bench/samples_peer.py" "$work/one.h5" \
          --samples "$S" "${args[@]}")
    echo "$out" | sed "s/^/[${envs[*]}] /"
    rate=$(echo "$out" | sed -n 's/^samples-peer .*"samples_per_second": \([0-9.e+-]*\).*/\1/p')
    torch_best=$(python3 -c "print(max($torch_best, $rate))")
  done
done
python3 -c "print(f'best: mft {$mft_best:.1f} samples/s, torch {$torch_best:.1f} samples/s, mft / torch {$mft_best / $torch_best:.2f}')"
