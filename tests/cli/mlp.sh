#!/usr/bin/env bash
# MLP sublayers on the command line: x(1) and every gradient of forward
# --gradient against tests/cli/mlp_reference.py (NumPy's forward, a backward
# written out by hand) within 1e-12, causal or not, pre-LN or not, four
# activations, on 1 and 3 ranks; bad inputs refused in one line with exit
# 2 and nothing lost; the run file's /params/mlp read back (params.file) to the
# same output; training moves the neurons and a restart from a checkpoint
# ends where the uninterrupted run does (adamw and adamw-block) and the
# held-out risk on the training data is the trained model's; 1 and 3 ranks
# (three token groups, and three head groups) agree to 1e-12; the Gram mean
# of --init.samples with attention silenced, the identity activation and
# exponents 1/2 equals (1 + s/L)^L G0 + t ((1 + s/L)^L - 1)/s 11^T within 4.5
# standard errors in every entry, s = (w_gain u_gain)^2, t = d (w_gain b_gain)^2,
# and mft limit's diffusive paths e^s G0 + t (e^s - 1)/s 11^T; one relu or erf
# layer's Gram mean G0 + d w_gain^2 K(x_i, x_j) with K the arc-cosine or
# arcsine kernel (written here again); the mean-field ODE's x(1) (the expected
# drift w_mean 1 E[relu(p)]) against NumPy's Runge-Kutta to 1e-9; the
# samples' interaction energy along depth, E_k = (1 + s/L)^k E_0 with
# attention silenced and the identity (the 11^T term cancels in differences),
# within 4.5 standard errors at every depth, and its fitted rate's interval
# holding -L log(1 + s/L); jobs/synchronization.py's rows are mft's own
# figures (a point run again gives its rate and interval) and its map is drawn;
# a trained study's model and a trained study in law's, trained alone, give
# the study's risk and probes (1e-10); study.worst of a trained model with
# identity MLP sublayers on one token reaches the supremum of its affine map's
# difference (1e-6).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jobs="$here/../../jobs"
source "$(dirname "$0")/lib.sh" "$1"
model=(--model.L 4 --model.H 3 --model.d 4 --data.M 3 --data.N 5 --model.mlp_width 6 --init.mlp_b_gain 0.4
       --init.mlp_w_mean 0.2)

expect 0 "" -- "$MFT" forward "${model[@]}" --gradient --output.file run.h5
cp run.h5 kept.h5
"$MFT" info run.h5 | grep -qF "MLP sublayers: m = 6, relu, a' = 1, c' = 1" && ok || bad "mft info does not name the MLP sublayers"
expect 2 "model.mlp_width must be at least 0, got -2" -- "$MFT" forward --model.mlp_width -2 --output.file run.h5
expect 2 "model.mlp_activation 'swish' is not one of identity\|relu\|gelu\|tanh\|erf" -- "$MFT" forward \
  --model.mlp_width 4 --model.mlp_activation swish --output.file run.h5
expect 2 "model.mlp_depth_exponent 'nan' is not a finite number" -- "$MFT" forward --model.mlp_width 4 \
  --model.mlp_depth_exponent nan --output.file run.h5
expect 2 "model.mlp_width_exponent 'nan' is not a finite number" -- "$MFT" forward --model.mlp_width 4 \
  --model.mlp_width_exponent nan --output.file run.h5
# A file with MLP sublayers whose settings do not say so (another program's): refused, not half read.
/usr/bin/python3 - <<'PY'
import h5py
with h5py.File("run.h5") as a, h5py.File("foreign.h5", "w") as f:
    for k in ["/data/tokens", "/data/targets", "/params/Q", "/params/K", "/params/V", "/params/mlp/U",
              "/params/mlp/b", "/params/mlp/W"]:
        f[k] = a[k][()]
PY
expect 2 "foreign.h5 holds MLP sublayers \(/params/mlp\) and this model has none: give its model.mlp_width" -- \
  "$MFT" forward --params.file foreign.h5 --output.file run.h5
cmp -s run.h5 kept.h5 && ok || bad "a refused run changed run.h5"

