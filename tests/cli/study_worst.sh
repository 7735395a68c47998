#!/usr/bin/env bash
# A trained study with study.worst end to end:
# - worst.csv, worst_N.csv, the err_worst columns of study.csv and the
#   tokens_worst fits are written, with finite figures;
# - each model's figure never falls from one N to the next (each N starts
#   from the one before) nor from the largest N to the measure of 16 atoms
#   (study.worst_atoms, N = inf in worst.csv); the collapsed start's figure
#   and worst.check's gain are in worst.csv;
# - 1 and 2 ranks give the same inputs and figures (1e-9);
# - a rerun keeps the searches already made (no search time);
# - as under Slurm: every case alone (--study.only), then --aggregate makes
#   the searches, with the same figures;
# - a variant with the causal mask among others has no measure, said so.
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh" "$1"
cat > base.cfg <<CFG
[model]
d = 2
k = 1
[data]
M = 4
N = 4
[init]
law = uniform
v_mean = 0.5
[train]
optimizer = adamw
lr = 0.02
log_every = 1000
[study]
L = 1 2 4
H = 2 4
seeds = 2
state = trained
steps = 20
times = 10
reference_L = 16
reference_H = 16
references = 4
probe_M = 2
worst = true
worst_N = 1 4 16
worst_atoms = 16
[worst]
starts = 2
keep = 2
steps = 8
check = true
CFG
run() { mpiexec --oversubscribe -n "$@"; }
# The numeric columns of two tables (all but search_seconds) agree to a relative 1e-9.
same_table() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import csv, sys, math
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
if len(a) != len(b) or not a: sys.exit("rows: %d against %d" % (len(a), len(b)))
worst = 0.0
for x, y in zip(a, b):
    for k in x:
        if k == "search_seconds" or x[k] == y[k]: continue
        try: u, v = float(x[k]), float(y[k])
        except ValueError: sys.exit("%s: %s against %s" % (k, x[k], y[k]))
        worst = max(worst, abs(u - v) / max(abs(v), 1e-300))
print("largest relative difference %.2e" % worst)
sys.exit(0 if worst < 1e-9 else 1)
PY
}

run 2 "$MFT" study --config base.cfg --study.dir two >two.txt 2>&1 || bad "the study on 2 ranks failed: $(tail -3 two.txt)"
for f in worst.csv worst_N.csv study.csv fits.csv; do [ -s two/$f ] && ok || bad "two/$f is missing"; done
/usr/bin/python3 - <<'PY' && ok || bad "worst figures missing or not finite"
import csv, math, sys
w = list(csv.DictReader(open("two/worst.csv")))
assert sorted({r["N"] for r in w}) == ["1", "16", "4", "inf"], "N searched"
assert all(r["atoms"] == ("16" if r["N"] == "inf" else "") for r in w), "the measure's atoms"
assert all(float(r["check_gain"]) >= -1e-12 and float(r["err_collapsed_search_x"]) > 0 for r in w), "check, collapsed"
assert {int(r["time"]) for r in w} == {0, 10, 20}, "times"
assert all(math.isfinite(float(r["err_worst_x"])) and float(r["err_worst_search_x"]) > 0 for r in w)
s = list(csv.DictReader(open("two/study.csv")))
assert all(r["err_worst_x"] != "" and float(r["worst_ratio_x"]) > 0 for r in s)
f = [r for r in csv.DictReader(open("two/fits.csv")) if r["quantity"].startswith("tokens_worst")]
assert {r["quantity"] for r in f} == {"tokens_worst_N1", "tokens_worst_N4", "tokens_worst_N16", "tokens_worst_K16"}, "fits"
n = list(csv.DictReader(open("two/worst_N.csv")))
assert len(n) == 18 and all(r["worst_slope_N"] != "" for r in n), "slopes in N"
PY
grep -q 'lower bounds on the supremum' two.txt && ok || bad "the fits are not printed as lower bounds"
/usr/bin/python3 - <<'PY' && ok || bad "a model's figure fell from one N to the next, or to the measure"
import glob, re, sys, h5py, numpy as np
for v in (0,):
    for t in (0, 10, 20):
        chain = [f"two/worst-v{v}-t{t}-N{n}.h5" for n in (1, 4, 16)] + [f"two/worst-v{v}-t{t}-K16.h5"]
        raw = [dict(zip(h5py.File(f)["/case"][...], h5py.File(f)["/raw"][...])) for f in chain]
        for a, b in zip(raw, raw[1:]):
            for case in a:
                if b[case] < a[case] * (1 - 1e-12): sys.exit(f"t={t} case {case}: {a[case]} then {b[case]}")
