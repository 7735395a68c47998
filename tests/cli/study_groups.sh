#!/usr/bin/env bash
# A study's cases on groups of ranks (study.schedule = groups, study_plan.hpp):
# - on 3 and 4 ranks, every case file equals the serial run's to 1e-12 and
#   study.csv and fits.csv to 1e-9;
# - a rerun keeps every finished case (and redoes one whose file is damaged
#   or whose settings changed);
# - a variant whose cases fail is named, and no other case is lost;
# - SIGUSR1 mid-study checkpoints every running case, exit 75, and the same
#   command resumes them to the uninterrupted run's results;
# - --list prices every case, and --study.plan_cores plans the study.
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh" "$1"
run() { local n=$1; shift; mpiexec --oversubscribe -n "$n" "$MFT" "$@"; }
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
log_every = 100000
[study]
L = 1 2 4
H = 2 4
seeds = 2
state = trained
steps = 30
times = 10
reference_L = 16
reference_H = 16
references = 2
probe_M = 2
variants = model.causal=false; model.causal=true
CFG
# Compares two studies: every case file's datasets (relative to each array's
# largest entry) and the numbers of study.csv and fits.csv.
same_study() {
  /usr/bin/python3 - "$@" <<'PY'
import csv, glob, os, sys, h5py, numpy as np
a, b, tol_case, tol_table = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
names = sorted(os.path.basename(f) for f in glob.glob(a + "/case-*.h5"))
if not names or names != sorted(os.path.basename(f) for f in glob.glob(b + "/case-*.h5")):
    sys.exit("different case files")
def sets(f):
    out = {}
    f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
for n in names:
    with h5py.File(a + "/" + n) as fa, h5py.File(b + "/" + n) as fb:
        x, y = sets(fa), sets(fb)
    assert sorted(x) == sorted(y), n
    for k in x:
        scale = max(np.nanmax(np.abs(x[k])), 1e-300)
        if not np.allclose(x[k], y[k], rtol=0, atol=tol_case * scale, equal_nan=True):
            sys.exit("%s %s differs by more than %g" % (n, k, tol_case))
for t in ("study.csv", "fits.csv"):
    ra, rb = list(csv.reader(open(a + "/" + t))), list(csv.reader(open(b + "/" + t)))
    assert len(ra) == len(rb) > 1, t
    for u, v in zip(ra, rb):
        for p, q in zip(u, v):
            try:
                x, y = float(p), float(q)
            except ValueError:
                assert p == q, (t, p, q)
                continue
            if not (np.isnan(x) and np.isnan(y)) and abs(x - y) > tol_table * max(abs(x), abs(y), 1e-300):
                sys.exit("%s: %s against %s" % (t, p, q))
PY
}

# 1. Groups on 3 and 4 ranks against the serial run on 2.
expect 0 "" -- run 2 study --config base.cfg --study.schedule serial --study.dir serial
for n in 3 4; do
  expect 0 "" -- run $n study --config base.cfg --study.dir g$n
  grep -q "mft study: 28 cases on $n ranks in groups of" out.txt && ok || bad "$n ranks: no plan line"
  grep -q "done in .* on 1 rank$" out.txt && ok || bad "$n ranks: no case ran on a group of 1 rank"
  same_study serial g$n 1e-12 1e-9 && ok || bad "$n ranks: the groups' results differ from the serial run's"
done
ls g3 | grep -q '\.claim$' && bad "claims are left in the study folder" || ok

