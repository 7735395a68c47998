#!/usr/bin/env bash
# Run files: the docs/model.md names and shapes (read with h5dump, without mft),
# and the same numbers from 1 and 3 ranks (h5diff, relative 1e-12).
source "$(dirname "$0")/lib.sh" "$1"

# shape FILE DATASET "( a, b, ... )"
shape() {
  if h5dump -H -d "$2" "$1" 2>/dev/null | grep -qF "DATASPACE  SIMPLE { $3 /"; then ok
  else bad "$1:$2 is not of shape $3: $(h5dump -H -d "$2" "$1" 2>&1 | grep DATASPACE)"; fi
}
attr() {
  if h5dump -a "/$2" "$1" 2>/dev/null | grep -qF "(0): $3"; then ok
  else bad "$1: attribute $2 is not $3"; fi
}

# qkvo heads, pooled loss: L=2 H=3 k=2 d=4, M=5 N=3 c=2.
sizes=(--model.L 2 --model.H 3 --model.k 2 --model.d 4 --data.M 5 --data.N 3)
expect 0 "" -- "$MFT" forward --gradient "${sizes[@]}" --model.head_kind qkvo --loss.kind pooled --loss.c 2 --output.file f.h5
shape f.h5 /data/tokens "( 5, 3, 4 )"
shape f.h5 /data/targets "( 5, 2 )"
shape f.h5 /data/readout "( 2, 4 )"
for g in params grad; do
  shape f.h5 /$g/Q "( 2, 3, 2, 4 )"
  shape f.h5 /$g/K "( 2, 3, 2, 4 )"
  shape f.h5 /$g/V "( 2, 3, 2, 4 )"
  shape f.h5 /$g/O "( 2, 3, 4, 2 )"
done
shape f.h5 /output/tokens "( 5, 3, 4 )"
attr f.h5 L 2
attr f.h5 H 3
attr f.h5 head_kind '"qkvo"'
attr f.h5 loss '"pooled"'

# qkv heads, token loss, trained 4 steps: V is d x d, one history entry a step.
expect 0 "" -- "$MFT" train "${sizes[@]}" --train.steps 4 --output.file t.h5
shape t.h5 /params/V "( 2, 3, 4, 4 )"
shape t.h5 /data/targets "( 5, 3, 4 )"
shape t.h5 /history/loss "( 4 )"
shape t.h5 /history/max_param_norm "( 4 )"
attr t.h5 step 4
h5dump -H -d /params/O t.h5 >/dev/null 2>&1 && bad "qkv run file has /params/O" || ok

# The same run on 1 and 3 ranks (uneven splits of 15 tokens and 7 heads).
odd=(--model.L 3 --model.H 7 --model.k 2 --model.d 3 --data.M 3 --data.N 5 --train.steps 5 --model.causal true)
expect 0 "" -- "$MFT" train "${odd[@]}" --output.file one.h5
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" train "${odd[@]}" --parallel.head_groups 1 --output.file three.h5
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" train "${odd[@]}" --parallel.head_groups 3 --output.file heads.h5
for other in three.h5 heads.h5; do
  for ds in /output/tokens /params/Q /params/V /grad/K /history/loss; do
    if h5diff --relative=1e-12 one.h5 $other $ds >/dev/null 2>&1; then ok; else bad "$ds differs between one.h5 and $other"; fi
  done
done
finish