print("every model's raw figure: nondecreasing along N = 1, 4, 16 and the measure")
PY

run 1 "$MFT" study --config base.cfg --study.dir one >one.txt 2>&1 || bad "the study on 1 rank failed"
same_table one/worst.csv two/worst.csv && ok || bad "1 and 2 ranks differ"
/usr/bin/python3 - <<'PY' && ok || bad "the worst inputs on 1 and 2 ranks differ"
import glob, os, sys, h5py, numpy as np
worst, files = 0.0, sorted(os.path.basename(f) for f in glob.glob("one/worst-*.h5"))
assert len(files) == 12, files
for f in files:
    with h5py.File("one/" + f) as a, h5py.File("two/" + f) as b:
        for n in ("raw", "initial", "heldout_e2", "heldout_pairs", "tokens"):
            x, y = a[n][...], b[n][...]
            worst = max(worst, np.abs(x - y).max() / max(np.abs(y).max(), 1e-300))
print("worst inputs and figures, 1 against 2 ranks: largest relative difference %.2e" % worst)
sys.exit(0 if worst < 1e-9 else 1)
PY

run 2 "$MFT" study --config base.cfg --study.dir two >again.txt 2>&1 || bad "the rerun failed"
grep -q '"worst_seconds": 0[,}]' again.txt && ok || bad "the rerun searched again: $(grep mft-summary again.txt)"
same_table two/worst.csv one/worst.csv && ok || bad "the rerun's table differs"

count=$(run 1 "$MFT" study --config base.cfg --study.dir slurm --list | tail -n 1 | cut -d' ' -f1)
for ((i = 0; i < count; i++)); do
  run 1 "$MFT" study --config base.cfg --study.dir slurm --study.only "$i" >/dev/null 2>&1 || bad "case $i failed"
done
ls slurm/worst-* >/dev/null 2>&1 && bad "a case searched worst inputs" || ok
run 1 "$MFT" study --config base.cfg --aggregate slurm >agg.txt 2>&1 || bad "the aggregation failed: $(tail -3 agg.txt)"
same_table slurm/worst.csv one/worst.csv && ok || bad "the cases one by one and --aggregate differ"

# Variants with and without the causal mask: the masked one's chains search every N and say
# that it has no measure; the other's end with the measure (the mask is not refused for them).
expect 0 "" -- run 2 "$MFT" study --config base.cfg --study.dir masked --study.L 1 --study.H 2 --study.worst_N 4 \
  --study.worst_atoms 4 --study.steps 2 --study.times 1 --worst.check false --study.variants "model.causal=false; model.causal=true"
grep -q "worst v1 t=2: no measure (study.worst_atoms)" out.txt && ! grep -q "failed:" out.txt && ok ||
  bad "the masked variant's chain: $(grep -m1 'failed\|no measure' out.txt)"
[ "$(awk -F, 'NR > 1 { print $1 "/" $6 }' masked/worst.csv | sort -u | tr '\n' ' ')" = "0/4 0/inf 1/4 " ] && ok ||
  bad "worst.csv of the two variants: $(awk -F, 'NR > 1 { print $1 "/" $6 }' masked/worst.csv | sort -u | tr '\n' ' ')"
finish
