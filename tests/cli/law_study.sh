#!/usr/bin/env bash
# A study in law (a = c = 1/2 at initialisation) on a beta = 0 grid, where the
# laws' Gram means have closed forms (docs/model.md, 'The diffusive regime'):
# with uniform attention a layer keeps every token's offset o_i from its
# sequence's mean and maps the mean by I + (L H)^-1/2 sum_h A_h, so
#   E G_ij(1) = r_L |xbar(0)|^2 + xbar(0) . (o_i + o_j) + o_i . o_j,
#   r_L = (1 + sigma^2 / L)^L for the L x H model, e^(sigma^2) for the limit.
# Checked:
#   - every cell's Gram means lie on the closed form within the standard
#     errors the cell file holds (each entry within the 95% Bonferroni bound
#     of its cell), in at least 90% of the cells; the limit's likewise;
#   - err_law's 95% interval holds the closed form's gap (the largest over
#     the probe sequences of |E_L G - E_lim G|_F / |E_lim G|_F) in at least
#     9 of the 12 cells of both replicates, and the cells of L = 2 are resolved;
#   - err_law_floor is both sides' sampling error of the Gram difference,
#     remade from the files' standard errors;
#   - a replicate with other seeds agrees: the two err_law intervals overlap
#     in every cell;
#   - its listing, and its priced time; what a study in law
#     does not take is refused in one line;
#   - a study over k: the gap to infinite heads falls with k.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh" "$1"

law=(study --model.depth_exponent 0.5 --model.head_exponent 0.5 --model.beta 0 --model.d 4 --model.k 2
     --data.N 4 --init.v_gain 1 --study.L "2 4 8" --study.H "1 4" --study.samples 4000 --limit.paths 10000
     --limit.steps 16 --study.probe_M 2)
for replicate in 1 2; do
  mpiexec --oversubscribe -n 2 "$MFT" "${law[@]}" --init.seed $((1 + (replicate - 1) * 5000000)) --study.dir law$replicate \
    >law$replicate.txt 2>&1 || bad "the study in law failed: $(tail -3 law$replicate.txt)"
done
grep '^variant' law1.txt

/usr/bin/python3 - <<'EOF' && ok || bad "a study in law against the beta = 0 closed forms (lines above)"
import csv, glob, math, sys
import h5py
import numpy as np
from statistics import NormalDist

sigma2 = 1.0
def closed(x0, r):  # E G (M, N, N) for inputs x0 (M, N, d), |xbar|^2 scaled by r
    xbar = x0.mean(axis=1, keepdims=True)
    o = x0 - xbar
    g = np.einsum('mic,mjc->mij', o, o) + np.einsum('mic,mjc->mij', np.broadcast_to(xbar, o.shape), o)
    g = g + g.transpose(0, 2, 1) - np.einsum('mic,mjc->mij', o, o)
    return g + r * np.einsum('mc,mc->m', xbar[:, 0], xbar[:, 0])[:, None, None]

def within(path, r):  # every entry within the cell's Bonferroni bound
    f = h5py.File(path, 'r')
    entries, worst = 0, 0.0
    for name in f['probes']:
        p = f['probes'][name]
        z = np.abs(p['gram_mean'][()] - closed(p['inputs'][()], r)) / p['gram_stderr'][()]
        iu = np.triu_indices(z.shape[1])
        entries += z.shape[0] * len(iu[0])
        worst = max(worst, z[:, iu[0], iu[1]].max())
    return worst <= NormalDist().inv_cdf(1 - 0.025 / entries), worst

def floor(cell, limit):  # both sides' sampling error of the Gram difference, relative, the largest
    out = 0.0
    for probe in h5py.File(limit, 'r')['probes']:
        a, b = h5py.File(cell, 'r')['probes'][probe], h5py.File(limit, 'r')['probes'][probe]
        s2 = a['gram_stderr'][()] ** 2 + b['gram_stderr'][()] ** 2
        g = b['gram_mean'][()]
        out = max([out] + [math.sqrt(s2[m].sum()) / np.linalg.norm(g[m]) for m in range(len(g))])
    return out

