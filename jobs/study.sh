#!/usr/bin/env bash
# Runs a convergence study and draws it.
#
#   jobs/study.sh CONFIG                          every case here (mpiexec on all cores; the cases on groups
#                                                  of ranks sized by their cost), then the tables and plots
#   jobs/study.sh CONFIG --slurm [sbatch options]  Slurm array jobs of cases packed by cost, and an
#                                                  aggregation job after all of them (--dependency=afterany)
#
# Under Slurm the plan on MFT_PLAN_CORES cores (default 64) gives each case
# its ranks (mft study --list --study.plan_cores); the cases of one size are
# packed, largest first, into array tasks of about study.task_seconds
# predicted seconds (default 3600), one array job per size with --ntasks set
# to it. Your sbatch options (--time, --partition, ...) go to every array;
# the task lists are study.dir/tasks-<ranks>.txt, a task's log
# study.dir/task-<ranks>-<i>.log.
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
plot="/usr/bin/python3 $top/jobs/plot_study.py"

if [ "${1:-}" != --slurm ]; then
  [ -x "$MFT" ] || bash "$top/jobs/setup.sh"
  # shellcheck disable=SC2086
  dir=$("$MFT" study --config "$config" ${MFT_ARGS:-} --list | tail -n 1)
  dir=${dir##* in }
  # shellcheck disable=SC2086
  mpiexec --oversubscribe -n "$(nproc)" "$MFT" study --config "$config" ${MFT_ARGS:-}
  $plot "$dir"
  exit 0
fi
shift
# shellcheck disable=SC2086
listing=$("$MFT" study --config "$config" ${MFT_ARGS:-} --list --study.plan_cores "${MFT_PLAN_CORES:-64}")
dir=$(tail -n 1 <<<"$listing")
dir=${dir##* in }
mkdir -p "$dir"
if grep -q '^study in law' <<<"$listing"; then # one job: every cell's samples spread over all its ranks
  job=$(sbatch --parsable "$@" --job-name=mft-study-law --output="$dir/law.log" \
    --wrap="mpiexec '$MFT' study --config '$config' ${MFT_ARGS:-} && $plot '$dir'")
  echo "study in law: job ${job%%;*}; results in $dir"
  exit 0
fi
grep '^plan on' <<<"$listing"
arrays=""
for ranks in $(sed -n 's/^slurm-task ranks=\([0-9]*\) .*/\1/p' <<<"$listing" | sort -un); do
  tasks="$dir/tasks-$ranks.txt"
  sed -n "s/^slurm-task ranks=$ranks seconds=[0-9]* cases=//p" <<<"$listing" | tr ',' ' ' > "$tasks"
  count=$(wc -l < "$tasks")
  # Your options first; the task's size last, so that it wins.
  array=$(sbatch --parsable "$@" --ntasks="$ranks" --array=0-$((count - 1)) --output="$dir/task-$ranks-%a.log" \
    --job-name="mft-study-$ranks" \
    --export=ALL,MFT_HOME="$top",MFT="$MFT",MFT_CONFIG="$config",MFT_ARGS="${MFT_ARGS:-}",MFT_TASKS="$tasks" \
    "$top/jobs/study.sbatch")
  array="${array%%;*}"
  echo "study: array job $array: $count tasks of $ranks rank(s) (cases in $tasks)"
  arrays="$arrays:$array"
done
aggregate=$(sbatch --parsable --dependency=afterany"$arrays" --ntasks=1 --time=00:30:00 --job-name=mft-study-aggregate \
  --output="$dir/aggregate.log" \
  --wrap="'$MFT' study --config '$config' ${MFT_ARGS:-} --aggregate '$dir' && $plot '$dir'")
echo "study: aggregation job $aggregate after array jobs ${arrays#:}; results in $dir"