# Against an independent float64 implementation (forward and a hand-written backward).
for ranks in 1 3; do
  for shape in "none false gelu" "pre true relu" "pre false tanh" "none true erf"; do
    set -- $shape
    expect 0 "" -- mpiexec --oversubscribe -n $ranks "$MFT" forward --gradient --model.L 3 --model.H 2 --model.d 4 \
      --model.k 2 --data.M 3 --data.N 5 --model.beta 1.3 --init.v_mean 0.5 --model.mlp_width 6 --model.norm $1 \
      --model.causal $2 --model.mlp_activation $3 --init.mlp_b_gain 0.5 --init.mlp_w_mean 0.3 \
      --model.mlp_depth_exponent 0.5 --output.file ref.h5
    /usr/bin/python3 "$here/mlp_reference.py" ref.h5 1e-12 && ok || bad "$ranks ranks, $shape: mft against mlp_reference.py"
  done
done

# The file's model read back: the same output on the same data.
expect 0 "" -- "$MFT" forward --params.file run.h5 --data.file run.h5 --output.file again.h5
h5diff --relative=1e-14 run.h5 again.h5 /output/tokens >/dev/null && ok || bad "params.file did not read the MLP back"
expect 0 "" -- "$MFT" forward --params.file foreign.h5 --model.mlp_width 6 --data.file run.h5 --output.file foreign_run.h5
h5diff --relative=1e-14 run.h5 foreign_run.h5 /output/tokens >/dev/null && ok || bad "foreign.h5 with its width differs"

# The same forward and gradient on 1 and 3 ranks (token groups; head groups).
odd=("${model[@]}" --model.H 3 --data.M 3 --data.N 7 --model.mlp_activation tanh --model.causal true --model.norm pre)
expect 0 "" -- "$MFT" forward "${odd[@]}" --gradient --output.file one.h5
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" forward "${odd[@]}" --gradient --parallel.head_groups 1 \
  --output.file three.h5
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" forward "${odd[@]}" --gradient --parallel.head_groups 3 \
  --output.file heads.h5
for other in three.h5 heads.h5; do
  for ds in /output/tokens /grad/mlp/U /grad/mlp/b /grad/mlp/W /grad/V; do
    h5diff --relative=1e-12 one.h5 $other $ds >/dev/null && ok || bad "$ds differs between one.h5 and $other"
  done
done

# Training moves the neurons; a restart ends where the whole run does, on 1 and 2 ranks.
for optimizer in adamw adamw-block; do
  train=("${model[@]}" --model.mlp_activation gelu --train.optimizer $optimizer --train.lr 0.01
         --train.mlp_lr_width_exponent 0.5)
  expect 0 "" -- "$MFT" train "${train[@]}" --train.steps 12 --checkpoint.dir whole --output.file whole.h5
  expect 0 "" -- "$MFT" train "${train[@]}" --train.steps 6 --checkpoint.dir half --output.file half.h5
  expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" train "${train[@]}" --train.steps 12 \
    --restart half/checkpoint-00000006.h5 --checkpoint.dir half --output.file resumed.h5
  for ds in /params/mlp/U /params/mlp/b /params/mlp/W /params/V /optimizer/mlp/v /history/loss; do
    [ $optimizer = adamw ] && [ $ds = /optimizer/mlp/v ] && ds=/optimizer/mlp/v/W
    h5diff --relative=1e-12 whole.h5 resumed.h5 $ds >/dev/null && ok || bad "$optimizer: $ds differs after a restart"
  done
  h5diff --relative=1e-3 run.h5 whole.h5 /params/mlp/W >/dev/null && bad "$optimizer did not move the neurons" || ok
  rm -rf whole half
done
# The held-out risk on the training data itself is the final risk: the held-out problem has the trained neurons.
expect 0 "" -- "$MFT" train "${model[@]}" --data.file run.h5 --data.heldout run.h5 --train.steps 6 \
  --train.optimizer adamw --train.lr 0.01 --output.file heldout.h5
/usr/bin/python3 - <<'PY' && ok || bad "the held-out risk is not the trained model's"
import json, sys
s = json.loads([l for l in open("out.txt") if l.startswith("mft-summary")][0].split(" ", 1)[1])
print("held-out", s["heldout_risk"], "final", s["final_risk"])
sys.exit(0 if abs(s["heldout_risk"] - s["final_risk"]) <= 1e-12 * s["final_risk"] else 1)
PY

