#!/usr/bin/env bash
# Weighted tokens from files (docs/model.md, 'Token measures'): jobs/make_data.py
# --weights writes /data/weights (counts scaled to masses); mft forward
# --gradient on it equals the file that repeats each token by its count
# (the risk, outputs of the copies, head gradients; 1e-12) on 1 and 3
# ranks, and writes /grad/weights; train, its checkpoint
# and restart keep the weights (bitwise); limit, ntk and lse take them; bad
# weights are refused with one line, exit 2, nothing written.
source "$(dirname "$0")/lib.sh" "$1"
PY=/usr/bin/python3
MAKE="$PY $(dirname "$0")/../../jobs/make_data.py"
small=(--model.L 3 --model.H 4 --model.beta 1.3 --init.v_mean 0.5)

# Three sequences of four atoms with counts (1 2 3 2 ...), and the same
# sequences with each atom repeated by its count (8 tokens a sequence).
$PY - <<'EOF'
import numpy as np
r = np.random.default_rng(3)
counts = np.array([[1, 2, 3, 2], [3, 1, 1, 3], [2, 2, 2, 2]])
atoms, targets = r.normal(size=(3, 4, 3)), r.normal(size=(3, 4, 3))
np.save("atoms.npy", atoms); np.save("targets.npy", targets); np.save("counts.npy", counts.astype(float))
rep = lambda a: np.stack([np.repeat(a[m], counts[m], axis=0) for m in range(3)])
np.save("rep_atoms.npy", rep(atoms)); np.save("rep_targets.npy", rep(targets))
np.save("bad_negative.npy", -counts.astype(float)); np.save("bad_shape.npy", np.ones((3, 5)))
EOF
$MAKE --tokens atoms.npy --targets targets.npy --weights counts.npy --out measure.h5 >/dev/null && ok || bad "make_data --weights"
$MAKE --tokens rep_atoms.npy --targets rep_targets.npy --out repeated.h5 >/dev/null && ok || bad "make_data repeated"
for np in 1 3; do
  mpiexec --oversubscribe -n $np "$MFT" forward --gradient --data.file measure.h5 "${small[@]}" --output.file m$np.h5 >/dev/null 2>err.txt \
    && ok || { bad "forward on weights, $np ranks"; cat err.txt; }
  mpiexec --oversubscribe -n $np "$MFT" forward --gradient --data.file repeated.h5 "${small[@]}" --output.file r$np.h5 >/dev/null \
    && ok || bad "forward on the repeated sequence, $np ranks"
done
$PY - <<'EOF' && ok || bad "the weighted file against the repeated one"
import h5py, numpy as np, sys
counts = np.load("counts.npy").astype(int)
def first(a):
    return np.stack([a[m][np.r_[0, np.cumsum(counts[m])[:-1]]] for m in range(3)])
def rel(a, b): return np.abs(a - b).max() / np.abs(b).max()
for n in (1, 3):
    with h5py.File(f"m{n}.h5") as m, h5py.File(f"r{n}.h5") as r:
        assert np.allclose(m["/data/weights"][()], counts / 8, rtol=0, atol=1e-15), "weights are counts / N"
        risk = lambda f: float(f.attrs["risk"].decode() if isinstance(f.attrs["risk"], bytes) else f.attrs["risk"])
        e = [abs(risk(m) - risk(r)) / risk(r), rel(m["/output/tokens"][()], first(r["/output/tokens"][()]))]
        e += [rel(m[f"/grad/{b}"][()], r[f"/grad/{b}"][()]) for b in "QKV"]
        assert m["/grad/weights"].shape == (3, 4) and np.isfinite(m["/grad/weights"][()]).all()
        if max(e) > 1e-12: sys.exit(f"{n} ranks: {e}")
with h5py.File("m1.h5") as a, h5py.File("m3.h5") as b:
    for name in ("/output/tokens", "/grad/Q", "/grad/weights"):
        if rel(a[name][()], b[name][()]) > 1e-12: sys.exit(f"{name}: 1 against 3 ranks")
EOF
expect 0 "" -- "$MFT" info m1.h5