def gap(path, L):  # the closed form's err_law of a cell
    f = h5py.File(path, 'r')
    out = 0.0
    for name in f['probes']:
        x0 = f['probes'][name]['inputs'][()]
        a, b = closed(x0, (1 + sigma2 / L) ** L), closed(x0, math.exp(sigma2))
        out = max(out, max(np.linalg.norm(a[m] - b[m]) / np.linalg.norm(b[m]) for m in range(len(x0))))
    return out

ok = True
rows = {}
for rep in (1, 2):
    rows[rep] = list(csv.DictReader(open(f'law{rep}/law.csv')))
    on, held = [], []
    for row in rows[rep]:
        L, H = int(row['L']), int(row['H'])
        good, z = within(f'law{rep}/samples-v0-L{L}-H{H}.h5', (1 + sigma2 / L) ** L)
        true = gap(f'law{rep}/samples-v0-L{L}-H{H}.h5', L)
        inside = float(row['err_law_lo']) <= true <= float(row['err_law_hi'])
        on.append(good), held.append(inside)
        print(f'replicate {rep} L={L} H={H}: largest |z| {z:.2f}; err_law {float(row["err_law"]):.4f} '
              f'[{float(row["err_law_lo"]):.4f}, {float(row["err_law_hi"]):.4f}], closed form {true:.4f}')
        want = floor(f'law{rep}/samples-v0-L{L}-H{H}.h5', f'law{rep}/limit-v0.h5')
        if abs(float(row['err_law_floor']) - want) > 1e-5 * want:
            print(f'  err_law_floor {row["err_law_floor"]}, from the files {want:.6g}'); ok = False
        if L == 2 and row['resolved'] != 'true':
            print(f'  L = 2 is not resolved'); ok = False
    limit_ok, z = within(f'law{rep}/limit-v0.h5', math.exp(sigma2))
    print(f'replicate {rep}: {sum(on)}/{len(on)} cells on the closed form, {sum(held)}/{len(held)} intervals hold '
          f'the gap; the limit on e^sigma^2: largest |z| {z:.2f}')
    ok = ok and sum(on) >= 0.9 * len(on) and limit_ok
    held_all = held_all + held if rep == 2 else held
# 95% intervals: at least 9 of the 12 hold the gap (a chance of 0.2% to see
# fewer where every one has its 95%)
print(f'{sum(held_all)} of {len(held_all)} intervals hold the closed form gap')
ok = ok and sum(held_all) >= 9
for a, b in zip(rows[1], rows[2]):
    if max(float(a['err_law_lo']), float(b['err_law_lo'])) > min(float(a['err_law_hi']), float(b['err_law_hi'])):
        print(f'replicates disagree at L={a["L"]} H={a["H"]}'); ok = False
sys.exit(0 if ok else 1)
EOF

# The same small study on 1 and 3 ranks (each rank its block of samples and
# paths): the same figures, to round-off; a rerun on 2 ranks keeps the files
# of the 1-rank run (one decision, taken together) and prints the same table.
small=("${law[@]}" --model.beta 1 --study.L "2 4" --study.H 1 --study.samples 600 --limit.paths 700 --limit.steps 8
       --limit.coupling halves)
for np in 1 3; do
  mpiexec --oversubscribe -n $np "$MFT" "${small[@]}" --study.dir ranks$np >ranks$np.txt 2>&1 ||
    bad "the study in law on $np ranks failed: $(tail -3 ranks$np.txt)"
