#!/usr/bin/env bash
# Runs a convergence study and draws it.
#
#   jobs/study.sh CONFIG                          every case here (mpiexec on all cores), then the tables and plots
#   jobs/study.sh CONFIG --slurm [sbatch options]  one Slurm array task per case, and an aggregation job
#                                                  after all of them (--dependency=afterany)
#
# Extra mft options for every case: MFT_ARGS (e.g. "--study.dir results/depth").
# Results: study.dir/case-<i>.h5, study.csv, fits.csv, study.h5 and
# study_v<variant>_<quantity>.png; a missing or failed case is named in the
# output (the aggregation log under Slurm) and the others are aggregated.
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
config="$1"
shift
MFT="${MFT:-$top/build/mft}"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# shellcheck disable=SC2086
listing=$("$MFT" study --config "$config" ${MFT_ARGS:-} --list | tail -n 1)
count=${listing%% cases*}
dir=${listing##* in }
plot="/usr/bin/python3 $top/jobs/plot_study.py"

if [ "${1:-}" != --slurm ]; then
  [ -x "$top/build/mft" ] || bash "$top/jobs/setup.sh"
  # shellcheck disable=SC2086
  mpiexec --oversubscribe -n "$(nproc)" "$MFT" study --config "$config" ${MFT_ARGS:-}
  $plot "$dir"
  exit 0
fi
shift
mkdir -p "$dir"
array=$(sbatch --parsable --array=0-$((count - 1)) --output="$dir/case-%a.log" \
  --export=ALL,MFT_HOME="$top",MFT="$MFT",MFT_CONFIG="$config",MFT_ARGS="${MFT_ARGS:-}" "$@" "$top/jobs/study.sbatch")
array="${array%%;*}"
aggregate=$(sbatch --parsable --dependency=afterany:"$array" --ntasks=1 --time=00:30:00 --job-name=mft-study-aggregate \
  --output="$dir/aggregate.log" \
  --wrap="'$MFT' study --config '$config' ${MFT_ARGS:-} --aggregate '$dir' && $plot '$dir'")
echo "study: array job $array ($count cases), aggregation job $aggregate; results in $dir"
