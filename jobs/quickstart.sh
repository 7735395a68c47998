#!/usr/bin/env bash
# The README's main job: set up, build, and train on input/quickstart.cfg on
# all local cores. Extra arguments go to `mft train` (e.g. --train.steps 50).
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$top/jobs/setup.sh"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
cd "$top"
exec mpiexec --oversubscribe -n "$(nproc)" build/mft train --config input/quickstart.cfg "$@"