done
stamp=$(stat -c %Y ranks1/limit-v0.h5 ranks1/samples-v0-L2-H1.h5)
cp ranks1/law.csv ranks1/law_first.csv
sleep 1
mpiexec --oversubscribe -n 2 "$MFT" "${small[@]}" --study.dir ranks1 >rerun.txt 2>&1 || bad "the rerun failed"
[ "$stamp" = "$(stat -c %Y ranks1/limit-v0.h5 ranks1/samples-v0-L2-H1.h5)" ] && ok || bad "the rerun on 2 ranks did not keep the files"
cp ranks1/law.csv ranks1/law_rerun.csv
# A cell's seeds are its own: one more L keeps the other cells' files.
mpiexec --oversubscribe -n 2 "$MFT" "${small[@]}" --study.L "2 3 4" --study.dir ranks1 >more.txt 2>&1 || bad "one more L failed"
[ "$stamp" = "$(stat -c %Y ranks1/limit-v0.h5 ranks1/samples-v0-L2-H1.h5)" ] && [ -f ranks1/samples-v0-L3-H1.h5 ] && ok ||
  bad "one more L recomputed the other cells"
/usr/bin/python3 - <<'EOF' && ok || bad "a study in law on 1, 2 and 3 ranks (lines above)"
import csv, sys
import h5py
import numpy as np
ok = True
def rows(path):
    return list(csv.DictReader(open(path)))
keys = ('err_law', 'err_law_lo', 'err_law_hi', 'err_law_floor', 'energy', 'energy_se', 'limit_steps', 'limit_sampling')
for other in ('ranks3/law.csv', 'ranks1/law_rerun.csv'):
    for a, b in zip(rows('ranks1/law_first.csv'), rows(other)):
        for k in keys:
            x, y = float(a[k]), float(b[k])
            if abs(x - y) > 2e-6 * abs(x) + 1e-12:  # the table's 6 digits
                print(f'{other} L={a["L"]}: {k} {x} against {y}'); ok = False
if open('ranks1/law_expansions.csv').readline().strip() != 'variant,size,form,p,p_lo,p_hi,a,a_se,b,b_se,chi2,dof,p_value,rejected,decided':
    print('law_expansions.csv lacks its header'); ok = False
for name in ('limit-v0.h5', 'samples-v0-L2-H1.h5', 'samples-v0-L4-H1.h5'):
    f1, f3 = h5py.File('ranks1/' + name, 'r'), h5py.File('ranks3/' + name, 'r')
    for probe in f1['probes']:
        a, b = f1['probes'][probe], f3['probes'][probe]
        if not np.array_equal(a['samples'][()], b['samples'][()]):
            print(f'{name} {probe}: the samples differ'); ok = False
        for ds in ('gram_mean', 'gram_stderr'):
            gap = np.max(np.abs(a[ds][()] - b[ds][()]) / np.abs(a[ds][()]))
            print(f'{name} {probe} {ds}: largest relative gap 1 against 3 ranks {gap:.1e}')
            ok = ok and gap <= 1e-12
sys.exit(0 if ok else 1)
EOF

# A precision asked for: from a 400-sample pilot, every cell draws what its
# interval asks and meets a half-width of 0.06; a target the limit's paths
# cannot reach is said to be theirs, with the files of the first run kept.
target=("${law[@]}" --model.beta 1 --study.L "2 4" --study.H 1 --study.samples 400 --limit.paths 16000
        --limit.steps 8 --study.dir target)
mpiexec --oversubscribe -n 2 "$MFT" "${target[@]}" --study.target 0.06 >target.txt 2>&1 || bad "the target run failed"
/usr/bin/python3 - <<'EOF' && ok || bad "a study given a target (lines above)"
import csv, sys
rows = list(csv.DictReader(open("target/law.csv")))
for r in rows:
    half = (float(r["err_law_hi"]) - float(r["err_law_lo"])) / 2
    print(f'L={r["L"]}: {r["samples"]} samples, half-width {half:.4f}: {r["target"]}')
    if not r["target"].startswith("met") or half > 0.06:
        sys.exit(1)
sys.exit(0 if len(rows) == 2 and any(int(r["samples"]) > 400 for r in rows) else 1)
EOF
mpiexec --oversubscribe -n 2 "$MFT" "${target[@]}" --study.target 0.01 >limited.txt 2>&1 || bad "the second target run failed"
grep -q "target not met: half-width .* (the limit's paths alone give about" limited.txt && ok ||
  bad "a target beyond the limit's paths was not said to be theirs: $(grep '^variant 0 L' limited.txt)"
