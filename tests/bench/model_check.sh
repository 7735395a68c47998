#!/usr/bin/env bash
# The cost model's predicted step time against the measured one (cost.hpp),
# on this machine: S1, S2, S3 in every head kind and mask (qkv, qkvo, causal
# or not), on 1 rank, 2 ranks and 1 rank x 2 threads. `mft bench` takes the
# rank's rate from the forward alone and the network from its own ping-pong,
# predicts the step on the grid it runs, and prints both; this prints one
# markdown table of them, and the largest error.
#   bash tests/bench/model_check.sh [MFT]   (default: build/mft)
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mft="$(realpath "${1:-$top/build/mft}")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
lscpu | grep -m1 "Model name" || true
date -u +"%Y-%m-%d %H:%M UTC"
echo "| head kind | causal | layout | size | predicted s | measured s | error |"
echo "|---|---|---|---|---|---|---|"
worst=0
for kind in qkv qkvo; do
  for causal in false true; do
    for layout in "1x1" "2x1" "1x2"; do
      ranks=${layout%x*} threads=${layout#*x}
      out=$(mpiexec --bind-to none -n "$ranks" "$mft" bench --bench.repeats 5 --model.head_kind "$kind" \
        --model.causal "$causal" --parallel.threads "$threads" 2>&1 | grep "the cost model" || true)
      [ -n "$out" ] || { echo "model_check: mft bench printed no prediction ($kind, causal $causal, $layout)" >&2; exit 1; }
      while read -r size rest; do
        predicted=$(sed -E 's/.*a step of ([0-9.e+-]+) s predicted.*/\1/' <<<"$rest")
        measured=$(sed -E 's/.*predicted, ([0-9.e+-]+) s measured.*/\1/' <<<"$rest")
        error=$(sed -E 's/.*measured \(([-+0-9.]+)%\).*/\1/' <<<"$rest")
        echo "| $kind | $causal | $ranks rank(s) x $threads thread(s) | $size | $predicted | $measured | $error% |"
        worst=$(awk -v a="$worst" -v e="$error" 'BEGIN { e += 0; e = e < 0 ? -e : e; print (e > a + 0 ? e : a) }')
      done <<<"$out"
    done
  done
done
echo "largest error: $worst%"