# The Gram mean of the block with attention silenced, against its closed form.
law=(--model.L 4 --model.H 2 --model.d 3 --data.M 2 --data.N 4 --model.mlp_width 5 --model.mlp_activation identity
     --model.mlp_depth_exponent 0.5 --model.mlp_width_exponent 0.5 --init.v_gain 0 --init.mlp_u_gain 1.2
     --init.mlp_b_gain 0.7 --init.mlp_w_gain 0.8 --init.samples 4000)
for ranks in 1 3; do
  expect 0 "" -- mpiexec --oversubscribe -n $ranks "$MFT" forward "${law[@]}" --output.file law$ranks.h5
  /usr/bin/python3 - law$ranks.h5 <<'PY' && ok || bad "the Gram mean of law$ranks.h5 is not the closed form"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as f:
    x, g, se = f["/data/tokens"][()], f["/output/gram_mean"][()], f["/output/gram_stderr"][()]
L, d, s, t = 4, 3, (0.8 * 1.2) ** 2, 3 * (0.8 * 0.7) ** 2
G0 = np.einsum("mic,mjc->mij", x, x)
r = (1 + s / L) ** L
closed = r * G0 + t * (r - 1) / s
z = np.abs(g - closed) / se
print("largest |mean - closed form| / se", z.max(), "; closed form - G0, in se, largest:", (np.abs(closed - G0) / se).max())
sys.exit(0 if z.max() < 4.5 and (np.abs(closed - G0) / se).max() > 10 else 1)
PY
done

# The interaction energy along depth: its closed form and its rate.
expect 2 "output.trajectory" -- "$MFT" forward "${law[@]}" --model.L 6 --output.trajectory 4 --output.file energy.h5
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" forward "${law[@]}" --model.L 8 --output.trajectory 8 \
  --output.file energy.h5
/usr/bin/python3 - <<'PY' && ok || bad "the interaction energy is not its closed form"
import h5py, numpy as np
with h5py.File("energy.h5") as f:
    m, se, a = f["/output/energy_mean"][()], f["/output/energy_stderr"][()], dict(f.attrs)
    x = f["/data/tokens"][()]
E0 = np.mean(2 * ((x - x.mean(axis=1, keepdims=True)) ** 2).sum(axis=(1, 2)) / x.shape[1])
s, L = (0.8 * 1.2) ** 2, 8
closed = E0 * (1 + s / L) ** np.arange(L + 1)
z = np.abs(m[1:] - closed[1:]) / se[1:]
rate = -L * np.log(1 + s / L)
print("energy: largest deviation", z.max(), "se; rate", a["energy_rate"], [a["energy_rate_lo"], a["energy_rate_hi"]],
      "closed form", rate)
ok = abs(m[0] - E0) < 1e-12 * E0 and z.max() < 4.5 and float(a["energy_rate_lo"]) <= rate <= float(a["energy_rate_hi"])
raise SystemExit(0 if ok else 1)
PY

# The synchronization map collects mft's rates and draws them.
/usr/bin/python3 "$jobs/synchronization.py" sync.csv --mft "$MFT" --beta "0 4" --noise 1 --activation erf \
  --samples 100 --L 8 --ranks 1 --plot sync.png >sync.txt 2>&1 || bad "synchronization.py failed: $(tail -3 sync.txt)"
expect 0 "" -- "$MFT" forward --model.L 8 --model.H 1 --model.d 3 --model.k 3 --model.norm pre --model.beta 4 \
  --init.q_gain 0 --init.k_gain 0 --init.v_gain 0 --init.q_mean 1 --init.k_mean 1 --init.v_mean -1 \
  --model.mlp_width 4 --model.mlp_activation erf --model.mlp_depth_exponent 0.5 --model.mlp_width_exponent 0.5 \
  --init.mlp_w_gain 1 --data.M 4 --data.N 8 --data.family gaussian --init.samples 100 --output.trajectory 8 \
  --output.file point.h5
