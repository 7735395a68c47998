#!/usr/bin/env bash
# The trained laws of docs/results.md ('Trained laws: the diffusive regime
# after training'): every study that section states, run one after another on
# all cores, each into OUT/<case>, with its wall time and the largest rank's
# peak memory, its law.csv, law_fits.csv and fit lines, all in one log.
#
#   jobs/trained_laws.sh OUT [CASE ...]     (default: every case; about 80
#                                            minutes on 2 cores)
#
# A rerun into the same OUT keeps every trained set that verifies and
# recomputes the comparisons and fits only (a few seconds a case).
# The log: OUT/trained_laws.log.
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1"
shift
MFT="${MFT:-$top/build/mft}"
[ -x "$MFT" ] || bash "$top/jobs/setup.sh"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
in="$top/input"
declare -A cases=(
  [width]="$in/study_trained_law_width.cfg --study.seeds 8192 --study.references 8192"
  [depth]="$in/study_trained_law_depth.cfg --study.seeds 8192 --study.references 8192"
  [k]="$in/study_trained_law_k.cfg --study.seeds 16384 --study.references 16384"
  [depth256]="$in/study_trained_law_depth.cfg --study.L '1 2 4 8 16 64' --study.reference_L 256"
  [width256]="$in/study_trained_law_width.cfg --study.H '1 2 4 8 16 64' --study.reference_H 256"
  [fixed64]="$in/study_trained_law_width.cfg --train.lr 0.1 --train.lr_head_exponent 0 --train.lr_depth_exponent 0"
  [fixed256]="$in/study_trained_law_width.cfg --train.lr 0.1 --train.lr_head_exponent 0 --train.lr_depth_exponent 0 --study.reference_H 256"
  [k_L16]="$in/study_trained_law_k.cfg --study.L 16 --study.reference_L 16 --study.k '1 2 4 8'"
  [k_H16]="$in/study_trained_law_k.cfg --study.H 16 --study.reference_H 16 --study.k '1 2 4 8'"
)
order=(width depth k depth256 width256 fixed64 fixed256 k_L16 k_H16)
[ $# -gt 0 ] && order=("$@")
mkdir -p "$out"
log="$out/trained_laws.log"
{
  echo "# Trained laws: mft study on $(nproc) ranks, $(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p')"
  echo "# $(git -C "$top" log -1 --format='%h %s' 2>/dev/null || echo 'no git')"
} >>"$log"
for c in "${order[@]}"; do
  [ -n "${cases[$c]:-}" ] || { echo "trained_laws.sh: no case '$c' (cases: ${!cases[*]})" >&2; exit 2; }
  eval "args=(${cases[$c]})"
  config="${args[0]}"
  echo "== $c: ${cases[$c]/#$top\//}" >>"$log"
  set +e
  /usr/bin/time -v -o "$out/$c.time" mpiexec --oversubscribe -n "$(nproc)" "$MFT" study --config "$config" \
    "${args[@]:1}" --study.dir "$out/$c" >"$out/$c.out" 2>&1
  rc=$?
  set -e
  echo "   exit $rc $(grep -E 'Elapsed|Maximum resident' "$out/$c.time" | tr -s ' \t' ' ' | tr '\n' ' ')" >>"$log"
  grep -E 'err_law|resolved cells|power law|decided|diverged' "$out/$c.out" >>"$log" || true
  for f in law.csv law_fits.csv; do
    [ -f "$out/$c/$f" ] && { echo "## $c: $f"; cat "$out/$c/$f"; } >>"$log"
  done
done
echo "finished" >>"$log"
