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
[ "$(grep -c '^0,"model.beta=1",tokens,.*,0,1,[^,]*,[^,]*,[^,]*,[^,]*,"[^"]*",[0-9]*,[^,]*,[^,]*,[^,]*,[^,]*$' tiny/fits.csv)" -eq 1 ] && ok || bad "fits.csv lacks the corrected fit"
head -1 tiny/fits.csv | grep -q ',flags,cells,reference_bias,reference_head_change,reference_risk_reduction,reference_spread$' && ok || bad "fits.csv lacks the flag column"
grep -qE '^mft study: v0 tokens t=0: slope_L -?[0-9.]+ \[-?[0-9.]+, -?[0-9.]+\], slope_H' out.txt && ok || bad "no printed summary with intervals"
grep -q '^0,"model.beta=1",tokens,-' tiny/fits.csv && ok || bad "no negative slope in L for variant 0"
for png in tiny/study_v0_tokens.png tiny/study_v0_adjoint.png; do
  [ -s "$png" ] && file "$png" | grep -q PNG && ok || bad "$png is not a PNG"
done
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
finish
