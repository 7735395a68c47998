#!/usr/bin/env bash
# Checkpoints and restart, as a cluster job meets them: a restarted run is the
# run it interrupted (bitwise on the same ranks, 1e-12 on others), whether it
# was stopped, signalled or killed; damaged checkpoints are never loaded.
source "$(dirname "$0")/lib.sh" "$1"
run2="mpiexec --oversubscribe -n 2 $MFT"
base=(--model.L 4 --model.H 6 --model.d 4 --model.k 2 --data.M 5 --data.N 6 --init.v_mean 0.5
      --train.optimizer adamw --train.lr 0.01 --train.weight_decay 0.01 --train.batch 3
      --train.schedule cosine --train.warmup 5 --train.steps 40 --checkpoint.every 10 --train.log_every 1000)

# same FILE_A FILE_B [h5diff options]: every array of the two run files agrees.
same() {
  local a="$1" b="$2"
  shift 2
  for ds in /params/Q /params/K /params/V /optimizer/m/Q /optimizer/v/V /history/loss /history/max_param_norm \
            /output/tokens /grad/K; do
    if ! h5diff "$@" "$a" "$b" "$ds" >/dev/null 2>&1; then bad "$ds differs between $a and $b ($*)"; return; fi
  done
  ok
}

# 1. 40 steps straight, and 20 + restart + 20: identical bits.
expect 0 "" -- $run2 train "${base[@]}" --checkpoint.dir straight --output.file straight.h5
expect 0 "" -- $run2 train "${base[@]}" --checkpoint.dir halves --output.file half.h5 --train.steps 40 --train.log_every 1000 --checkpoint.every 20
rm -f halves/checkpoint-00000040.h5
cp halves/checkpoint-00000020.h5 at20.h5
expect 0 "" -- $run2 train "${base[@]}" --checkpoint.dir halves --restart auto --output.file resumed.h5
grep -q "restarting from halves/checkpoint-00000020.h5 at step 20" out.txt && ok || bad "did not restart at step 20"
same straight.h5 resumed.h5
# ... and on 3 ranks (other grid shapes) from a 2-rank checkpoint: round-off.
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" train "${base[@]}" --restart at20.h5 \
  --checkpoint.dir three --output.file three.h5 --parallel.head_groups 3
same straight.h5 three.h5 --relative=1e-12
expect 0 "" -- "$MFT" train "${base[@]}" --restart at20.h5 --checkpoint.dir one --output.file one.h5
same straight.h5 one.h5 --relative=1e-12
# A checkpoint written before model.norm existed (no such attribute) restarts
# as the default, none; a run asking for another norm is refused.
cp at20.h5 old.h5
/usr/bin/python3 -c "import h5py; f = h5py.File('old.h5', 'a'); del f.attrs['model.norm']"
expect 0 "" -- $run2 train "${base[@]}" --restart old.h5 --checkpoint.dir old --output.file old_resumed.h5
same straight.h5 old_resumed.h5
expect 2 "model.norm = \\(absent\\) there but sphere now" -- \
  $run2 train "${base[@]}" --restart old.h5 --checkpoint.dir old2 --model.norm sphere

# 2. SIGUSR1 to the launcher (as Slurm's --signal does): checkpoint, exit 75, resume.
long=("${base[@]}" --train.schedule constant --checkpoint.every 0)
$run2 train "${long[@]}" --train.steps 10000000 --checkpoint.dir sig --output.file sig.h5 >sig.txt 2>&1 &
pid=$!
# Once the loop has begun (its header printed: the handlers are in place),
# however long the start took on a loaded machine.
for _ in $(seq 1 600); do grep -q '^ *step ' sig.txt 2>/dev/null && break; sleep 0.05; done
sleep 0.5
kill -USR1 $pid
wait $pid
code=$?
[ "$code" -eq 75 ] && ok || bad "SIGUSR1: exit $code, expected 75"
grep -q "caught SIGUSR1" sig.txt && ok || bad "SIGUSR1: no message"
at=$(ls sig/checkpoint-*.h5 2>/dev/null | sed -n 's/.*checkpoint-0*\([0-9]*\)\.h5/\1/p')
[ -n "$at" ] && ok || bad "SIGUSR1: no checkpoint"
# Resume to 50 steps beyond the signal, against a straight run of as many steps.
expect 0 "" -- $run2 train "${long[@]}" --train.steps $((at + 50)) --checkpoint.dir sig --restart auto --output.file sig.h5
expect 0 "" -- $run2 train "${long[@]}" --train.steps $((at + 50)) --checkpoint.dir sigref --output.file sigref.h5
same sigref.h5 sig.h5

