#!/usr/bin/env bash
# The supremum against the number of tokens N and of atoms K: mft worst on
# one model (a run file) against its references, sequences of N = 1, 2, 4,
# ... tokens, each started from the N before (--worst.start), then measures
# of K = 1, 2, 4, ... weighted atoms, each started from the K before, or
# from the largest N's input where that fits (K >= N) and its figure is
# larger: no figure falls along either chain, and no measure's falls below
# a sequence's it can hold.
# Prints one table row per search: the raw figure (against the search
# references), the cross-fitted one, the collapsed (one-token) figure and
# the seconds. Options after the references go to every mft worst (the
# radius, the budget).
#
#   bash jobs/worst_sweep.sh MODEL.h5 "REF1.h5 REF2.h5 ..." NMAX KMAX [mft worst options]
#   e.g. bash jobs/worst_sweep.sh model.h5 "r1.h5 r2.h5 r3.h5 r4.h5" 64 64 --worst.radius 1.5
#
# Environment: MFT (default build/mft), MFT_RANKS (default: all cores),
# MFT_SWEEP_DIR (the result files, default worst_sweep).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 MODEL.h5 \"REFS\" NMAX KMAX [mft worst options]" >&2; exit 2; }
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="$1" refs="$2" nmax="$3" kmax="$4"
shift 4
mft="${MFT:-$top/build/mft}"
ranks="${MFT_RANKS:-$(nproc)}"
dir="${MFT_SWEEP_DIR:-worst_sweep}"
mkdir -p "$dir"
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
field() { grep '^mft-summary' "$1" | sed 's/^mft-summary //' | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }
row() { # label log
  printf '| %s | %.6g | %.6g | %.6g | %.1f |\n' "$1" "$(field "$2" worst_err_raw)" "$(field "$2" worst_err)" \
    "$(field "$2" collapsed_err)" "$(field "$2" seconds)"
}
search() { # out log options...
  local out="$1" log="$2"
  shift 2
  mpiexec -n "$ranks" "$mft" worst --params.file "$model" --worst.references "$refs" "$@" --output.file "$out" >"$log" 2>&1 ||
    { echo "mft worst failed ($log):" >&2; tail -3 "$log" >&2; exit 1; }
}
echo "| input | raw (search references) | cross-fitted | collapsed | seconds |"
echo "|---|---|---|---|---|"
start=() last=""
for ((n = 1; n <= nmax; n *= 2)); do
  search "$dir/N$n.h5" "$dir/N$n.log" --data.N "$n" "${start[@]}" "$@"
  row "N = $n" "$dir/N$n.log"
  start=(--worst.start "$dir/N$n.h5") last=$n
done
start=() best=""
for ((k = 1; k <= kmax; k *= 2)); do
  if [ -n "$last" ] && [ "$k" -ge "$last" ] && { [ -z "$best" ] ||
      /usr/bin/python3 -c "import sys; sys.exit(0 if $(field "$dir/N$last.log" worst_err_raw) > $best else 1)"; }; then
    start=(--worst.start "$dir/N$last.h5")
  fi
  search "$dir/K$k.h5" "$dir/K$k.log" --worst.atoms "$k" "${start[@]}" "$@"
  row "measure, K = $k" "$dir/K$k.log"
  start=(--worst.start "$dir/K$k.h5") best=$(field "$dir/K$k.log" worst_err_raw)
done
