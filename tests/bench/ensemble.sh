#!/usr/bin/env bash
# Ensembles' speed (docs/performance.md, 'Ensembles'), on 2 ranks, figures
# and ratios in one run; run it with nothing else on the machine.
#
#   bash tests/bench/ensemble.sh build/mft [BASE]
#
# 1. The trained study in law of the 4 x 4 model (k = 2 against k = inf, 512
#    seeds and 512 references, 100 gd steps at lr 0.3), its wall time. With
#    BASE, a folder holding an older build's mft, its
#    study_head_dim_trained_diffusive.cfg and head_dim_trained.py (made from
#    commit 54c270b: git show 54c270b:PATH), also the per-case path there:
#    a case a seed, then the script's aggregation; and the ratio.
# 2. Ensemble training of the same model: mft train --train.seeds 512 on 2
#    ranks against the PyTorch peer at its best (tests/bench/ensemble_peer.py:
#    vmap or the batched einsums, 1 or 2 threads), models trained a second.
# Unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (they halve the BLAS's peak
# on these machines; the ensemble's kernels use no BLAS, the peer does).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MFT="$(realpath "$1")"
BASE="${2:-}"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores$(grep -qw avx512f /proc/cpuinfo && echo ', AVX-512')"
wall() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }

study=(study --config "$here/../../input/study_trained_law_k.cfg" --study.k 2 --study.seeds 512 --study.references 512
       --train.lr 0.3 --train.lr_depth_exponent 0 --train.lr_head_exponent 0 --study.dir law)
ours=$(wall mpiexec --oversubscribe -n 2 "$MFT" "${study[@]}")
echo "trained study in law, 512 + 512 seeds of 4 x 4, 100 steps: $ours s (ensembles, aggregated by mft)"
if [ -n "$BASE" ]; then
  base=$(wall bash -c "mpiexec --oversubscribe -n 2 '$BASE/mft' study --config '$BASE/study_head_dim_trained_diffusive.cfg' \
    --study.variants model.k=2 --study.dir cases --study.seeds 512 --study.references 512 --study.only 0-1023 &&
    /usr/bin/python3 '$BASE/head_dim_trained.py' cases --law")
  echo "the per-case path (a case a seed, then the script): $base s; ours is $(echo "scale=2; $base / $ours" | bc)x faster"
fi

model=(--config "$here/../../input/study_trained_law_k.cfg" --model.L 4 --model.H 4 --train.lr 0.3
       --train.lr_depth_exponent 0 --train.lr_head_exponent 0 --checkpoint.every 0 --train.seeds 512)
"$MFT" train "${model[@]}" --train.steps 0 --output.file start.h5 >/dev/null
mpiexec --oversubscribe -n 2 "$MFT" train "${model[@]}" --train.steps 100 --output.file end.h5 >train.txt
mft_rate=$(sed -n 's/.*"models_per_second": \([0-9.e+]*\).*/\1/p' train.txt)
echo "mft train --train.seeds 512 on 2 ranks: $mft_rate models a second (100 steps each)"
if /usr/bin/python3 -c "import functorch" 2>/dev/null; then
  LD_PRELOAD=libtcmalloc_minimal.so.4 /usr/bin/python3 "$here/ensemble_peer.py" start.h5 end.h5 --repeats 2 | tee peer.txt
  peer=$(sed -n 's/.*"models_per_second": \([0-9.e+]*\).*/\1/p' peer.txt)
  echo "mft against PyTorch at its best: $(echo "scale=2; $mft_rate / $peer" | bc)x the models a second"
else
  echo "PyTorch peer: not run (needs Debian's python3-torch)"
fi
