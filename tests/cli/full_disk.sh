#!/usr/bin/env bash
# A full disk under checkpoint.dir or output.file: one line naming the file,
# its size and the cause, exit 2, no partial .tmp left, on 1 and 2 ranks (a
# file's room is reserved before its first write: inside a collective write
# HDF5 may fail on one rank alone and leave the other waiting forever); the checkpoints written before stay, and once there is room again
# `--restart auto` finishes the run as if nothing had happened (bitwise).
# The disk is a 300 KiB tmpfs: where it cannot be mounted (not root, no
# CAP_SYS_ADMIN), the test says so and is skipped (exit 77).
source "$(dirname "$0")/lib.sh" "$1"
mkdir disk
if ! mount -t tmpfs -o size=300k tmpfs disk 2>/dev/null; then
  echo "SKIP: cannot mount a small tmpfs here (needs root with CAP_SYS_ADMIN)"
  exit 77
fi
trap 'umount "$work/disk" 2>/dev/null; rm -rf "$work"' EXIT
base=(--config "$(dirname "$0")/../../input/qkv_token.cfg" --model.L 8 --model.H 16 --train.steps 40
      --checkpoint.every 10 --train.log_every 1000)

for np in 1 2; do
  run="timeout 120 mpiexec --oversubscribe -n $np $MFT"
  rm -rf disk/* straight
  expect 0 "" -- $run train "${base[@]}" --checkpoint.dir straight --output.file straight.h5
  # A checkpoint of this model is 164 KB: the second does not fit.
  expect 2 "cannot write 'disk/ck/checkpoint-00000020\.h5\.tmp' \([0-9.]+ MB\): no space left on the device" -- \
    $run train "${base[@]}" --checkpoint.dir disk/ck --output.file out.h5
  [ -z "$(find disk -name '*.tmp')" ] && ok || bad "$np ranks: a partial file stayed: $(find disk -name '*.tmp')"
  [ -f disk/ck/checkpoint-00000010.h5 ] && ok || bad "$np ranks: the checkpoint of step 10 is gone"
  # Room again: the run resumes from step 10 and ends where the straight one did.
  mount -o remount,size=4m disk
  expect 0 "" -- $run train "${base[@]}" --checkpoint.dir disk/ck --output.file resumed.h5 --restart auto
  grep -q "restarting from disk/ck/checkpoint-00000010.h5 at step 10" out.txt && ok || bad "$np ranks: no restart at 10"
  for ds in /params/Q /params/V /history/loss /output/tokens; do
    h5diff straight.h5 resumed.h5 "$ds" >/dev/null 2>&1 && ok || bad "$np ranks: $ds differs after the resume"
  done
  # The run file itself on the full disk (no checkpoints).
  rm -rf disk/*
  mount -o remount,size=300k disk
  head -c 250k /dev/zero > disk/filler 2>/dev/null
  expect 2 "cannot write 'disk/run\.h5\.tmp' \([0-9.]+ MB\): no space left on the device" -- \
    $run train "${base[@]}" --checkpoint.every 0 --output.file disk/run.h5
  [ -z "$(find disk -name '*.tmp')" ] && ok || bad "$np ranks: a partial run file stayed"
done
finish
