#!/usr/bin/env bash
# Every shipped config parses and runs (3 steps, 2 ranks); the quickstart job
# as the README runs it lowers the risk at least 10x.
source "$(dirname "$0")/lib.sh" "$1"
inputs="$2"
for cfg in "$inputs"/*.cfg; do
  expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" train --config "$cfg" --train.steps 3 --output.file run.h5
  [ -s run.h5 ] && ok || bad "$cfg wrote no run file"
  rm -f run.h5
done
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" train --config "$inputs/quickstart.cfg"
summary=$(grep '^mft-summary ' out.txt)
reduction=$(echo "$summary" | sed -E 's/.*"reduction": ([0-9.e+-]+).*/\1/')
echo "quickstart: $summary"
awk -v r="$reduction" 'BEGIN { exit !(r >= 10) }' && ok || bad "quickstart lowered the risk only ${reduction}x"
[ "$(tail -n 1 out.txt | cut -c1-12)" = "mft-summary " ] && ok || bad "the last line printed is not the summary"
finish
