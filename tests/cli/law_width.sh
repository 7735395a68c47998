#!/usr/bin/env bash
# A study in law whose answer is known (input/study_law_width_beta0.cfg): at
# beta = 0 with centred qkv value maps and head exponent 1/2, a layer depends
# on its heads only through H^-1/2 sum_h V_h. Gaussian value maps: the
# model's law is the same at every H; uniform ones: it is not, though its
# Gram means are. Against a finite reference (8000 samples of the 2 x 256
# model of each variant), checked in law.csv:
#   - Gaussian heads: no H of 1 .. 16 resolved by err_law or by the energy
#     distance;
#   - uniform heads: H = 1 resolved by the energy distance, by err_law none;
#   - law_fits.csv has a row a variant for err_law and for sqrt(energy),
#     the Gaussian's over no cell;
#   - every row names its reference (2x256) and the energy distance used all
#     8000 samples; the header line names the reference, and its file is
#     kept by a rerun;
# and what a finite reference does not take is refused in one line: a
# reference within study.reference_margin of the grid, study.k, the limit's
# own options.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh" "$1"
cfg="$2/study_law_width_beta0.cfg"

mpiexec --oversubscribe -n 2 "$MFT" study --config "$cfg" --study.dir w >w.txt 2>&1 ||
  bad "the study failed: $(tail -3 w.txt)"
grep '^variant\|^mft study in law:' w.txt
grep -q '^mft study in law: .* against 8000 samples of the finite reference, the 2 x 256 model' w.txt && ok ||
  bad "the header does not name the finite reference"
/usr/bin/python3 - <<'PY' && ok || bad "law.csv of the beta = 0 width check (lines above)"
import csv, sys
rows = list(csv.DictReader(open("w/law.csv")))
ok = len(rows) == 10
for r in rows:
    v, H = int(r["variant"]), int(r["H"])
    if r["reference"] != "2x256" or r["energy_samples"] != "8000":
        print(f'variant {v} H={H}: reference {r["reference"]}, energy_samples {r["energy_samples"]}'); ok = False
    if r["resolved"] == "true":
        print(f'variant {v} H={H}: err_law resolved [{r["err_law_lo"]}, {r["err_law_hi"]}]'); ok = False
    if v == 0 and r["energy_resolved"] == "true":
        print(f'Gaussian heads, H={H}: the energy distance resolved [{r["energy_lo"]}, {r["energy_hi"]}]'); ok = False
    if v == 1 and H == 1 and r["energy_resolved"] != "true":
        print(f'uniform heads, H=1: the energy distance not resolved [{r["energy_lo"]}, {r["energy_hi"]}]'); ok = False
fits = {(r["variant"], r["metric"]): r for r in csv.DictReader(open("w/law_fits.csv"))}
if sorted(fits) != [(v, m) for v in ("0", "1") for m in ("err_law", "sqrt_energy")]:
    print(f'law_fits.csv rows: {sorted(fits)}'); ok = False
elif fits[("0", "sqrt_energy")]["cells"] != "0" or fits[("0", "err_law")]["cells"] != "0":
    print('a fit over Gaussian cells, none of which is resolved'); ok = False
sys.exit(0 if ok else 1)
PY
stamp=$(stat -c %Y w/reference-v0-L2-H256.h5 w/reference-v1-L2-H256.h5)
sleep 1
mpiexec --oversubscribe -n 2 "$MFT" study --config "$cfg" --study.dir w >rerun.txt 2>&1 || bad "the rerun failed"
[ "$stamp" = "$(stat -c %Y w/reference-v0-L2-H256.h5 w/reference-v1-L2-H256.h5)" ] && ok ||
  bad "the rerun did not keep the reference's files"

expect 2 "reference's 32 heads \\(study.reference_H\\) are fewer than study.reference_margin = 4 times the largest H = 16" -- \
  "$MFT" study --config "$cfg" --study.reference_H 32 --study.dir bad
expect 2 "reference's 2 layers \\(study.reference_L\\) are fewer than study.reference_margin = 4 times the largest L = 4" -- \
  "$MFT" study --config "$cfg" --study.L "2 4" --study.dir bad
expect 2 "a study over k \\(study.k\\) compares with infinite heads: give one or the other" -- \
  "$MFT" study --config "$cfg" --study.H 2 --study.k "1 2" --model.logit_exponent 0.5 --study.dir bad
expect 2 "limit.steps does not apply to a study in law against a finite reference" -- \
  "$MFT" study --config "$cfg" --limit.steps 8 --study.dir bad
finish