# 2. A rerun keeps the finished cases; a damaged file or a changed setting is run again.
offset=$(h5dump -p -H -d /probes/discrete/tokens g3/case-5.h5 | sed -n 's/.*OFFSET \([0-9]*\).*/\1/p')
printf '\x5a' | dd of=g3/case-5.h5 bs=1 seek=$((offset + 9)) conv=notrunc status=none
expect 0 "" -- run 3 study --config base.cfg --study.dir g3
grep -q "27 cases kept from a run before" out.txt && ok || bad "the rerun did not keep the 27 finished cases"
[ "$(grep -c ' done in ' out.txt)" -eq 1 ] && grep -q "^case 5 .* done in" out.txt && ok || bad "the rerun did not redo only case 5"
expect 0 "" -- run 3 study --config base.cfg --study.dir g3 --train.lr 0.03 --study.only "0 2-4"
grep -q "kept from a run before" out.txt && bad "cases of another train.lr were kept" || ok
[ "$(grep -c ' done in ' out.txt)" -eq 4 ] && grep -q "^case 3 .* done in" out.txt && ok ||
  bad "study.only \"0 2-4\" did not run cases 0, 2, 3 and 4"
expect 2 "study.only '5-3' is not a case or a range a-b of cases" -- \
  "$MFT" study --config base.cfg --study.dir g3 --study.only "1 5-3"

# 3. Failed cases are named; no other case is lost.
expect 0 "" -- run 3 study --config base.cfg --study.variants "model.beta=1; model.beta=-1" --study.dir failing
[ "$(grep -c 'failed: model.beta must be at least 0, got -1' out.txt)" -eq 14 ] && ok || bad "the 14 failed cases are not all named"
[ "$(ls failing/case-*.h5 | wc -l)" -eq 14 ] && ok || bad "a case of the good variant was lost"

# 4. SIGUSR1 mid-study: every running case checkpoints; the same command resumes them.
long=(--config base.cfg --study.steps 3000 --study.times 1000 --study.variants "" --study.dir sig)
# Long training amplifies round-off: the straight run is on the same groups (each case on 1 rank).
expect 0 "" -- run 3 study "${long[@]}" --study.dir straight
mpiexec --oversubscribe -n 3 "$MFT" study "${long[@]}" > sig.txt 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ "$(grep -c 'restarting\|no valid checkpoint' sig.txt)" -ge 3 ] && break
  sleep 0.05
done
sleep 0.5
kill -USR1 $pid
wait $pid
code=$?
[ "$code" -eq 75 ] && ok || bad "SIGUSR1: exit $code, expected 75"
stopped=$(grep -c "stopped by a signal after a checkpoint" sig.txt)
[ "$stopped" -ge 2 ] && ok || bad "SIGUSR1: $stopped cases checkpointed, expected every running one (2 or 3)"
[ "$(ls -d sig/case-*-checkpoints 2>/dev/null | wc -l)" -eq "$stopped" ] && ok || bad "SIGUSR1: the checkpoints are not the stopped cases'"
expect 0 "" -- run 3 study "${long[@]}"
[ "$(grep -c 'restarting from .*checkpoint-' out.txt)" -eq "$stopped" ] && ok || bad "the rerun did not resume every stopped case"
same_study straight sig 1e-12 1e-9 && ok || bad "the resumed study differs from the uninterrupted one"

# 5. Plans: every case priced; the plan on 64 cores, and its Slurm tasks cover every case once.
expect 0 "" -- "$MFT" study --config base.cfg --list --study.plan_cores 64 --study.task_seconds 1
[ "$(grep -c '^case .*: [0-9.e+-]* core-seconds; on [0-9]* ranks\? ' out.txt)" -eq 28 ] && ok || bad "--list does not price and place the 28 cases"
grep -qE '^plan on 64 cores: groups of .* ranks; makespan [0-9.e+-]+ s .*efficiency [0-9.]+$' out.txt && ok || bad "no plan line"
[ "$(sed -n 's/^slurm-task .*cases=//p' out.txt | tr ',' '\n' | sort -n | uniq | wc -l)" -eq 28 ] && ok || bad "the Slurm tasks do not cover the 28 cases"
[ "$(sed -n 's/^slurm-task .*cases=//p' out.txt | tr ',' '\n' | wc -l)" -eq 28 ] && ok || bad "a case is in two Slurm tasks"
[ "$(tail -n 1 out.txt)" = "28 cases in study" ] && ok || bad "--list's last line changed"
finish
