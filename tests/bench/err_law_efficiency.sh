#!/usr/bin/env bash
# err_law's efficiency on the depth study's design (input/study_diffusive_depth.cfg:
# 40000 samples a cell against 40000 limit paths at 32 and 64 steps, 2 ranks),
# at L = 16 and 32: one study of those two cells for each design of the
# limit's paths (heads a step K, the Richardson pair's coupling), each run
# `runs` times and timed at its best. A cell's cost is the study's seconds
# less the other cell's own: the limit's paths are charged whole to each.
# The efficiency is 1 / (floor^2 x seconds), floor = err_law_floor (both
# sides' sampling error of the Gram difference, relative: what the interval's
# width scales with, and unlike it not clipped at zero). Printed per design
# and L: seconds, floor, err_law's interval, and the efficiency against the
# first design. With BASELINE (an older mft, which writes no floor) its
# design, K = 16 drawn independently, comes first, its floor taken from this
# mft's run of the same design (the same estimator on the same law).
#   bash tests/bench/err_law_efficiency.sh [MFT] [BASELINE] [runs]
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MFT="${1:-$top/build/mft}"
BASELINE="${2:-}"
runs="${3:-2}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1) ($(nproc) cores$(grep -qw avx512f /proc/cpuinfo && echo ', AVX-512' || echo ', no AVX-512'))"
designs=("K16 independent|--limit.step_heads 16 --limit.coupling independent"
         "K4 independent|--limit.step_heads 4 --limit.coupling independent"
         "K4 halves|--limit.step_heads 4 --limit.coupling halves"
         "K2 halves (default)|--limit.step_heads 2 --limit.coupling halves")
[ -n "$BASELINE" ] && designs=("baseline K16 independent|--limit.step_heads 16" "${designs[@]}")
# The baseline reads the design's config without the options it may predate.
grep -v '^coupling' "$top/input/study_diffusive_depth.cfg" >"$work/baseline.cfg"
i=0
for design in "${designs[@]}"; do
  name="${design%%|*}"
  read -r -a opts <<<"${design#*|}"
  bin="$MFT" cfg="$top/input/study_diffusive_depth.cfg"
  [[ "$name" == baseline* ]] && bin="$BASELINE" cfg="$work/baseline.cfg"
  for r in $(seq "$runs"); do
    dir="$work/d$i-r$r"
    mpiexec --oversubscribe -n 2 "$bin" study --config "$cfg" --study.L "16 32" \
      "${opts[@]}" --study.dir "$dir" >"$dir.txt" 2>&1 || { echo "$name failed: $(tail -2 "$dir.txt")"; exit 1; }
  done
  echo "$name" >"$work/d$i.name"
  i=$((i + 1))
done
/usr/bin/python3 - "$work" "$i" "$runs" <<'PY'
import csv, json, re, sys
work, designs, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def run(i, r):
    rows = {int(x['L']): x for x in csv.DictReader(open(f'{work}/d{i}-r{r}/law.csv'))}
    total = json.loads(re.search(r'mft-summary (.*)', open(f'{work}/d{i}-r{r}.txt').read()).group(1))['seconds']
    return rows, total
table = []
for i in range(designs):
    name = open(f'{work}/d{i}.name').read().strip()
    best = min((run(i, r) for r in range(1, runs + 1)), key=lambda x: x[1])
    rows, total = best
    for L in (16, 32):
        other = sum(float(rows[M]['seconds']) for M in rows if M != L)
        table.append((name, L, total - other, rows[L]))
floors = {L: float(row['err_law_floor']) for name, L, _, row in table if name == 'K16 independent'}
print(f'{"design":26s} {"L":>3s} {"seconds":>8s} {"floor":>8s}  {"err_law [95%]":28s} {"efficiency":>10s}')
first = {}
for name, L, sec, row in table:
    floor = float(row['err_law_floor']) if 'err_law_floor' in row else floors[L]
    eff = 1 / (floor * floor * sec)
    first.setdefault(L, eff)
    interval = f'{float(row["err_law"]):.4f} [{float(row["err_law_lo"]):.4f}, {float(row["err_law_hi"]):.4f}]'
    print(f'{name:26s} {L:3d} {sec:8.1f} {floor:8.5f}  {interval:28s} {eff / first[L]:9.2f}x')
PY
