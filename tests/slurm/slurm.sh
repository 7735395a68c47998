#!/usr/bin/env bash
# On a real Slurm (single node on localhost, started here and stopped after):
# jobs/train.sbatch, signalled (USR1 to the batch shell, as --signal=B:USR1
# sends it) before it ends, must checkpoint, requeue, resume and finish with
# the same parameters as an uninterrupted run; jobs/sweep.sh's array runs and its
# dependent aggregation job writes the table, naming the case that failed;
# a convergence study runs as array jobs of cases packed by cost (one array per
# size of rank group) and its aggregation job after them.
# Where Slurm cannot start, the test says so and is skipped (exit 77).
top="$(cd "$(dirname "$0")/../.." && pwd)"
source "$top/tests/cli/lib.sh" "$1"
conf=$(bash "$top/tests/slurm/cluster.sh" start "$work/cluster" 2>&1)
if [ $? -ne 0 ]; then
  echo "SKIPPED: Slurm cannot start on this machine: $conf"
  exit 77
fi
export SLURM_CONF="$conf"
trap 'bash "$top/tests/slurm/cluster.sh" stop "$work/cluster"; rm -rf "$work"' EXIT
echo "slurm: $(sinfo -h -o '%P %a %D %t %c')"

# wait_job ID SECONDS: until the job is finished; prints its final state.
wait_job() {
  local state=""
  for _ in $(seq 1 "$2"); do
    state=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL) break ;; esac
    sleep 1
  done
  echo "$state"
}

# 1. A training job signalled before its end: checkpoint, requeue, resume.
# The signal is what --signal=B:USR1@T gives train.sbatch on a cluster: USR1
# to the batch shell. It is sent with scancel once mft has written its first
# checkpoints, not left to a short time limit: Slurm checks --signal's time
# only every 30-60 s, and on a 1-minute limit it once came 2 s before the
# limit, whose SIGTERM then ended mpiexec (seen in CI). The job (800
# quickstart steps, about 11 s on 2 cores alone, longer beside other tests)
# is still running when it comes, 1 s after its first checkpoint (step 50).
args="--train.steps 800 --checkpoint.every 50 --train.log_every 1000"
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" train --config "$top/input/quickstart.cfg" $args \
  --checkpoint.dir ref.ckpt --output.file ref.h5
job=$(sbatch --parsable --time=5 --signal=B:USR1@10 --ntasks=2 --output="$work/job.out" \
  --export=ALL,MFT_HOME="$top",MFT="$MFT",MFT_CONFIG="$top/input/quickstart.cfg",MFT_ARGS="$args --checkpoint.dir $work/job.ckpt --output.file $work/job.h5" \
  "$top/jobs/train.sbatch")
for _ in $(seq 1 1500); do
  ls "$work"/job.ckpt/checkpoint-*.h5 >/dev/null 2>&1 && break
  sleep 0.2
done
sleep 1
scancel --batch --signal=USR1 "$job" && ok || bad "scancel could not signal job $job"
state=$(wait_job "$job" 900)
restarts=$(scontrol show job "$job" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
echo "slurm: job $job ended $state after $restarts requeues"
grep -E '^mft-train|^mft:|^restarting' job.out | sed 's/^/  | /'
[ "$state" = COMPLETED ] && ok || bad "the training job ended $state"
[ "${restarts:-0}" -ge 1 ] && ok || bad "the training job was never requeued"
grep -q "caught SIGUSR1 after step" job.out && ok || bad "mft never checkpointed on the signal"
grep -q "^restarting from .*checkpoint-" job.out && ok || bad "no run resumed from a checkpoint"
grep -q '"status": "done"' job.out && ok || bad "no run finished"
for ds in /params/Q /params/K /params/V /history/loss /output/tokens; do
  h5diff ref.h5 job.h5 $ds >/dev/null 2>&1 && ok || bad "$ds differs from the uninterrupted run"
done

# 2. A sweep: a job array of 4 cases (one with a bad value) and the aggregation after it.
export MFT MFT_HOME="$top" MFT_CONFIG="$top/input/qkv_token.cfg" MFT_ARGS="--train.steps 20" MFT_SWEEP_DIR="$work/sweep"
# A 5-minute limit takes the signal time with it: sweep.sbatch's USR1@300
# would be due at the start, and a case still starting when Slurm looks
# (beside other tests) was signalled and never finished (seen once).
submitted=$(bash "$top/jobs/sweep.sh" train.lr "0.5 1 2 -1" --ntasks=1 --time=5 --signal=B:USR1@60)
echo "slurm: $submitted"
aggregate=$(sed -n 's/.*aggregation job \([0-9]*\).*/\1/p' <<<"$submitted")
state=$(wait_job "$aggregate" 600)
echo "slurm: aggregation job $aggregate ended $state"
cat sweep/table.csv 2>/dev/null | sed 's/^/  | /'
[ "$(grep -c ',done,' sweep/table.csv 2>/dev/null)" -eq 3 ] && ok || {
  bad "the table lacks the 3 finished cases"
  for log in sweep/case-*.log sweep/aggregate.log; do echo "  $log:"; tail -n 5 "$log" 2>/dev/null | sed 's/^/  | /'; done; }
grep -q '^3,-1,missing' sweep/table.csv && ok || bad "the failed case is not in the table"
grep -q "case 3 (train.lr = -1) did not finish" sweep/aggregate.log && ok || bad "the failed case is not named"
grep -q "train.lr must be greater than 0" sweep/case-3.log && ok || bad "the failed case's log lacks its error"
# 3. A convergence study as array jobs of cases packed by cost (one array per
# size of rank group), and its aggregation after them.
cat > study.cfg <<CFG
[model]
d = 2
k = 1
[data]
N = 4
[init]
v_mean = 0.5
[limit]
heads = 128
[study]
L = 1 2
H = 2 4
seeds = 2
probes = discrete
probe_M = 2
dir = $work/study
CFG
submitted=$(MFT_HOME="$top" MFT_PLAN_CORES=2 MFT_ARGS="--study.task_seconds 0.05" bash "$top/jobs/study.sh" study.cfg \
  --slurm --time=5)
echo "$submitted" | sed 's/^/  | /'
aggregate=$(sed -n 's/.*aggregation job \([0-9]*\).*/\1/p' <<<"$submitted")
state=$(wait_job "$aggregate" 600)
echo "slurm: study aggregation job $aggregate ended $state"
[ "$state" = COMPLETED ] && ok || bad "the study's aggregation job ended $state"
[ "$(grep -c '^study: array job [0-9]*: [0-9]* tasks of [0-9]* rank' <<<"$submitted")" -ge 1 ] && ok || bad "no array job submitted"
tasks=$(cat study/tasks-*.txt 2>/dev/null | wc -l)
[ "$tasks" -ge 2 ] && ok || bad "the 12 cases were not packed into several tasks ($tasks)"
[ "$(cat study/tasks-*.txt | tr ' ' '\n' | grep -c .)" -eq 12 ] && [ "$(cat study/tasks-*.txt | tr ' ' '\n' | sort -un | grep -c .)" -eq 12 ] \
  && ok || bad "the tasks do not hold each of the 12 cases once"
[ "$(ls study/case-*.h5 2>/dev/null | wc -l)" -eq 12 ] && ok || bad "the array tasks did not write the 12 case files"
[ "$(grep -c '^0,"",' study/study.csv 2>/dev/null)" -eq 4 ] && ok || bad "the study table lacks its 4 cells"
[ -s study/study_v0_tokens.png ] && ok || bad "no study plot"
finish
