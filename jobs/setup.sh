#!/usr/bin/env bash
# Installs what MFT needs (jobs/install.sh: the missing Debian packages only)
# and builds it in build/ (Release). Used by jobs/quickstart.sh and
# tests/run.sh; MFT_NO_INSTALL=1 skips the install step (a machine set up
# by hand).
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ "${MFT_NO_INSTALL:-0}" = 1 ] || bash "$top/jobs/install.sh"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build" -j "$(nproc)"
