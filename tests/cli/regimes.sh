#!/usr/bin/env bash
# The regime map (jobs/regimes.py) at beta = 0: every point, E |x(1) - x(0)|^2
# of 200 samples, lies on its closed form within 4 standard errors, for
# centred and uncentred value maps at a = 1/2 and 1 (c = a and c = 1), L = 4,
# 16, 64; and jobs/plot_regimes.py draws the map (a PNG, not blank).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh" "$1"
jobs="$here/../../jobs"
/usr/bin/python3 "$jobs/regimes.py" regimes.csv --mft "$MFT" --a "0.5 1" --L "4 16 64" --beta 0 --samples 200 \
  >regimes.txt 2>&1 || { bad "regimes.py failed: $(tail -3 regimes.txt)"; finish; exit 1; }
/usr/bin/python3 - <<'PY' && ok || bad "the beta = 0 points against their closed form (lines above)"
import csv, sys
bad = 0
for r in csv.DictReader(open("regimes.csv")):
    m, se, cf = float(r["moved"]), float(r["moved_se"]), float(r["closed_form"])
    z = (m - cf) / se
    print(f"centred {r['centred']} a {r['a']} c {r['c']} L {r['L']}: {m:.5g} +- {se:.2g}, closed form {cf:.5g}, z {z:.2f}")
    bad += abs(z) > 4
sys.exit(1 if bad else 0)
PY
/usr/bin/python3 "$jobs/plot_regimes.py" regimes.csv regimes.png >/dev/null &&
  /usr/bin/python3 -c "import matplotlib.image as m, sys; a = m.imread('regimes.png'); sys.exit(0 if a.std() > 0.01 else 1)" &&
  ok || bad "plot_regimes.py drew no map"
finish