# 3. SIGKILL at random moments, then --restart auto until done: the same result.
killed=0
for trial in 1 2 3 4; do
  dir=kill$trial
  for attempt in 1 2 3 4 5 6; do
    $run2 train "${base[@]}" --train.steps 1500 --checkpoint.every 7 --checkpoint.dir $dir --restart auto \
      --output.file $dir.h5 >/dev/null 2>&1 &
    pid=$!
    sleep "0.$((RANDOM % 9 + 1))"
    if kill -0 $pid 2>/dev/null; then
      pkill -KILL -P $pid; kill -KILL $pid 2>/dev/null
      killed=$((killed + 1))
    fi
    wait $pid 2>/dev/null
    [ -e $dir.h5 ] && break
  done
  expect 0 "" -- $run2 train "${base[@]}" --train.steps 1500 --checkpoint.every 7 --checkpoint.dir $dir --restart auto --output.file $dir.h5
  [ $trial -eq 1 ] && expect 0 "" -- $run2 train "${base[@]}" --train.steps 1500 --checkpoint.every 7 --checkpoint.dir killref --output.file killref.h5
  same killref.h5 $dir.h5
done
echo "SIGKILL landed $killed times in 4 trials"
[ $killed -ge 4 ] && ok || bad "only $killed kills landed"
# ... and killed while a checkpoint is being written (large heads: a slow write).
big=(--model.L 48 --model.H 48 --model.d 16 --model.k 8 --data.M 2 --data.N 3 --train.optimizer adamw
     --train.lr 0.001 --train.steps 6 --checkpoint.every 2 --checkpoint.keep 1 --train.log_every 1000)
$run2 train "${big[@]}" --checkpoint.dir bigkill --output.file bigkill.h5 >/dev/null 2>&1 &
pid=$!
for i in $(seq 1 20000); do ls bigkill/*.tmp >/dev/null 2>&1 && break; done
pkill -KILL -P $pid; kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
ls bigkill/*.tmp >/dev/null 2>&1 && ok || bad "the kill did not land during a checkpoint write"
expect 0 "" -- $run2 train "${big[@]}" --checkpoint.dir bigkill --restart auto --output.file bigkill.h5
expect 0 "" -- $run2 train "${big[@]}" --checkpoint.dir bigref --output.file bigref.h5
h5diff bigref.h5 bigkill.h5 /params/V >/dev/null && ok || bad "killed during a write: result differs"

# 4. Damaged checkpoints: a flipped byte in the parameters, a truncated file.
cp straight/checkpoint-00000030.h5 flipped.h5
offset=$(h5dump -p -H -d /params/V flipped.h5 | sed -n 's/.*OFFSET \([0-9]*\).*/\1/p')
printf '\x5a' | dd of=flipped.h5 bs=1 seek=$((offset + 21)) conv=notrunc status=none
expect 2 "flipped.h5 is damaged: its checksum" -- "$MFT" train "${base[@]}" --restart flipped.h5
head -c 4000 straight/checkpoint-00000030.h5 > cut.h5
expect 2 "cannot restart from cut.h5" -- "$MFT" train "${base[@]}" --restart cut.h5
mkdir -p damaged && cp straight/checkpoint-00000030.h5 damaged/ && cp flipped.h5 damaged/checkpoint-00000035.h5
expect 0 "" -- $run2 train "${base[@]}" --checkpoint.dir damaged --restart auto --output.file d.h5
grep -q "skipping damaged/checkpoint-00000035.h5" out.txt && grep -q "restarting from damaged/checkpoint-00000030.h5" out.txt \
  && ok || bad "restart auto did not skip the damaged checkpoint"
same straight.h5 d.h5

# 5. Settings that change the run are refused; steps, output and logging may change.
expect 2 "model.H = 6 there but 8 now" -- "$MFT" train "${base[@]}" --model.H 8 --restart straight/checkpoint-00000030.h5
expect 2 "train.steps = 40 there but 50 now" -- "$MFT" train "${base[@]}" --train.steps 50 --restart straight/checkpoint-00000030.h5
expect 0 "" -- "$MFT" train "${base[@]}" --train.schedule constant --train.steps 40 --checkpoint.dir c1 --output.file c1.h5 --checkpoint.every 20
expect 0 "" -- "$MFT" train "${base[@]}" --train.schedule constant --train.steps 60 --train.log_every 7 --checkpoint.dir c1 --restart auto --output.file c2.h5
h5dump -H -d /history/loss c2.h5 | grep -q "( 60 )" && ok || bad "history did not continue to 60 entries"

# 6. A run that diverges leaves its last good checkpoint untouched.
expect 0 "" -- "$MFT" train "${base[@]}" --checkpoint.dir nan --output.file nan.h5 --train.steps 10
sum_before=$(md5sum nan/checkpoint-00000010.h5)
expect 3 "training diverged at step" -- "$MFT" train "${base[@]}" --train.optimizer adamw --train.schedule constant \
  --train.steps 60 --checkpoint.dir nan2 --output.file nan.h5 --train.optimizer gd --train.lr 1e8
cp nan/checkpoint-00000010.h5 nan2/ 2>/dev/null
[ "$(md5sum nan/checkpoint-00000010.h5)" = "$sum_before" ] && ok || bad "checkpoint changed"
ls nan2/*.tmp >/dev/null 2>&1 && bad "a diverged run left a temporary file" || ok
finish
