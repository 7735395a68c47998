#!/usr/bin/env bash
# Installs the Debian 12 packages MFT needs, only those missing (apt-get, as
# root or through sudo). Nothing to do, and no apt-get, when all are there:
# on a contributor's machine that has them this is a no-op. The two README
# commands run it (through jobs/setup.sh) so that a fresh machine needs
# nothing else; run it alone to see what would be installed first.
set -euo pipefail
packages=(g++ make cmake pkg-config petsc-dev libhdf5-openmpi-dev libopenmpi-dev openmpi-bin
          libboost-program-options-dev libgtest-dev hdf5-tools libopenblas0-pthread
          libsleef-dev libxsmm-dev python3-matplotlib python3-h5py python3-pil)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then exit 0; fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
echo "mft install: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
