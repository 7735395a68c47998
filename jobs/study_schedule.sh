#!/usr/bin/env bash
# The schedules against each other (docs/scaling.md, 'Studies on groups of
# ranks'): every study given runs with study.schedule = serial, then groups,
# back to back in fresh folders under OUT, on all cores, with
# --study.worst false; prints a row per study (the summary lines' seconds)
# and keeps every run's output in OUT/<study>_<schedule>.log.
#
#   jobs/study_schedule.sh OUT CONFIG [CONFIG ...]     (from the checkout)
#
# Run it on an otherwise idle machine: a job beside it slows the groups.
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1"
shift
MFT="${MFT:-$top/build/mft}"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$out"
echo "study schedules on $(nproc) ranks: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
printf '%-28s %10s %10s %16s\n' study "serial (s)" "groups (s)" "groups / serial"
for config in "$@"; do
  name=$(basename "$config" .cfg)
  declare -A took=()
  for schedule in serial groups; do
    dir="$out/${name}_$schedule"
    rm -rf "$dir"
    mpiexec --oversubscribe -n "$(nproc)" "$MFT" study --config "$config" --study.schedule "$schedule" \
      --study.worst false --study.dir "$dir" >"$dir.log" 2>&1 || { echo "$name ($schedule) failed: $dir.log"; exit 1; }
    took[$schedule]=$(sed -n 's/^mft-summary .*"seconds": \([0-9.e+-]*\).*/\1/p' "$dir.log" | tail -n 1)
  done
  awk -v n="$name" -v s="${took[serial]}" -v g="${took[groups]}" 'BEGIN { printf "%-28s %10.1f %10.1f %16.3f\n", n, s, g, g / s }'
  unset took
done
