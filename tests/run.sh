#!/usr/bin/env bash
# The README's test command: set up, build, and run the whole test suite.
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$top/jobs/setup.sh"
cd "$top/build"
ctest --output-on-failure "$@"
