#!/usr/bin/env bash
# Counts what crosses the network in a training step, on P = 1 ... 64 ranks
# (oversubscribed here: counts and correctness, not time), for an S2-like
# shape and a long-context shape scaled down, and prints per P the messages
# and bytes each rank sends per step, measured and predicted by the cost model
# (cost.hpp).
#
# Measured: the program's own messages (its counters: the summary's
# messages_per_rank and bytes_per_rank) plus PETSc's scatters (-log_view's
# VecScatterBegin event: its messages, all ranks, times their average length,
# over P), each as the difference between runs of 1 and 3 steps, halved:
# set-up and file output drop out. (-log_view's global 'MPI Msg Count' is not
# used: PETSc's logging wraps MPI_Isend/MPI_Irecv in any code that includes
# its headers, so it counts the program's own messages in some files and not
# in others.)
#
#   bash tests/bench/comm_counts.sh [--check TOL] [MFT] [P ...]   (default: build/mft; 1 2 4 8 16 32 64)
#   SHAPES="s2 long whole" chooses the shapes (whole: 8 sequences of 16
#   tokens, one head group: whole sequences per rank up to 8 ranks); EXTRA
#   adds options to every run (e.g. EXTRA="--model.L 16").
#   --check TOL: exit 1 when a measured count is off the model's by more than TOL (relative).
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
check=""
if [ "${1:-}" = "--check" ]; then check="$2"; shift 2; fi
mft="$(realpath "${1:-$top/build/mft}")"
shift || true
ranks=("$@")
((${#ranks[@]})) || ranks=(1 2 4 8 16 32 64)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

declare -A shape
shape[s2]="--model.L 8 --model.H 32 --data.M 16 --data.N 32 --model.d 16 --model.k 8"
shape[long]="--model.L 4 --model.H 8 --data.M 1 --data.N 512 --model.d 16 --model.k 8"
shape[whole]="--model.L 4 --model.H 8 --data.M 8 --data.N 16 --parallel.head_groups 1"


printf '%-5s %5s %7s %12s %12s %12s %9s %14s %14s %9s\n' shape P grid "cut seqs" "msgs meas" "msgs model" ratio "bytes meas" "bytes model" ratio
for name in ${SHAPES:-s2 long}; do
  for P in "${ranks[@]}"; do
    for steps in 1 3; do
      # shellcheck disable=SC2086
      mpiexec -n "$P" "$mft" train ${shape[$name]} ${EXTRA:-} --train.steps "$steps" --train.optimizer adamw \
        --checkpoint.every 0 --checkpoint.dir ck --output.file "run$steps.h5" --train.log_every 1000 \
        -log_view > "log$steps.txt" 2>&1 || { echo "run on $P ranks failed:"; tail -5 "log$steps.txt"; exit 1; }
    done
    python3 - "$name" "$P" "$check" <<PY
import sys
name, P, check = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def own(f, key):
    import re
    return float(re.search(r'"%s": ([0-9.e+-]+)' % key, open(f).read()).group(1))
def scatters(f):  # VecScatterBegin: count ratio time ratio flop ratio messages length reductions ...
    m = b = 0.0   # summed over the stages (Main, MftForward, MftAdjoint) that list it
    for line in open(f):
        w = line.split()
        if w and w[0] == "VecScatterBegin":
            m, b = m + float(w[7]) / P, b + float(w[7]) * float(w[8]) / P
    return m, b
m = [own("log%d.txt" % s, "messages_per_rank") + scatters("log%d.txt" % s)[0] for s in (1, 3)]
b = [own("log%d.txt" % s, "bytes_per_rank") + scatters("log%d.txt" % s)[1] for s in (1, 3)]
meas_m, meas_b = (m[1] - m[0]) / 2, (b[1] - b[0]) / 2
pm, pb = own("log3.txt", "predicted_messages_per_step"), own("log3.txt", "predicted_bytes_per_step")
grid = open("log3.txt").read().split('"grid": "')[1].split('"')[0]
cut = open("log3.txt").read().split('"cut_sequences": "')[1].split('"')[0]
r = lambda a, c: "%.3f" % (a / c) if c else ("1.000" if a == 0 else "inf")
print("%-5s %5d %7s %12s %12.1f %12.1f %9s %14.0f %14.0f %9s" % (name, P, grid, cut, meas_m, pm, r(meas_m, pm), meas_b, pb, r(meas_b, pb)))
if check:
    off = lambda a, c: abs(a - c) > float(check) * max(abs(c), 1e-300) if c or a else False
    if off(meas_m, pm) or off(meas_b, pb):
        sys.exit("comm_counts: %s on %d ranks: measured %.1f messages, %.0f bytes; the model %.1f, %.0f" % (name, P, meas_m, meas_b, pm, pb))
PY
  done
done
