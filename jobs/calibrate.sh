#!/usr/bin/env bash
# Coverage of the convergence studies' 95% intervals (docs/results.md, 'How
# the intervals are made'): synthetic studies of the shipped trained designs
# with known exponents, aggregated by the unchanged statistics, 1000 times at
# each seed count the shipped studies use (4, 8, 16) and at two reference floors.
# Prints the coverage of slope_L, slope_H, a and b; exits 1 if one is outside
# [0.90, 0.98]. About 4 minutes on one core. The quick version is ctest's
# `calibration`.
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -x "$top/build/tests/study_calibration" ] || bash "$top/jobs/setup.sh"
status=0
for seeds in 4 8 16; do
  for floor in 0.5 1.0; do
    "$top/build/tests/study_calibration" --replicates "${REPLICATES:-1000}" --seeds "$seeds" --floor "$floor" || status=1
  done
done
exit $status
