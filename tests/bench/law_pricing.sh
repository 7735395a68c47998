#!/usr/bin/env bash
# How close a study in law's listing prices a run (a benchmark, not a test:
# timings on a shared machine are noisy). The study of cli_law_study's first
# replicate on 2 ranks, then its listing priced from a pilot on 2 ranks and
# from a pilot on 1 rank for 2 (a rank's share, not the run's); prints the
# two ratios and exits 1 when the 2-rank price is beyond a factor 3 of the
# run's time or the 1-rank pilot's beyond a factor 1.5 of the 2-rank one's.
#   bash tests/bench/law_pricing.sh [MFT]          (default: build/mft)
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mft="$(realpath "${1:-$top/build/mft}")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
law=(study --model.depth_exponent 0.5 --model.head_exponent 0.5 --model.beta 0 --model.d 4 --model.k 2
     --data.N 4 --init.v_gain 1 --study.L "2 4 8" --study.H "1 4" --study.samples 4000 --limit.paths 10000
     --limit.steps 16 --study.probe_M 2 --study.dir law)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
mpiexec --oversubscribe -n 2 "$mft" "${law[@]}" > run.txt 2>&1
took=$(sed -n 's/^mft-summary .*"seconds": \([0-9.]*\).*/\1/p' run.txt)
mpiexec --oversubscribe -n 2 "$mft" "${law[@]}" --list > two.txt 2>&1
priced=$(sed -n 's/^time on 2 ranks, priced from a .* pilot on 2: about \([0-9.e+]*\) s .*/\1/p' two.txt)
"$mft" "${law[@]}" --list --study.plan_cores 2 > one.txt 2>&1
one=$(sed -n 's/^time on 2 ranks, priced from a .* pilot on 1: about \([0-9.e+]*\) s .*/\1/p' one.txt)
awk -v r="$took" -v p="${priced:-0}" -v q="${one:-0}" 'BEGIN {
  printf "run %.2f s on 2 ranks; priced %.2f s from a pilot on 2 (ratio %.2f), %.2f s from a pilot on 1 (ratio to the 2-rank price %.2f)\n",
         r, p, p / r, q, q / p
  exit !(p > r / 3 && p < 3 * r && q > p / 1.5 && q < 1.5 * p) }'
