#!/usr/bin/env bash
# The sphere against results nobody here derived: on the circle (d = 2) with
# beta = 0 and every head's V = T I, the tokens are identical Kuramoto
# oscillators of coupling T, theta_i' = (T/N) sum_j sin(theta_j - theta_i).
# Drawn from the wrapped Cauchy law of order parameter r0, Ott and
# Antonsen's reduction gives r(s)^2 = r0^2 e^{Ts} / (1 - r0^2 + r0^2 e^{Ts}).
# Checks: mft limit's r(1) within 3/sqrt(N) of it; its phases equal an
# independent solution of the N-oscillator ODE (RK4 in the angles, numpy) to
# 1e-8; mft forward's L-layer model converges to that solution at rate 1/L;
# input/kuramoto.h5 is jobs/make_kuramoto.py's (to 1e-12: NumPy's vectorised
# tan, cos and sin take other paths on other CPUs); input/kuramoto.cfg (T = 6)
# meets the closed form too, and jobs/plot_kuramoto.py draws it.
here="$(cd "$(dirname "$0")" && pwd)"
top="$2"
source "$here/lib.sh" "$1"
N=2000 T=2 R0=0.3
# The shipped tokens are what jobs/make_kuramoto.py makes (N = 2000, r0 = 0.3),
# here, on this CPU, to 1e-12 (a file made on another machine differs in the last bits).
/usr/bin/python3 "$top/jobs/make_kuramoto.py" circle.h5 > make.txt 2>&1 || bad "make_kuramoto.py failed: $(cat make.txt)"
h5diff -d 1e-12 circle.h5 "$top/input/kuramoto.h5" > /dev/null && ok ||
  bad "input/kuramoto.h5 is not what jobs/make_kuramoto.py makes (to 1e-12)"
model=(--data.file circle.h5 --model.norm sphere --model.beta 0 --model.k 1 --init.v_gain 0 --init.v_mean "$T")
expect 0 "" -- "$MFT" limit "${model[@]}" --limit.heads 1 --output.file limit.h5
for L in 32 64 128 256; do
  expect 0 "" -- "$MFT" forward "${model[@]}" --model.L "$L" --model.H 1 --output.file "forward_$L.h5"
done
/usr/bin/python3 - "$N" "$T" "$R0" > check.txt <<'PY'
import sys, h5py, numpy as np
N, T, r0 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
theta0 = np.arctan2(*h5py.File("circle.h5")["/data/tokens"][0].T[::-1])
def rate(th):  # (T/N) sum_j sin(theta_j - theta_i), through the mean field
    C, S = np.cos(th).mean(), np.sin(th).mean()
    return T * (S * np.cos(th) - C * np.sin(th))
th, steps = theta0.copy(), 4000
h = 1.0 / steps
for _ in range(steps):
    k1 = rate(th); k2 = rate(th + h / 2 * k1); k3 = rate(th + h / 2 * k2); k4 = rate(th + h * k3)
    th = th + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
def phase_error(tokens):
    d = np.arctan2(tokens[:, 1], tokens[:, 0]) - th
    return np.abs((d + np.pi) % (2 * np.pi) - np.pi).max()
x = h5py.File("limit.h5")["/limit/tokens"][0]
r1 = np.hypot(*x.mean(axis=0))
closed = np.sqrt(r0**2 * np.exp(T) / (1 - r0**2 + r0**2 * np.exp(T)))
print(f"r(1) {r1:.6f} closed form {closed:.6f} |diff| {abs(r1 - closed):.3e} allowed {3 / np.sqrt(N):.3e}")
print(f"limit phases against the ODE: {phase_error(x):.3e}")
print("norms", np.abs(np.hypot(x[:, 0], x[:, 1]) - 1).max())
errors = [phase_error(h5py.File(f"forward_{L}.h5")["/output/tokens"][0]) for L in (32, 64, 128, 256)]
print("forward errors", " ".join(f"{e:.3e}" for e in errors))
print("ratios", " ".join(f"{a / b:.3f}" for a, b in zip(errors, errors[1:])))
ok = abs(r1 - closed) < 3 / np.sqrt(N) and phase_error(x) < 1e-8 and abs(r1 - r0) > 0.1
ok = ok and all(1.8 < a / b < 2.2 for a, b in zip(errors, errors[1:]))
print("PASS" if ok else "FAIL")
PY
cat check.txt
grep -q '^PASS' check.txt && ok || bad "the Kuramoto checks: $(tr '\n' ' ' < check.txt)"
# The shipped configuration (T = 6) and its picture.
expect 0 "" -- "$MFT" limit --config "$top/input/kuramoto.cfg" --output.file shipped.h5
/usr/bin/python3 "$top/jobs/plot_kuramoto.py" shipped.h5 --r0 "$R0" > plot.txt 2>&1 || bad "plot_kuramoto.py failed: $(cat plot.txt)"
cat plot.txt
/usr/bin/python3 - "$N" plot.txt shipped.png <<'PY' && ok || bad "the shipped run's r(1) or its picture: $(cat plot.txt)"
import re, sys
import numpy as np
from PIL import Image
N, text = int(sys.argv[1]), open(sys.argv[2]).read()
r1, closed = (float(v) for v in re.search(r"r\(1\) = ([0-9.]+), closed form r\(1\) = ([0-9.]+)", text).groups())
a = np.asarray(Image.open(sys.argv[3]).convert("L"), dtype=float)
sys.exit(0 if abs(r1 - closed) < 3 / np.sqrt(N) and r1 > 0.9 and a.std() > 5 and len(np.unique(a)) > 20 else 1)
PY
finish