/usr/bin/python3 - <<'PY' && ok || bad "synchronization.csv is not mft's figures"
import csv, h5py, sys
rows = list(csv.DictReader(open("sync.csv")))
a = h5py.File("point.h5")
row = [r for r in rows if float(r["beta"]) == 4][0]
same = all(abs(float(row[k]) - float(a.attrs["energy_" + k])) <= 1e-12 * abs(float(row[k])) for k in ("rate", "rate_lo", "rate_hi"))
noise_only = [r for r in rows if float(r["beta"]) == 0][0]
print("map rows", len(rows), "; beta 4:", row["rate"], "; beta 0:", noise_only["rate"])
sys.exit(0 if len(rows) == 2 and same and float(noise_only["rate_hi"]) < 0 < float(row["rate_lo"]) else 1)
PY
/usr/bin/python3 -c "import matplotlib.image as m, sys; a = m.imread('sync.png'); sys.exit(0 if a.std() > 0.01 else 1)" &&
  ok || bad "synchronization.py drew no map"

# The diffusive limit of the same block: e^s in place of (1 + s/L)^L.
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" limit "${law[@]/--init.samples/--limit.paths}" \
  --model.depth_exponent 0.5 --model.head_exponent 0.5 --output.file limit.h5
/usr/bin/python3 - <<'PY' && ok || bad "the diffusive limit's Gram mean is not the closed form"
import h5py, numpy as np
with h5py.File("limit.h5") as f:
    x, g, se = f["/data/tokens"][()], f["/limit/gram_mean"][()], f["/limit/gram_stderr"][()]
s, t = (0.8 * 1.2) ** 2, 3 * (0.8 * 0.7) ** 2
G0 = np.einsum("mic,mjc->mij", x, x)
closed = np.exp(s) * G0 + t * (np.exp(s) - 1) / s
z = np.abs(g - closed) / se
print("limit: largest |mean - closed form| / se", z.max(), "; from G0, largest:", (np.abs(closed - G0) / se).max())
raise SystemExit(0 if z.max() < 4.5 and (np.abs(closed - G0) / se).max() > 10 else 1)
PY

# One layer of relu and erf neurons: the kernel in closed form.
for activation in relu erf; do
  expect 0 "" -- "$MFT" forward "${law[@]}" --model.L 1 --model.mlp_activation $activation --output.file k_$activation.h5
  /usr/bin/python3 - k_$activation.h5 $activation <<'PY' && ok || bad "the $activation kernel is not its closed form"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as f:
    x, g, se = f["/data/tokens"][()], f["/output/gram_mean"][()], f["/output/gram_stderr"][()]
d, u, b, w = 3, 1.2, 0.7, 0.8
G0 = np.einsum("mic,mjc->mij", x, x)
S = u * u * G0 / d + b * b   # the covariance of p = u . x + b over the tokens
n = np.sqrt(np.einsum("mii->mi", S))
if sys.argv[2] == "relu":
    c = np.clip(S / (n[:, :, None] * n[:, None, :]), -1, 1)
    th = np.arccos(c)
    K = n[:, :, None] * n[:, None, :] / (2 * np.pi) * (np.sin(th) + (np.pi - th) * np.cos(th))
else:
    q = 1 + 2 * np.einsum("mii->mi", S)
    K = 2 / np.pi * np.arcsin(2 * S / np.sqrt(q[:, :, None] * q[:, None, :]))
closed = G0 + d * w * w * K
z = np.abs(g - closed) / se
print(sys.argv[2], "kernel: largest |mean - closed form| / se", z.max(), "; from G0:", (np.abs(closed - G0) / se).max())
sys.exit(0 if z.max() < 4.5 and (np.abs(closed - G0) / se).max() > 10 else 1)
PY
done

# The mean-field ODE's MLP: the expected drift, against NumPy's Runge-Kutta.
ode=(--model.H 2 --model.d 3 --data.M 2 --data.N 4 --model.mlp_width 5 --init.v_gain 0 --init.mlp_u_gain 1.2
     --init.mlp_b_gain 0.7 --init.mlp_w_mean 0.5)
expect 0 "" -- "$MFT" limit "${ode[@]}" --limit.heads 2 --output.file ode.h5
expect 0 "" -- "$MFT" forward "${ode[@]}" --output.file ode_inputs.h5
/usr/bin/python3 - <<'PY' && ok || bad "the ODE's MLP drift is not E[w relu(u . x + b)]"
import h5py, numpy as np
x0 = h5py.File("ode_inputs.h5")["/data/tokens"][()]
x1 = h5py.File("ode.h5")["/limit/tokens"][()]
F = lambda x: 0.5 * np.sqrt((1.44 * (x * x).sum(-1, keepdims=True) / 3 + 0.49) / (2 * np.pi)) * np.ones_like(x)
x, h = x0.copy(), 1e-3
for _ in range(1000):
    k1 = F(x); k2 = F(x + h / 2 * k1); k3 = F(x + h / 2 * k2); k4 = F(x + h * k3)
    x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
