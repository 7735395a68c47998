#!/usr/bin/env bash
# Training in both regimes, small: input/study_training_regimes.cfg at L = 2,
# 4, 3 seeds, 20 steps, 5 rates sqrt(2) apart. movement.csv holds a row per
# variant, cell, recorded time and block; every row's layers' mean is the
# mean over its seeds' case files of their layers' mean block_change
# (recomputed here), 0 at step 0, and jobs/training_regimes.py reads the
# same figures, writes its tables and draws its picture; spread.csv too.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh" "$1"
top="$here/../.."
mpiexec --oversubscribe -n 2 "$MFT" study --config "$top/input/study_training_regimes.cfg" --study.dir tr \
  --study.L "2 4" --study.seeds 3 --study.steps 20 --study.times 10 \
  --study.learning_rates "0.01 0.01414 0.02 0.02828 0.04" >study.txt 2>&1 ||
  { bad "the study failed: $(tail -3 study.txt)"; finish; exit 1; }
grep -q "at its own exponents (data.teacher_depth_exponent 1" study.txt && ok ||
  bad "the study's first line does not name the teacher's exponents"
/usr/bin/python3 - <<'PY' && ok || bad "movement.csv against the case files (lines above)"
import csv, glob, re, sys
import h5py, numpy as np
rows = list(csv.DictReader(open("tr/movement.csv")))
want = 10 * 2 * 3 * 3  # variants (2 regimes x 5 rates) x cells x times (0, 10, 20) x blocks
if len(rows) != want:
    sys.exit(f"movement.csv has {len(rows)} rows, expected {want}")
per = {}
for path in glob.glob("tr/case-*.h5"):
    if not re.fullmatch(r"case-\d+\.h5", path.split("/")[-1]):
        continue
    with h5py.File(path, "r") as f:
        for t in f["times"]:
            b = f["times"][t]["training"]["block_change"][...]
            key = (int(f.attrs["study.variant"]), int(f.attrs["study.case_L"]), int(t))
            per.setdefault(key, []).append(b.mean(axis=0))
worst = 0.0
for r in rows:
    key = (int(r["variant"]), int(r["L"]), int(r["time"]))
    mine = np.mean([m["QKV".index(r["block"])] for m in per[key]])
    got = float(r["change"])
    if key[2] == 0 and got != 0:
        sys.exit(f"{key} {r['block']}: moved {got} at step 0")
    if int(r["seeds"]) != len(per[key]):
        sys.exit(f"{key}: {r['seeds']} seeds, {len(per[key])} files")
    worst = max(worst, abs(got - mine) / max(mine, 1e-300))
print(f"largest relative gap to the case files: {worst:.2e}")
sys.exit(0 if worst < 1e-5 else 1)
PY
/usr/bin/python3 "$top/jobs/training_regimes.py" tr tr.png >regimes.txt 2>&1 ||
  { bad "training_regimes.py failed: $(tail -3 regimes.txt)"; finish; exit 1; }
/usr/bin/python3 - <<'PY' && ok || bad "training_regimes.py's tables (lines above)"
import csv, sys
import matplotlib.image as m
if m.imread("tr.png").std() < 0.01:
    sys.exit("blank picture")
moved = [r for r in csv.DictReader(open("tr/regimes_movement.csv")) if float(r["g"]) == 0 and r["block"] == "Q"]
table = {(r["overrides"], r["L"]): float(r["change"]) for r in csv.DictReader(open("tr/movement.csv"))
         if r["time"] == "20" and r["block"] == "Q"}
if len(moved) != 2:
    sys.exit(f"{len(moved)} fixed-rate Q rows, expected one a regime")
for r in moved:
    a, lr = r["a"], float(r["lr0"])
    for L in ("2", "4"):
        key = next(k for k in table if f"depth_exponent={float(a):g} " in k[0] + " " and k[1] == L
                   and abs(float(k[0].split("train.lr=")[1]) / lr - 1) < 1e-3)
        if abs(float(r["L" + L]) / table[key] - 1) > 1e-3:
            sys.exit(f"a {a} L {L}: script {r['L' + L]}, movement.csv {table[key]}")
print("collapse rows:", sum(1 for _ in open("tr/regimes_collapse.csv")) - 1)
PY
# The seeds' spread (spread.csv, mft's): every row at the last time is the
# mean over pairs of seeds of 2 |x - y|^2 / (|x|^2 + |y|^2) over the case
# files' probe outputs, its interval the jackknife over the seeds (t with
# seeds - 1 degrees of freedom), recomputed here; jobs/trained_spread.py
# draws the a = c = 1/2 rows at lr = 0.02 (L/4)^-1/2.
/usr/bin/python3 - <<'PY' && ok || bad "spread.csv against the case files (lines above)"
import csv, glob, itertools, re, sys
import h5py
import numpy as np
t975 = {2: 4.302653, 3: 3.182446, 4: 2.776445}  # Student's t, 0.975, by degrees of freedom
outs = {}
for path in glob.glob("tr/case-*.h5"):
    if not re.fullmatch(r"case-\d+\.h5", path.split("/")[-1]):
        continue
    with h5py.File(path) as f:
        a = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()}
        if a["study.reference"] == "true":
            continue
        x = np.concatenate([f["probes"][n]["tokens"][()].ravel() for n in sorted(f["probes"])])
        outs.setdefault((a["study.variant"], a["study.case_L"]), {})[int(a["study.case_seed"])] = x
def spread(xs):
    return np.mean([2 * np.sum((x - y) ** 2) / (np.sum(x * x) + np.sum(y * y)) for x, y in itertools.combinations(xs, 2)])
rows = [r for r in csv.DictReader(open("tr/spread.csv")) if r["time"] == "20"]
if len(rows) != 10 * 2:
    sys.exit(f"{len(rows)} rows at step 20, expected 20")
for r in rows:
    xs = [v for _, v in sorted(outs[(r["variant"], r["L"])].items())]
    n, whole = len(xs), spread(xs)
    loo = [spread(xs[:i] + xs[i + 1:]) for i in range(n)]
    half = t975[n - 1] * np.sqrt((n - 1) / n * np.sum((np.array(loo) - np.mean(loo)) ** 2))
    got = [float(r[c]) for c in ("spread", "spread_lo", "spread_hi")]
    want = [whole, whole - half, whole + half]
    if int(r["seeds"]) != n or any(abs(g - w) > 1e-4 * abs(whole) for g, w in zip(got, want)):
        sys.exit(f"variant {r['variant']} L = {r['L']}: {got} against {want}")
print(f"{len(rows)} rows recomputed")
PY
/usr/bin/python3 "$top/jobs/trained_spread.py" tr spread.png --lr0 0.02 >spread.txt 2>&1 &&
  grep -q "^L =    4, lr 0.02: spread" spread.txt && file spread.png | grep -q PNG && ok ||
  bad "trained_spread.py drew nothing: $(tail -3 spread.txt)"
finish
