#!/usr/bin/env bash
# Submits a sweep of one setting as a Slurm job array, and an aggregation job
# that waits for all of it and writes a table (a failed case is listed as such,
# the others are still aggregated).
#
#   MFT_CONFIG=input/qkv_token.cfg jobs/sweep.sh train.lr "0.25 0.5 1 2" [sbatch options]
#
# sbatch options after the values apply to every case (not --export: the
# environment of this script is passed on as it is).
# Environment: MFT_CONFIG (required), MFT_ARGS (options for every case),
# MFT_SWEEP_DIR (results, default sweep-<key>-<time>), MFT_HOME (checkout,
# default: here). Prints the two job ids and where the table will be.
set -euo pipefail
key="$1"
values="$2"
shift 2
MFT_HOME="${MFT_HOME:-$PWD}"
: "${MFT_CONFIG:?set MFT_CONFIG to a config file}"
dir="${MFT_SWEEP_DIR:-sweep-$key-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
read -r -a list <<<"$values"
n=${#list[@]}
for i in "${!list[@]}"; do echo "$i ${list[$i]}"; done > "$dir/cases.txt"
echo "$key" > "$dir/key.txt"
array=$(sbatch --parsable --array=0-$((n - 1)) --output="$dir/case-%a.log" \
  --export=ALL,MFT_HOME="$MFT_HOME",MFT_SWEEP_KEY="$key",MFT_SWEEP_VALUES="$values",MFT_SWEEP_DIR="$dir" \
  "$@" "$MFT_HOME/jobs/sweep.sbatch")
array="${array%%;*}"
aggregate=$(sbatch --parsable --dependency=afterany:"$array" --ntasks=1 --time=00:10:00 --job-name=mft-aggregate \
  --output="$dir/aggregate.log" --wrap="bash '$MFT_HOME/jobs/sweep_table.sh' '$dir'")
echo "sweep: array job $array ($n cases), aggregation job $aggregate; table: $dir/table.csv"
