#!/usr/bin/env bash
# Installs what MFT needs from Debian 12's packages (only what is missing) and
# builds it in build/ (Release). Used by jobs/quickstart.sh and tests/run.sh.
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
packages=(g++ make cmake pkg-config petsc-dev libhdf5-openmpi-dev libopenmpi-dev openmpi-bin
          libboost-program-options-dev libgtest-dev hdf5-tools libopenblas0-pthread
          libsleef-dev libxsmm-dev python3-matplotlib python3-h5py python3-pil)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "mft setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build" -j "$(nproc)"