e = np.abs(x1 - x).max() / np.abs(x - x0).max()
print("ODE: relative difference", e)
raise SystemExit(0 if e < 1e-9 else 1)
PY

# The mean log-distance D = E log|x_i - x_j| along depth: with attention
# silenced and the identity at a' = c' = 1/2 every pair's difference takes
# one layer's linear map I + G / sqrt(L), G = sum_j w_j u_j^T / sqrt(m),
# whose law is isotropic, so D is a line of slope L E log|(I + G/sqrt(L)) e_1|,
# which NumPy draws (2e6 layers); at d = 1 D falls (synchronization by
# noise) while the energy grows, at d = 4 both grow. As L -> infinity the
# slope tends to Ito's exponent, lambda = (1 - d/2) w_gain^2 u_gain^2 / d
# (docs/results.md, 'Synchronization by noise'): at d = 4 mft's lambda at
# L = 64 holds it within 4.5 standard errors; at d = 1 the layer's map is
# not near the identity (its fourth moment adds about 0.5) and mft's lambda
# lies above it by more than 10 standard errors.
for d in 1 4; do
  expect 0 "" -- "$MFT" forward --model.L 64 --model.H 1 --model.d $d --model.k 1 --data.M 2 --data.N 4 \
    --init.v_gain 0 --init.v_mean 0 --model.mlp_width 3 --model.mlp_activation identity --model.mlp_depth_exponent 0.5 \
    --model.mlp_width_exponent 0.5 --init.mlp_w_gain 1.5 --init.mlp_u_gain 1.5 --init.samples 4000 \
    --output.trajectory 8 --output.file ld$d.h5
done
/usr/bin/python3 - <<'PY' && ok || bad "the mean log-distance's slope against NumPy's draws"
import h5py, numpy as np
rng = np.random.default_rng(7)
L, m, g, ok = 64, 3, 1.5, True
for d in (1, 4):
    w = g * rng.standard_normal((2000000, m, d))
    u = g / np.sqrt(d) * rng.standard_normal((2000000, m))  # the first entries of the u_j
    v = np.einsum("bjc,bj->bc", w, u) / np.sqrt(m * L)
    v[:, 0] += 1
    x = np.log(np.linalg.norm(v, axis=1))
    want, want_se = -L * x.mean(), L * x.std() / np.sqrt(len(x))
    f = h5py.File("ld%d.h5" % d)
    got, lo, hi, energy = (float(f.attrs[k]) for k in ("log_distance_rate", "log_distance_rate_lo",
                                                       "log_distance_rate_hi", "energy_rate"))
    z = abs(got - want) / np.hypot((hi - lo) / 3.92, want_se)
    ito = (1 - d / 2) * g ** 4 / d
    z_ito = (got - ito) / ((hi - lo) / 3.92)
    print("log-distance, d = %d: mft lambda %.4f [%.4f, %.4f], NumPy %.4f +- %.4f (%.2f se); Ito's exponent "
          "(L -> infinity) %.4f (%.2f se); energy's %.3f" % (d, got, lo, hi, want, want_se, z, ito, z_ito, energy))
    ok = ok and z < 4.5 and energy < 0 and (got > 0) == (d == 1) and (abs(z_ito) < 4.5 if d == 4 else z_ito > 10)
raise SystemExit(0 if ok else 1)
PY

# Trained studies: a model of a trained study (mean-field, its reference) and
# one of a trained study in law (a = c = a' = c' = 1/2, 2 ranks), trained
# alone by mft train, give the study's risk and, through mft forward on the
# probe sequences, its probes' x(1): the studies train and probe the neurons.
cat > trained.cfg <<CFG
[model]
d = 2
k = 1
mlp_width = 4
mlp_activation = tanh
[data]
M = 4
N = 4
[init]
v_mean = 0.5
mlp_w_mean = 0.3
mlp_b_gain = 0.5
[train]
optimizer = adamw
lr = 0.02
log_every = 1000
CFG
law=(--model.depth_exponent 0.5 --model.head_exponent 0.5 --init.v_mean 0 --model.d 4 --model.k 2 --data.M 4 --data.N 4
     --data.teacher_init "v_mean=-0.5 v_gain=1.5" --data.teacher_L 4 --data.teacher_H 4 --model.mlp_activation tanh
     --model.mlp_depth_exponent 0.5 --model.mlp_width_exponent 0.5 --init.mlp_b_gain 0.5 --train.lr 0.1)