expect 2 'study.max_samples bounds the samples that study.target asks for' -- \
  "$MFT" "${target[@]}" --study.max_samples 1000 --study.dir bad

# Its --list prices the cells and a rank's memory (8 M N d (S + 2 P) over the 2 probe sets:
# 0.0123 GB); a width past limit.heads is no reference's concern here.
expect 0 '' -- "$MFT" "${law[@]}" --study.H "1 8192" --study.dir listed --list
grep -q '^6 cells in listed$' out.txt && grep -q '^variant 0 L=8 H=8192: ' out.txt &&
  grep -q '^memory a rank on 1 ranks .*: 0.0123 GB of samples and paths' out.txt && ok ||
  bad "the listing of a study in law: $(tail -2 out.txt)"
# and its time from a pilot, on 2 ranks and from a pilot on 1 rank for 2
# (how close those prices come to a run's time is a benchmark's:
# tests/bench/law_pricing.sh).
mpiexec --oversubscribe -n 2 "$MFT" "${law[@]}" --study.dir law1 --list >priced.txt 2>&1 || bad "the priced listing failed"
grep -q '^time on 2 ranks, priced from a .* pilot on 2: about [0-9.e+]* s' priced.txt && ok ||
  bad "the listing on 2 ranks has no price: $(tail -2 priced.txt)"
"$MFT" "${law[@]}" --study.dir law1 --list --study.plan_cores 2 >priced1.txt 2>&1 || bad "the listing on one rank failed"
grep -q '^time on 2 ranks, priced from a .* pilot on 1: about [0-9.e+]* s' priced1.txt && ok ||
  bad "a pilot on 1 rank did not price 2 ranks: $(tail -2 priced1.txt)"
# The diagonal's levels (study.levels, L x H = 8): on 1 and 3 ranks the same
# figures to the table's digits, Giles's check passing on every level, the
# coupled differences' variances below the fine model's; with a target, the
# allocation meets it; a grid that is no diagonal is refused.
levels=(study --model.depth_exponent 0.5 --model.head_exponent 0.5 --model.d 4 --model.k 2 --data.N 4
        --study.probe_M 2 --study.levels true --study.L "1 2 4" --study.H 2 --study.samples 1500)
for np in 1 3; do
  mpiexec --oversubscribe -n $np "$MFT" "${levels[@]}" --study.dir levels$np >levels$np.txt 2>&1 ||
    bad "the levels on $np ranks failed: $(tail -3 levels$np.txt)"
done
mpiexec --oversubscribe -n 2 "$MFT" "${levels[@]}" --study.target 0.02 --study.dir levelst >levelst.txt 2>&1 ||
  bad "the levels with a target failed: $(tail -3 levelst.txt)"
grep '^variant' levels1.txt levelst.txt
/usr/bin/python3 - <<'PY' && ok || bad "the diagonal's levels (lines above)"
import csv, sys
one, three = list(csv.DictReader(open("levels1/levels.csv"))), list(csv.DictReader(open("levels3/levels.csv")))
ok = [(r["L"], r["H"], r["L_coarse"], r["H_coarse"]) for r in one] == \
    [("1", "8", "0", "0"), ("2", "4", "1", "8"), ("4", "2", "2", "4")]
for a, b in zip(one, three):
    for k in ("mean", "var", "mean_fine", "var_fine", "kurtosis", "check"):
        if abs(float(a[k]) - float(b[k])) > 2e-6 * abs(float(a[k])) + 1e-12:
            print(f'level {a["level"]}: {k} {a[k]} on 1 rank, {b[k]} on 3'); ok = False
for r in one[1:]:
    if not float(r["check"]) < 1 or not float(r["var"]) < 0.5 * float(r["var_fine"]):
        print(f'level {r["level"]}: check {r["check"]}, var {r["var"]} against the fine {r["var_fine"]}'); ok = False
fit = list(csv.DictReader(open("levelst/levels_fits.csv")))[0]
if not (fit["met"] == "met" and float(fit["half_width"]) <= 0.02):
    print(f'the target: {fit["half_width"]} {fit["met"]}'); ok = False