# Training on a measure: the checkpoint holds the weights, a restart continues bitwise.
run=(mpiexec --oversubscribe -n 2 "$MFT" train --data.file measure.h5 "${small[@]}" --train.lr 0.2 --checkpoint.every 5)
"${run[@]}" --train.steps 10 --output.file straight.h5 --checkpoint.dir ck1 >/dev/null && ok || bad "train on weights"
"${run[@]}" --train.steps 5 --output.file half.h5 --checkpoint.dir ck2 >/dev/null && ok || bad "train 5 steps"
"${run[@]}" --train.steps 10 --output.file resumed.h5 --checkpoint.dir ck2 --restart auto >/dev/null && ok || bad "restart"
h5diff -d 0 straight.h5 resumed.h5 /params >/dev/null && h5diff -d 0 straight.h5 resumed.h5 /data/weights >/dev/null \
  && ok || bad "restart on weights is not the straight run bitwise"
h5dump -d /data/weights ck2/checkpoint-00000005.h5 >/dev/null 2>&1 && ok || bad "the checkpoint has no /data/weights"

# limit, ntk and lse read them (a pooled file for ntk).
mpiexec --oversubscribe -n 2 "$MFT" limit --data.file measure.h5 --limit.heads 64 --output.file lim.h5 >/dev/null \
  && ok || bad "limit on weights"
expect 2 "limit.fluctuation: the error's law of weighted tokens is not derived" -- \
  "$MFT" limit --data.file measure.h5 --limit.heads 64 --limit.fluctuation true --output.file lawm.h5
[ ! -e lawm.h5 ] && ok || bad "a refused law wrote its file"
"$MFT" ntk --data.file measure.h5 "${small[@]}" --output.file ntk.h5 >/dev/null && ok || bad "ntk on weights"
"$MFT" lse --data.file measure.h5 --output.file lse.h5 >/dev/null && ok || bad "lse on weights"

# Bad weights: one line, exit 2, nothing written.
$PY - <<'EOF'
import h5py, numpy as np
with h5py.File("measure.h5") as src:
    t, y, w = src["/data/tokens"][()], src["/data/targets"][()], src["/data/weights"][()]
def bad(name, weights):
    with h5py.File(name, "w") as f:
        f["/data/tokens"], f["/data/targets"], f["/data/weights"] = t, y, weights
bad("sum.h5", w * 1.01)
z = w.copy(); z[1, 2] = 0.0; bad("zero.h5", z)
n = w.copy(); n[0, 0] = np.nan; bad("nan.h5", n)
bad("shape.h5", np.ones((3, 5)) / 5)
bad("uniform.h5", np.full((3, 4), 0.25))
EOF
expect 2 "/data/weights row 0 sums to 1.01" -- "$MFT" forward --data.file sum.h5 --output.file x.h5
expect 2 "weights\\[1, 2\\] = 0\\.?, a weight must be positive" -- "$MFT" forward --data.file zero.h5 --output.file x.h5
expect 2 "nan.h5: /data/weights holds NaN or Inf at \\[0, 0\\]" -- "$MFT" forward --data.file nan.h5 --output.file x.h5
expect 2 "/data/weights has shape \\(3, 5\\), but /data/tokens \\(3, 4, 3\\) needs \\(M, N\\)" -- \
  "$MFT" forward --data.file shape.h5 --output.file x.h5
expect 2 "weights other than 1/N, and model.causal = true orders the tokens" -- \
  "$MFT" forward --data.file measure.h5 --model.causal true --output.file x.h5
[ ! -e x.h5 ] && ok || bad "a refused run wrote its file"
expect 0 "" -- "$MFT" forward --data.file uniform.h5 --model.causal true --output.file u.h5
expect 2 "train.ntk predicts the rate of the unweighted risk" -- "$MFT" train --data.file measure.h5 --train.ntk value
$MAKE --tokens atoms.npy --targets targets.npy --weights bad_negative.npy --out no.h5 2>err.txt
[ $? -eq 2 ] && grep -q "weights must be positive" err.txt && [ ! -e no.h5 ] && ok || bad "make_data took negative weights"
$MAKE --tokens atoms.npy --targets targets.npy --weights bad_shape.npy --out no.h5 2>err.txt
[ $? -eq 2 ] && grep -q "weights have shape (3, 5), expected (M, N) = (3, 4)" err.txt && ok || bad "make_data took a bad shape"
finish
