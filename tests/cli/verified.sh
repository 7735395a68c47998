#!/usr/bin/env bash
# Files verified on every read: a run file with bytes changed inside
# /params/V is refused in one line, exit 2, by every command that reads it
# (params.file, data.file, worst.references, worst.start), before any work;
# NaN and Inf in a file another program wrote (no checksum) are refused with
# the dataset and the entry, in each of tokens, targets, readout, weights and
# heads; a forward pass whose risk is not finite does not end in exit 0.
source "$(dirname "$0")/lib.sh" "$1"
model=(--model.L 4 --model.H 3 --model.d 4 --data.M 3 --data.N 5)
expect 0 "" -- "$MFT" forward "${model[@]}" --init.v_mean 0.5 --output.file run.h5
expect 0 "" -- "$MFT" forward "${model[@]}" --init.v_mean 0.5 --model.L 8 --init.seed 7 --output.file ref.h5
expect 0 "" -- "$MFT" worst --params.file run.h5 --worst.references ref.h5 --worst.starts 1 --worst.steps 2 \
  --output.file w.h5
cp run.h5 damaged.h5
offset=$(h5dump -p -H -d /params/V damaged.h5 | sed -n 's/.*OFFSET \([0-9]*\).*/\1/p')
printf '\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a' | dd of=damaged.h5 bs=1 seek=$((offset + 8)) conv=notrunc status=none
cp w.h5 damaged_w.h5
offset=$(h5dump -p -H -d /worst/tokens damaged_w.h5 | sed -n 's/.*OFFSET \([0-9]*\).*/\1/p')
printf '\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a' | dd of=damaged_w.h5 bs=1 seek=$((offset + 8)) conv=notrunc status=none
damaged="damaged.h5 is damaged: its checksum"
expect 2 "$damaged .*\(params.file\)" -- "$MFT" forward --params.file damaged.h5
expect 2 "$damaged .*\(params.file\)" -- mpiexec --oversubscribe -n 2 "$MFT" train --params.file damaged.h5 --train.steps 2
expect 2 "$damaged .*\(params.file\)" -- "$MFT" ntk --params.file damaged.h5
expect 2 "$damaged .*\(params.file\)" -- "$MFT" worst --params.file damaged.h5 --worst.references ref.h5
expect 2 "$damaged .*\(worst.references\)" -- "$MFT" worst --params.file run.h5 --worst.references damaged.h5
expect 2 "$damaged .*\(data.file\)" -- "$MFT" forward "${model[@]}" --data.file damaged.h5
expect 2 "damaged_w.h5 is damaged: its checksum .*\(worst.start\)" -- "$MFT" worst --params.file run.h5 \
  --worst.references ref.h5 --worst.start damaged_w.h5
[ ! -e out.h5 ] && ok || bad "a refused run wrote a file"

# NaN and Inf in files without a checksum (h5py's), each where the model reads it.
/usr/bin/python3 - <<'PY'
import h5py, numpy as np
rng = np.random.default_rng(3)
def data(name, pooled=False, bad=None, weights=False):
    with h5py.File(name, "w") as f:
        x = rng.normal(size=(2, 4, 3))
        y = rng.normal(size=(2, 2)) if pooled else rng.normal(size=(2, 4, 3))
        W = rng.normal(size=(2, 3))
        arrays = {"/data/tokens": x, "/data/targets": y}
        if pooled: arrays["/data/readout"] = W
        if weights: arrays["/data/weights"] = np.full((2, 4), 0.25)
        if bad: arrays[bad[0]][bad[1]] = bad[2]
        for k, v in arrays.items(): f[k] = v
data("nan_tokens.h5", bad=("/data/tokens", (1, 2, 0), np.nan))
data("inf_targets.h5", bad=("/data/targets", (0, 3, 2), np.inf))
data("nan_readout.h5", pooled=True, bad=("/data/readout", (1, 1), np.nan))
data("nan_weights.h5", weights=True, bad=("/data/weights", (1, 3), np.nan))
with h5py.File("run.h5") as r, h5py.File("nan_params.h5", "w") as f:
    for b in "QKV":
        v = r["/params/" + b][()]
        if b == "V": v[2, 1, 0, 3] = np.nan
        f["/params/" + b] = v
PY
expect 2 "nan_tokens.h5: /data/tokens holds NaN or Inf at \[1, 2, 0\]" -- "$MFT" forward --data.file nan_tokens.h5
expect 2 "inf_targets.h5: /data/targets holds NaN or Inf at \[0, 3, 2\]" -- mpiexec --oversubscribe -n 2 "$MFT" train \
  --data.file inf_targets.h5 --train.steps 2
expect 2 "nan_readout.h5: /data/readout holds NaN or Inf at \[1, 1\]" -- "$MFT" forward --data.file nan_readout.h5 \
  --loss.kind pooled
expect 2 "nan_weights.h5: /data/weights holds NaN or Inf at \[1, 3\]" -- "$MFT" forward --data.file nan_weights.h5
expect 2 "nan_params.h5: /params/V holds NaN or Inf at \[2, 1, 0, 3\]" -- mpiexec --oversubscribe -n 3 "$MFT" forward \
  --params.file nan_params.h5 --data.M 3 --data.N 5
expect 2 "nan_params.h5: /params/V holds NaN or Inf" -- "$MFT" ntk --params.file nan_params.h5 --data.M 3 --data.N 5

# Finite inputs whose forward pass overflows: exit 3, not a NaN risk and exit 0.
expect 3 "risk is not finite" -- "$MFT" forward --model.L 2 --init.v_mean 1e300 --init.v_gain 0 --output.file big.h5
finish