if not any(int(r["samples"]) > 1500 for r in csv.DictReader(open("levelst/levels.csv"))):
    print("the allocation drew no more than the pilot"); ok = False
sys.exit(0 if ok else 1)
PY
expect 2 'study.levels takes one study.H' -- "$MFT" "${levels[@]}" --study.H "2 4" --study.dir bad
expect 2 'study.levels takes depths that double' -- "$MFT" "${levels[@]}" --study.L "1 3" --study.dir bad
expect 2 'limit.paths does not apply to study.levels' -- "$MFT" "${levels[@]}" --limit.paths 10 --study.dir bad
expect 0 '' -- "$MFT" "${levels[@]}" --study.dir listed --list
grep -q '^3 levels in listed$' out.txt && grep -q '^time on 1 ranks, priced from a .* pilot on 1: about [0-9.e+-]* s' out.txt &&
  ok || bad "the listing of the levels: $(tail -2 out.txt)"
# A study over the head dimension (study.k, g = 1/2, beta = 2): the gap of
# the 2 x 2 x k model to the same model of infinite heads falls with k (k = 1's
# interval above k = 4's), on 1 and 3 ranks to the table's digits; a
# grid of two H and g = 0 are refused.
ks=(study --model.depth_exponent 0.5 --model.head_exponent 0.5 --model.d 4 --model.beta 2
    --model.logit_exponent 0.5 --data.N 4 --study.probe_M 2 --study.L 2 --study.H 2 --study.k "1 4"
    --study.samples 4000 --limit.paths 4000)
for np in 1 3; do
  mpiexec --oversubscribe -n $np "$MFT" "${ks[@]}" --study.dir ks$np >ks$np.txt 2>&1 ||
    bad "the study over k on $np ranks failed: $(tail -3 ks$np.txt)"
done
grep '^variant' ks1.txt
/usr/bin/python3 - <<'PY' && ok || bad "the study over k (lines above)"
import csv, sys
one, three = list(csv.DictReader(open("ks1/law.csv"))), list(csv.DictReader(open("ks3/law.csv")))
ok = [r["k"] for r in one] == ["1", "4"]
for a, b in zip(one, three):
    for key in ("err_law", "err_law_lo", "err_law_hi"):
        if abs(float(a[key]) - float(b[key])) > 2e-6 * abs(float(a[key])) + 1e-12:
            print(f'k = {a["k"]}: {key} {a[key]} on 1 rank, {b[key]} on 3'); ok = False
if not float(one[0]["err_law_lo"]) > float(one[1]["err_law_hi"]):
    print(f'the gap does not fall from k = 1 ({one[0]["err_law_lo"]} ..) to k = 4 (.. {one[1]["err_law_hi"]})'); ok = False
sys.exit(0 if ok else 1)
PY
expect 2 'give one study.L and one study.H' -- "$MFT" "${ks[@]}" --study.H "2 4" --study.dir bad
expect 2 'infinite heads, which exist for model.logit_exponent 0.5 or above' -- \
  "$MFT" "${ks[@]}" --model.logit_exponent 0 --study.dir bad
expect 2 'study.seeds does not apply to a study in law' -- \
  mpiexec --oversubscribe -n 1 "$MFT" "${law[@]}" --study.seeds 2 --study.dir bad
expect 2 'study.samples does not apply here' -- \
  mpiexec --oversubscribe -n 1 "$MFT" "${law[@]}" --study.state trained --study.steps 2 --study.dir bad
expect 2 'limit.coupling does not apply here' -- "$MFT" limit --limit.coupling merged --output.file bad.h5
expect 2 'init.v_mean = 0.5 has no limit at a = c = 0.5' -- \
  mpiexec --oversubscribe -n 1 "$MFT" "${law[@]}" --init.v_mean 0.5 --study.dir bad
expect 2 'a = 0.25, c = 0.25 has neither' -- \
  mpiexec --oversubscribe -n 1 "$MFT" "${law[@]}" --model.depth_exponent 0.25 --model.head_exponent 0.25 \
    --study.dir bad
finish
