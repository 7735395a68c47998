#!/usr/bin/env bash
# A tiny convergence study end to end with the local runner: the table, the
# fits and the plots appear; a variant whose cases fail and a case file that
# is lost are named, and the rest is aggregated.
source "$(dirname "$0")/lib.sh" "$1"
top="$2"
cat > tiny.cfg <<CFG
[model]
d = 2
k = 1
[data]
N = 4
[init]
v_mean = 0.5
[limit]
heads = 256
[study]
L = 1 2 4
H = 2 4
seeds = 2
probes = discrete uniform_cube
probe_M = 2
variants = model.beta=1; model.beta=-1
dir = tiny
CFG
export MFT
expect 0 "" -- bash "$top/jobs/study.sh" tiny.cfg
grep -q "case 16 (variant 1, reference 0) failed: model.beta must be at least 0, got -1" out.txt && ok || bad "the failed variant's cases are not named"
[ "$(grep -c '^0,"model.beta=1",' tiny/study.csv)" -eq 6 ] && ok || bad "study.csv lacks the 6 cells of variant 0"
awk -F, '$1 == 0 && $6 == "" { exit 1 }' tiny/study.csv && ok || bad "a cell of variant 0 has no error"
# Four references (the default): a floor and a corrected error in every cell, raw and corrected fits.
awk -F, 'NR > 1 && $1 == 0 && ($13 == "" || $14 == "" || $25 != 4) { exit 1 }' tiny/study.csv && ok || bad "a cell of variant 0 has no floor or corrected error"
head -1 tiny/study.csv | grep -q ',time,err_floor_x,err_corrected_x,' && ok || bad "study.csv lacks the floor columns"
[ "$(grep -c '^0,"model.beta=1",tokens,.*,0,1,[^,]*,[^,]*,[^,]*,[^,]*,"[^"]*",[0-9]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*$' tiny/fits.csv)" -eq 1 ] && ok || bad "fits.csv lacks the corrected fit"
head -1 tiny/fits.csv | grep -q ',flags,cells,reference_bias,reference_head_change,reference_risk_reduction,reference_spread,fluctuation_holds,fluctuation_cells,fluctuation_C1,fluctuation_C2$' && ok || bad "fits.csv lacks the flag column"
grep -qE '^mft study: v0 tokens t=0: slope_L -?[0-9.]+ \[-?[0-9.]+, -?[0-9.]+\], slope_H' out.txt && ok || bad "no printed summary with intervals"
grep -q '^0,"model.beta=1",tokens,-' tiny/fits.csv && ok || bad "no negative slope in L for variant 0"
for png in tiny/study_v0_tokens.png tiny/study_v0_adjoint.png; do
  [ -s "$png" ] && file "$png" | grep -q PNG && ok || bad "$png is not a PNG"
done
# The error's law (study.fluctuation): a file per L of the measured variant, none for the failed one; every
# cell of variant 0 predicted, inside its own band; the law's constants in the fits.
[ "$(ls tiny/fluctuation-v0-L*.h5 | wc -l)" -eq 3 ] && ! ls tiny/fluctuation-v1-* 2>/dev/null && ok || bad "the fluctuation files are not one per L of variant 0"
col() { head -1 tiny/study.csv | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
p=$(col err_predicted_x); lo=$(col err_predicted_x_lo); hi=$(col err_predicted_x_hi)
[ -n "$p" ] && awk -F, -v p="$p" -v lo="$lo" -v hi="$hi" 'NR > 1 && $1 == 0 { n++; if (!($p > 0 && $lo <= $p && $p <= $hi)) no = 1 } END { exit no || n != 6 }' \
  tiny/study.csv && ok || bad "a cell of variant 0 has no law prediction inside its band"
awk -F, '$1 == 0 && $3 == "tokens" && $16 == 1 { n++; if (!($(NF-1) > 0 && $NF > 0)) no = 1 } END { exit no || n != 1 }' tiny/fits.csv && ok || bad "fits.csv lacks the law's constants"
grep -q "missing or failed" out.txt && ok || bad "the aggregation does not report the failed cases"
# Variants of data.N probe at their own N (the probes' default), not at the config's.
expect 0 "" -- "$MFT" study --config tiny.cfg --study.variants "data.N=3; data.N=6" --study.L 1 --study.H 2 \
  --study.seeds 1 --study.references 1 --study.dir nvar
h5dump -H -d /probes/discrete/tokens nvar/case-0.h5 | grep -q "( 2, 3, 2 )" && ok || bad "variant data.N=3 did not probe at N = 3"
h5dump -H -d /probes/discrete/tokens nvar/case-2.h5 | grep -q "( 2, 6, 2 )" && ok || bad "variant data.N=6 did not probe at N = 6"
# A lost case file: named, and its cell keeps the other seed.
rm tiny/case-6.h5
expect 0 "" -- "$MFT" study --config tiny.cfg --aggregate tiny
grep -q "case 6 (variant 0, L=1, H=4, seed 1) is missing or failed" out.txt && ok || bad "the lost case is not named"
grep -q '^0,"model.beta=1",1,4,1,' tiny/study.csv && ok || bad "the cell of the lost case does not keep its other seed"
grep -q "the law of variant" out.txt && bad "the aggregation computed the law again" || ok
# Replicates (--replicates): three runs of one study with other init.seed; mft's agreement and pool
# against NumPy's from the three fits.csv; a folder that is not there or holds no case is refused.
rep=(--config tiny.cfg --study.variants model.beta=1 --study.fluctuation false --study.references 2)
for seed in 3 13 23; do
  expect 0 "" -- "$MFT" study "${rep[@]}" --init.seed $seed --study.dir rep$seed
done
expect 0 "" -- "$MFT" study "${rep[@]}" --aggregate rep3 --replicates "rep13 rep23"
grep -q "^mft study: replicates: slope_L t=0 " out.txt && ok || bad "no printed agreement of the replicates"
/usr/bin/python3 - <<'PY' && ok || bad "replicates.csv or replicates_pooled.csv differs from NumPy's (lines above)"
import csv, itertools, math
fits = [{(r["variant"], r["quantity"], r["time"]): r for r in csv.DictReader(open(f"rep{s}/fits.csv")) if r["corrected"] == "1"}
        for s in (3, 13, 23)]
undecided = {"slope_L": "slope_L:", "slope_H": "slope_H:", "a": "a: ab: joint:", "b": "b: ab: joint:"}
got = {r["figure"]: r for r in csv.DictReader(open("rep3/replicates.csv"))}
pooled = {(r["quantity"], r["figure"]): r for r in csv.DictReader(open("rep3/replicates_pooled.csv"))}
z, bad = 1.959963984540054, []
for name, flags in undecided.items():
    agree = pairs = 0
    fig = []
    for k in fits[0]:
        rows = [f[k] for f in fits]
        ok = [r[name] != "" and not any(t in r["flags"] for t in flags.split()) for r in rows]
        fig.append((k, rows, ok))
        for i, j in itertools.permutations(range(3), 2):
            if ok[i] and ok[j]:
                pairs += 1
                agree += float(rows[j][name + "_lo"]) <= float(rows[i][name]) <= float(rows[j][name + "_hi"])
    g = got[name]
    if (int(g["agree"]), int(g["pairs"])) != (agree, pairs):
        bad.append(f"{name}: mft {g['agree']} of {g['pairs']}, NumPy {agree} of {pairs}")
    for k, rows, ok in fig:
        w = [((2 * z) / (float(r[name + "_hi"]) - float(r[name + "_lo"]))) ** 2 for r, o in zip(rows, ok) if o]
        x = [float(r[name]) for r, o in zip(rows, ok) if o]
        p = pooled[(k[1], name)]
        if not w:
            continue
        m, half = sum(a * b for a, b in zip(w, x)) / sum(w), z / math.sqrt(sum(w))
        # fits.csv holds 6 digits: the pool agrees to their rounding
        if abs(float(p["value"]) - m) > 1e-4 * (1 + abs(m)) or abs(float(p["hi"]) - float(p["lo"]) - 2 * half) > 1e-4 * (1 + half):
            bad.append(f"{k} {name}: pooled {p['value']} [{p['lo']}, {p['hi']}], NumPy {m} +- {half}")
    if not pairs and name.startswith("slope"):  # the tiny grid leaves a (and b) undetermined at times
        bad.append(f"{name}: no pair compared")
print("\n".join(bad))
raise SystemExit(1 if bad else 0)
PY
expect 2 "replicates: 'nowhere' is not a folder" -- "$MFT" study "${rep[@]}" --aggregate rep3 --replicates nowhere
mkdir empty
expect 2 "replicates: 'empty' holds no case file of this study" -- "$MFT" study "${rep[@]}" --aggregate rep3 --replicates empty
[ -s rep3/fits.csv ] && ok || bad "a refused replicate lost the study's fits.csv"
# An aggregation of a folder with no case, or of none, is one line.
expect 2 "'empty' holds none of the study's" -- "$MFT" study "${rep[@]}" --aggregate empty
expect 2 "'nowhere' is no folder, so it holds none" -- "$MFT" study "${rep[@]}" --aggregate nowhere
! grep -q "is missing or failed" out.txt && ok || bad "an empty aggregation named its cases"
# jobs/study_costs.py --fit recovers the cost model's overheads from case times priced with them.
known=(--parallel.unit_overhead 4e-6 --parallel.causal_overhead 0 --parallel.layer_overhead 3e-5 --parallel.case_overhead 0.05)
"$MFT" study "${rep[@]}" --list --study.plan_cores 1 --study.schedule serial "${known[@]}" |
  sed -n 's/^case \([0-9]*\) (.*; on 1 rank \([0-9.e+-]*\) s, from .*/case \1 (priced) done in \2 s on 1 rank/p' >priced.log
/usr/bin/python3 "$top/jobs/study_costs.py" --fit --mft "$MFT" tiny.cfg priced.log -- --study.variants model.beta=1 \
  --study.fluctuation false --study.references 2 >costs.txt 2>&1 &&
  /usr/bin/python3 - <<'PY' && ok || bad "study_costs.py --fit did not recover the overheads: $(cat costs.txt)"
import re, sys
fit = dict(re.findall(r"--parallel\.(\w+) (\S+)", open("costs.txt").read()))
want = {"unit_overhead": 4e-6, "layer_overhead": 3e-5, "case_overhead": 0.05}
lines = open("priced.log").read().splitlines()
sys.exit(0 if len(lines) == 14 and all(abs(float(fit[k]) / v - 1) < 0.02 for k, v in want.items())
         and abs(float(fit["causal_overhead"])) < 1e-9 else 1)
PY
finish
