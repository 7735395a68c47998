#!/usr/bin/env bash
# The regime map (jobs/regimes.py) at beta = 0: mft's closed form of
# E |x(1) - x(0)|^2 equals the formula remade here, and every point of 200
# samples lies on it within 4 standard errors, for centred and uncentred
# value maps at a = 1/2 and 1 (c = a and c = 1), L = 4, 16, 64; mft's moment
# and its standard error equal NumPy's from a samples file on 1 and 3 ranks;
# samples that overflow are said with exit 3 and their file kept; and
# jobs/plot_regimes.py draws the map (a PNG, not blank).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh" "$1"
jobs="$here/../../jobs"
/usr/bin/python3 "$jobs/regimes.py" regimes.csv --mft "$MFT" --a "0.5 1" --L "4 16 64" --beta 0 --samples 200 \
  >regimes.txt 2>&1 || { bad "regimes.py failed: $(tail -3 regimes.txt)"; finish; exit 1; }
/usr/bin/python3 - <<'PY' && ok || bad "the beta = 0 points against their closed form (lines above)"
import csv, sys
bad = 0
xbar2 = None
for r in csv.DictReader(open("regimes.csv")):
    m, se, cf = float(r["moved"]), float(r["moved_se"]), float(r["closed_form"])
    a, c, L, H, mu = float(r["a"]), float(r["c"]), int(r["L"]), int(r["H"]), 0.0 if r["centred"] == "1" else 0.5
    step = 1 + mu * L ** -a * H ** (1 - c)
    unit = (step * step + L ** (-2 * a) * H ** (1 - 2 * c)) ** L - 2 * step ** L + 1  # the form at |xbar(0)|^2 = 1
    xbar2 = xbar2 or cf / unit  # one probe set throughout: one |xbar(0)|^2
    z = (m - cf) / se
    print(f"centred {r['centred']} a {a} c {c} L {L}: {m:.5g} +- {se:.2g}, closed form {cf:.5g}, z {z:.2f}")
    bad += abs(z) > 4 or abs(cf - xbar2 * unit) > 1e-10 * abs(cf)
sys.exit(1 if bad else 0)
PY
# At beta = 1 no closed form: the points are collected without one.
/usr/bin/python3 "$jobs/regimes.py" beta1.csv --mft "$MFT" --a 1 --L 4 --beta 1 --samples 20 >beta1.txt 2>&1 &&
  /usr/bin/python3 -c "import csv, sys; r = list(csv.DictReader(open('beta1.csv'))); sys.exit(0 if len(r) == 2 and all(x['closed_form'] == '' and float(x['moved']) > 0 for x in r) else 1)" &&
  ok || bad "regimes.py at beta = 1: $(tail -2 beta1.txt)"
/usr/bin/python3 "$jobs/plot_regimes.py" regimes.csv regimes.png >/dev/null &&
  /usr/bin/python3 -c "import matplotlib.image as m, sys; a = m.imread('regimes.png'); sys.exit(0 if a.std() > 0.01 else 1)" &&
  ok || bad "plot_regimes.py drew no map"
# Samples that overflow: said in one line, exit 3, the file kept.
expect 3 "20 of 20 samples overflowed" -- "$MFT" forward --model.L 256 --model.H 4 --model.d 3 --model.beta 1 \
  --model.depth_exponent 0.25 --model.head_exponent 0.25 --init.v_mean 8 --data.M 2 --data.N 4 --init.samples 20 \
  --output.file overflow.h5
[ -s overflow.h5 ] && ok || bad "the overflowed samples' file is lost"
# The moment from the samples' file, on 1 and 3 ranks (beta = 1: no closed form, none written).
for n in 1 3; do
  mpiexec --oversubscribe -n $n "$MFT" forward --model.L 8 --model.H 4 --model.d 3 --model.k 2 --model.beta 1 \
    --model.depth_exponent 0.5 --model.head_exponent 0.5 --init.v_mean 0 --data.M 3 --data.N 5 --init.samples 30 \
    --output.file moved$n.h5 >moved$n.txt 2>&1 || bad "mft forward --init.samples on $n ranks failed: $(tail -2 moved$n.txt)"
done
/usr/bin/python3 - <<'PY' && ok || bad "mft's moved differs from NumPy's (lines above)"
import h5py, numpy as np, sys
bad = 0
for n in (1, 3):
    f = h5py.File(f"moved{n}.h5", "r")
    x0, x1 = f["/data/tokens"][()], f["/output/samples"][()]
    per = ((x1 - x0[None]) ** 2).sum(axis=3).mean(axis=(1, 2))
    got = [float(f.attrs[k].decode() if isinstance(f.attrs[k], bytes) else f.attrs[k]) for k in ("moved", "moved_stderr")]
    want = [per.mean(), per.std(ddof=1) / np.sqrt(len(per))]
    print(f"{n} ranks: mft {got}, NumPy {want}")
    bad += any(abs(g - w) > 1e-12 * abs(w) for g, w in zip(got, want)) or "moved_closed_form" in f.attrs
sys.exit(1 if bad else 0)
PY
# The closed form's |xbar(0)|^2 from the file's own tokens: uncentred heads at beta = 0, 1 rank.
"$MFT" forward --model.L 8 --model.H 3 --model.d 3 --model.k 2 --model.beta 0 --model.depth_exponent 0.75 \
  --model.head_exponent 1 --init.v_mean 0.5 --init.v_gain 0.7 --data.M 3 --data.N 5 --init.samples 4 \
  --output.file closed.h5 >closed.txt 2>&1 || bad "mft forward at beta = 0 failed: $(tail -2 closed.txt)"
/usr/bin/python3 - <<'PY' && ok || bad "mft's closed form differs from the tokens' (lines above)"
import h5py, sys
f = h5py.File("closed.h5", "r")
xbar2 = (f["/data/tokens"][()].mean(axis=1) ** 2).sum(axis=1).mean()
L, H, a, c, mu, sigma = 8, 3, 0.75, 1.0, 0.5, 0.7
m = 1 + mu * L ** -a * H ** (1 - c)
want = xbar2 * ((m * m + sigma ** 2 * L ** (-2 * a) * H ** (1 - 2 * c)) ** L - 2 * m ** L + 1)
a_ = f.attrs["moved_closed_form"]
got = float(a_.decode() if isinstance(a_, bytes) else a_)
print(f"closed form: mft {got}, from the tokens {want}")
sys.exit(0 if abs(got - want) <= 1e-12 * abs(want) else 1)
PY
finish
