#!/usr/bin/env bash
# Seed 1's results as a table: for each input/ntk_<family>.cfg, the NTK's
# V-part at initialisation (mft ntk) and the log-sum-exp test of the same
# token distributions (mft lse: sample-based, and closed form where one
# exists); then the global-convergence run (input/global_convergence.cfg).
#   bash jobs/ntk_table.sh [MFT] > table.md
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MFT="${1:-$top/build/mft}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
field() { grep '^mft-summary ' | tail -n 1 | sed -nE "s/.*\"$1\": \"?([^,\"}]*)\"?.*/\1/p"; }
fmt() { [ -n "$1" ] && printf '%.3g' "$1" || printf 'none'; }
echo "| family | NTK V-part lambda_min | lambda_min / lambda_max | positive definite | lse test (tokens) | lse test (closed form) |"
echo "|---|---|---|---|---|---|"
for cfg in "$top"/input/ntk_*.cfg; do
  family=$(basename "$cfg" .cfg)
  family=${family#ntk_}
  ntk=$("$MFT" ntk --config "$cfg" --output.file ntk.h5)
  sample=$("$MFT" lse --config "$cfg" --output.file lse.h5 | field relative_min)
  closed=""
  [ "$family" != discrete ] && closed=$("$MFT" lse --config "$cfg" --lse.mode closed --output.file lse.h5 | field relative_min)
  echo "| $family | $(fmt "$(field lambda_min <<<"$ntk")") | $(fmt "$(field ratio <<<"$ntk")") | $(field positive_definite <<<"$ntk") | $(fmt "$sample") | $(fmt "$closed") |"
done
run=$("$MFT" train --config "$top/input/global_convergence.cfg" --output.file gc.h5)
echo
echo "Global convergence (\`input/global_convergence.cfg\`, gd, lr 0.2, 200 steps): risk reduced $(fmt "$(field reduction <<<"$run")")x;"
echo "fitted rate of log R in training time $(fmt "$(field fitted_rate <<<"$run")") (rms residual $(fmt "$(field fit_rms <<<"$run")")),"
echo "NTK (full) lambda_min $(fmt "$(field ntk_lambda_min <<<"$run")"): predicted rate 2 lambda_min / M = $(fmt "$(field predicted_rate <<<"$run")"),"
echo "$(fmt "$(field predicted_rate_steps <<<"$run")") for gd steps of 0.2."