expect 0 "" -- "$MFT" study --config trained.cfg --study.L 2 --study.H 2 --study.seeds 1 --study.state trained \
  --study.steps 10 --study.references 1 --study.reference_L 4 --study.reference_H 4 --study.probe_M 2 \
  --study.probes discrete --study.mlp_per_head 2 --study.dir st
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" study "${law[@]}" --model.mlp_width 2 --study.state trained \
  --study.steps 6 --study.times "0 6" --study.L "1 2" --study.H 2 --study.seeds 16 --study.references 16 \
  --study.reference_L 2 --study.reference_H 2 --study.reference_margin 0.1 --study.probe_M 2 --study.mlp_per_head 1 \
  --study.probes discrete --study.dir lt
first=$(/usr/bin/python3 -c "
import h5py
a = h5py.File('lt/trained-v0-L2-H2-t6.h5', 'r').attrs['ensemble.first_seed']
print(int(a.decode() if isinstance(a, bytes) else a))")
expect 0 "" -- "$MFT" train --config trained.cfg --model.L 4 --model.H 4 --model.mlp_width 8 --init.seed 3 \
  --data.teacher_L 4 --data.teacher_H 4 --data.teacher_mlp_width 8 --train.steps 10 --output.file st_alone.h5
expect 0 "" -- "$MFT" train "${law[@]}" --model.L 2 --model.H 2 --model.mlp_width 2 --data.teacher_mlp_width 4 \
  --init.seed $((first + 5)) --train.steps 6 --checkpoint.every 0 --output.file lt_alone.h5
for run in st lt; do
  expect 0 "" -- "$MFT" forward --params.file ${run}_alone.h5 --data.family discrete --data.M 2 --data.N 4 \
    --data.seed 7920 --output.file ${run}_probes.h5
done
/usr/bin/python3 - <<'PY' && ok || bad "a trained study's model with MLP sublayers against it trained alone"
import h5py, numpy as np
c, lt = h5py.File("st/case-0.h5"), h5py.File("lt/trained-v0-L2-H2-t6.h5")
st_alone, lt_alone = h5py.File("st_alone.h5"), h5py.File("lt_alone.h5")
st_x, lt_x = h5py.File("st_probes.h5")["/output/tokens"][()], h5py.File("lt_probes.h5")["/output/tokens"][()]
rel = lambda a, b: abs(a - b) / abs(b)
e = [rel(c["/times/10/training/risk"][0], st_alone.attrs["risk"]), rel(lt["/models/risk"][5], lt_alone.attrs["risk"]),
     np.abs(c["/times/10/probes/discrete/tokens"][()] - st_x).max() / np.abs(st_x).max(),
     np.abs(lt["/probes/discrete/samples"][5] - lt_x).max() / np.abs(lt_x).max()]
print("risk (study, in law), probes' x(1) (study, in law) against the models alone:", e)
raise SystemExit(0 if max(e) < 1e-10 and c.attrs["model.mlp_width"] == 8 else 1)
PY

# A study in law at initialisation takes study.mlp_per_head: every cell's
# samples are of m = r H.
expect 0 "" -- "$MFT" study --model.d 2 --model.k 1 --model.depth_exponent 0.5 --model.head_exponent 0.5 \
  --init.v_mean 0 --model.mlp_width 1 --model.mlp_activation gelu --model.mlp_depth_exponent 0.5 \
  --model.mlp_width_exponent 0.5 --data.N 4 --limit.paths 200 --limit.steps 4 --limit.step_heads 2 --study.L 2 \
  --study.H "1 2" --study.mlp_per_head 3 --study.samples 200 --study.probes discrete --study.probe_M 1 --study.dir il
/usr/bin/python3 -c "
import h5py, sys
m = [int(h5py.File('il/samples-v0-L2-H%d.h5' % H).attrs['model.mlp_width']) for H in (1, 2)]
print('in law: the cells\' widths', m)
sys.exit(0 if m == [3, 6] else 1)" && ok || bad "a study in law does not take study.mlp_per_head"

# study.mlp_axis: the grid's H is the MLP width m, model.H the config's;
# refused for a trained study.
expect 0 "" -- "$MFT" study --model.d 2 --model.k 1 --model.H 2 --init.v_gain 0 --model.mlp_width 1 \
  --init.mlp_w_mean 0.5 --study.L 2 --study.H "3 5" --study.mlp_axis true --study.seeds 1 --study.references 1 \
  --study.probes discrete --study.probe_M 1 --limit.heads 32 --study.dir ma
/usr/bin/python3 -c "
import glob, h5py, sys
cells = sorted({(int(f.attrs['model.mlp_width']), int(f.attrs['model.H'])) for f in map(h5py.File, glob.glob('ma/case-*.h5'))
                if int(f.attrs['model.L']) == 2})
print('mlp_axis cells (m, H):', cells)
sys.exit(0 if cells == [(3, 2), (5, 2)] else 1)" && ok || bad "study.mlp_axis does not make the grid's width m"
expect 2 "study.mlp_axis makes study.H the MLP width m of studies at initialisation" -- "$MFT" study \
  --model.mlp_width 2 --study.mlp_axis true --study.state trained

# study.worst at a trained model's neurons: on one token (d = 2) every layer is
# affine, attention x + V x / L, the identity MLP's x + (W^T U x + W^T b) / (L m),
# so a model's x(1) is P x + q and the supremum of |D x + e| over the unit
# circle (NumPy on 2e6 angles, from the case files' heads and neurons) is what
# the search must reach, at initialisation and trained (b moved off 0).
expect 0 "" -- "$MFT" study --config trained.cfg --model.mlp_activation identity --init.mlp_b_gain 0 \
  --init.mlp_w_gain 1.5 --init.mlp_u_gain 1.5 --data.N 1 --study.L 2 --study.H 2 --study.seeds 1 \
  --study.state trained --study.steps 5 --study.references 2 --study.reference_L 8 --study.reference_H 8 \
  --study.probe_M 2 --study.probes discrete --study.mlp_per_head 1 --study.worst true --worst.radius 1 \
  --worst.starts 2 --worst.keep 2 --worst.steps 100 --worst.crossfit false --study.dir sw
/usr/bin/python3 - <<'PY' && ok || bad "study.worst with MLP sublayers against the supremum of the affine maps"
import h5py, numpy as np
d = 2
def affine(path, t):
    f = h5py.File(path)
    L, H, m = (int(f.attrs[k]) for k in ("model.L", "model.H", "model.mlp_width"))
    V = f[f"/times/{t}/params/theta"][()].reshape(L, H, -1)[:, :, 2 * d:].reshape(L, H, d, d)
    n = f[f"/times/{t}/params/neurons"][()].reshape(L, m, 2 * d + 1)
    U, b, W = n[:, :, :d], n[:, :, d], n[:, :, d + 1:]
    P, q = np.eye(d), np.zeros(d)
    for l in range(L):
        A = np.eye(d) + V[l].mean(0) / L
        B = np.eye(d) + W[l].T @ U[l] / (L * m)
        P, q = B @ A @ P, B @ A @ q + W[l].T @ b[l] / (L * m)
    return P, q, L
worst = 0
for t in (0, 5):
    sides = [affine(f"sw/case-{i}.h5", t) for i in range(3)]
    model = [s for s in sides if s[2] == 2][0]
    refs = [s for s in sides if s[2] != 2]
    D = model[0] - sum(r[0] for r in refs) / 2
    e = model[1] - sum(r[1] for r in refs) / 2
    angle = np.linspace(0, 2 * np.pi, 2000001)
    sup = np.linalg.norm(D @ np.stack([np.cos(angle), np.sin(angle)]) + e[:, None], axis=0).max()
    raw = h5py.File(f"sw/worst-v0-t{t}-N1.h5")["/raw"][0]
    print(f"t = {t}: supremum {sup:.12f}, study.worst {raw:.12f}, |e| = {np.linalg.norm(e):.3g}")
    worst = max(worst, abs(raw - sup) / sup)
raise SystemExit(0 if worst < 1e-6 else 1)
PY
finish
