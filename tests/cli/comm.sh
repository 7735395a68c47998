#!/usr/bin/env bash
# What crosses the network in a training step (tests/bench/comm_counts.sh):
# - 8 ranks, whole sequences per rank, one head group: the messages a rank
#   sends per step do not grow with the layers (L = 4 and L = 16);
# - on 8 ranks the measured messages and bytes are the cost model's within 10%,
#   for the S2-like and the long-context shapes, and for the long sequence cut
#   across token groups, shared as tokens and as projections, and as tokens
#   over nodes of 4 ranks.
set -euo pipefail
mft="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
counts="$here/../bench/comm_counts.sh"
row() { awk -v s="$1" '$1 == s { print $5 }' "$2"; }

SHAPES=whole EXTRA="--model.L 4" bash "$counts" --check 0.1 "$mft" 8 | tee /dev/stderr > "${TMPDIR:-/tmp}/mft_comm_L4.$$"
SHAPES=whole EXTRA="--model.L 16" bash "$counts" --check 0.1 "$mft" 8 | tee /dev/stderr > "${TMPDIR:-/tmp}/mft_comm_L16.$$"
m4="$(row whole "${TMPDIR:-/tmp}/mft_comm_L4.$$")"
m16="$(row whole "${TMPDIR:-/tmp}/mft_comm_L16.$$")"
rm -f "${TMPDIR:-/tmp}/mft_comm_L4.$$" "${TMPDIR:-/tmp}/mft_comm_L16.$$"
echo "messages per rank and step on 8 ranks: L = 4: $m4, L = 16: $m16"
python3 -c "import sys; a, b = float('$m4'), float('$m16'); sys.exit(0 if b <= a and a > 0 else 'messages per step grow with L: %g at L = 4, %g at L = 16' % (a, b))"

SHAPES="s2 long" bash "$counts" --check 0.1 "$mft" 8
# The long sequence cut across 4 token groups, shared in each form.
for form in tokens projections; do
  SHAPES=long EXTRA="--parallel.head_groups 2 --parallel.cut_sequences $form" bash "$counts" --check 0.1 "$mft" 8 |
    tee /dev/stderr | grep -q " $form " || { echo "comm: the cut sequence was not shared as $form"; exit 1; }
done
# Nodes of 4 ranks (two token groups of two): the rows from the other node
# come in node shares and are gathered over the node (NodeSharing); counted
# by the model likewise.
SHAPES=long EXTRA="--parallel.head_groups 2 --parallel.cut_sequences tokens --parallel.node_ranks 4" \
  bash "$counts" --check 0.1 "$mft" 8
echo "comm: passed"
