#!/usr/bin/env bash
# Bad input: a clear one-line error naming the problem, and exit code 2
# (3 for a diverged training); never a crash or a stack trace.
source "$(dirname "$0")/lib.sh" "$1"
run="mpiexec --oversubscribe -n 2 $MFT"
small=(--model.L 2 --model.H 2 --data.M 2 --data.N 3)

expect 2 "usage|command" -- "$MFT"
expect 2 "unknown command 'frobnicate'" -- "$MFT" frobnicate
expect 2 "unrecognised option '--model.Lx'" -- "$MFT" train --model.Lx 3
expect 2 "model.L must be at least 1" -- "$MFT" train --model.L -3
# An unquoted list would keep its first entry and drop the rest: refused.
expect 2 "'2' is neither an option nor an option's value \(--study.L takes one value; a list is one argument" -- \
  "$MFT" study --config "$(dirname "$0")/../../input/study_depth.cfg" --study.L 1 2 4 --list
expect 2 "'extra' is neither an option nor an option's value" -- "$MFT" train extra
expect 2 "model.H 'many' is not an integer" -- "$MFT" train --model.H many
expect 2 "scaled learning rate train.lr L\^-lr_depth_exponent H\^-lr_head_exponent = 0 at L = 16, H = 16" -- \
  "$MFT" train --model.L 16 --model.H 16 --train.lr_head_exponent 1e308 --train.steps 2
expect 2 "scaled learning rate train.lr L\^-mlp_lr_depth_exponent m\^-mlp_lr_width_exponent = inf" -- \
  "$MFT" train --model.mlp_width 4 --model.mlp_activation relu --train.mlp_lr_width_exponent -600 --train.steps 2
expect 0 "" -- "$MFT" train --model.k 9 --model.d 4 --train.steps 2 --output.file wide_keys.h5 # k is a sum index: k > d runs
expect 2 "train.lr must be greater than 0" -- "$MFT" train --train.lr 0
# The infinite head: a law at initialisation for g >= 1/2, trained by gradient
# descent's limit (qkv); AdamW, qkvo, a bench and differentiating it are refused.
expect 0 "" -- "$MFT" forward --model.k inf --model.logit_exponent 0.5 --output.file infinite.h5
grep -q " k=inf " out.txt && ok || bad "the infinite head's header does not say k=inf: $(head -n 1 out.txt)"
expect 2 "model.k = inf is the limit of k\^-g Q\^T K.*at g = 0 it grows without bound" -- "$MFT" forward --model.k inf
expect 0 "" -- "$MFT" train --model.k inf --model.logit_exponent 0.5 --train.steps 20 --output.file infinite_trained.h5
grep -q '"reduction"' out.txt && ok || bad "no summary of the infinite head's training"
expect 2 "by its limit of gradient descent, for qkv heads: give train.optimizer gd" -- \
  "$MFT" train --model.k inf --model.logit_exponent 0.5 --train.optimizer adamw
expect 2 "model.k = inf is the infinite head's law .*mft bench would train" -- \
  "$MFT" bench --model.k inf --model.logit_exponent 0.5
expect 2 "mft forward --gradient differentiates" -- "$MFT" forward --model.k inf --model.logit_exponent 1 --gradient
expect 2 "data.family 'cauchy'" -- "$MFT" forward --data.family cauchy
expect 2 "exceeds the largest vector" -- "$MFT" forward --data.M 1000000 --data.N 100000
expect 2 "cannot open config file 'missing.cfg'" -- "$MFT" train --config missing.cfg
printf '[model]\nL = 4\nlayers = 3\n' > typo.cfg
expect 2 "unrecognised option 'model.layers'" -- "$MFT" train --config typo.cfg
expect 2 "parallel.head_groups = 3 does not divide the 2 ranks" -- $run train --parallel.head_groups 3 "${small[@]}"
expect 2 "parallel.cut_sequences 'keys' is not one of auto\|tokens\|projections" -- "$MFT" train --parallel.cut_sequences keys
expect 2 "4 ranks are more than the 3 tokens times 1 heads can share" -- \
  mpiexec --oversubscribe -n 4 "$MFT" forward --model.H 1 --data.M 1 --data.N 3
# A sequence of 2^20 tokens cut in two, shared as the projections of 1024 heads: terabytes, refused before any work.
expect 2 "the exchanges need .* GiB a rank .* more than the .* GiB a rank has: use more ranks or parallel.cut_sequences = tokens" -- \
  $run forward --model.L 1 --model.H 1024 --model.d 64 --model.k 32 --data.M 1 --data.N 1048576 \
  --parallel.head_groups 1 --parallel.cut_sequences projections
# 100000 layers of 40000 tokens kept for the adjoint: 6.4e10 numbers, past 2^31; the estimate is formed in 64 bits
# and refuses it (it used to wrap, pass, and abort in the allocation).
expect 2 "the exchanges need 477 GiB a rank" -- \
  "$MFT" forward --gradient --model.L 100000 --model.H 1 --data.M 1 --data.N 40000 --model.d 16 --model.k 2
expect 2 "cannot open 'nothere.h5': no such file" -- $run train --data.file nothere.h5 "${small[@]}"
# A folder where a file is expected: refused before MPI-IO sees it (no lines of its own).
mkdir -p afolder
expect 2 "cannot open 'afolder': not a file" -- $run train --data.file afolder "${small[@]}"
grep -q "mca_\|fbtl" err.txt && bad "MPI-IO printed its own lines on a folder" || ok
expect 2 "config file 'afolder' is not a file" -- "$MFT" train --config afolder
# An output that cannot be written is refused before any work starts.
expect 2 "output.file cannot be written: no such folder 'no/such'" -- $run train --output.file no/such/run.h5 --checkpoint.dir ck_unwritable "${small[@]}"
[ ! -e ck_unwritable ] && ok || bad "a run with an unwritable output.file started training"
expect 2 "output.file cannot be written: 'afolder' is a folder" -- "$MFT" forward --output.file afolder
# A build for another CPU: one line, not SIGILL (the check pretends the CPU lacks what the build uses).
used=$(grep -o '^[a-z0-9]*' <<<"$(for f in avx512f avx2 fma avx; do MFT_TEST_CPU_LACKS=$f "$MFT" forward --help >/dev/null 2>&1 || { echo $f; break; }; done)")
if [ -n "$used" ]; then
  expect 2 "this build uses $used instructions, which this CPU lacks" -- env MFT_TEST_CPU_LACKS="$used" "$MFT" forward
else
  ok # a generic build (MFT_ARCH empty) uses none of them
fi
# A grid entry that is not a number (it used to abort the program).
expect 2 "study.L 'x' is not an integer" -- "$MFT" study --study.L "1 x"
expect 2 "study.H is empty" -- "$MFT" study --study.H " "
# Studies whose design cannot carry their figures are refused before any work.
expect 2 "reference's 64 heads \\(study.reference_H\\) are fewer than study.reference_margin = 4 times the largest H = 32" -- \
  "$MFT" study --study.state trained --study.L 2 --study.H "2 32" --study.reference_L 64 --study.reference_H 64 --study.dir s1
expect 2 "reference's 32 layers \\(study.reference_L\\) are fewer" -- \
  "$MFT" study --study.state trained --study.L "2 16" --study.H 2 --study.reference_L 32 --study.dir s1
expect 2 "reference's 1024 heads \\(limit.heads\\)" -- "$MFT" study --study.H "2 512" --limit.heads 1024 --study.dir s1
expect 2 "init.seed \\+ 2 = 5 is data.teacher_seed" -- "$MFT" study --study.state trained --init.seed 3 --data.teacher_seed 5 --study.dir s1
expect 2 "reference 1's seed init.seed \\+ 100003 = 100006 is data.teacher_seed" -- \
  "$MFT" study --study.state trained --init.seed 3 --data.teacher_seed 100006 --study.dir s1
expect 2 "data.teacher_perturbation = 0.1 in a trained study" -- "$MFT" study --study.state trained --data.teacher_perturbation 0.1 --study.dir s1
expect 2 "data.teacher_init 'v_mean' is not key=value" -- "$MFT" train --data.teacher_init "v_mean"
expect 2 "data.teacher_init q_gain: 'x' is not a number" -- "$MFT" train --data.teacher_init "q_gain=x"
expect 2 "data.teacher_init law: 'cauchy' is not one of gaussian|uniform" -- "$MFT" train --data.teacher_init "law=cauchy"
[ ! -e s1 ] && ok || bad "a refused study created its folder"
# A damaged file: the first kilobyte of a good run file.
expect 0 "" -- "$MFT" forward "${small[@]}" --output.file good.h5
head -c 1024 good.h5 > cut.h5
expect 2 "cut.h5" -- $run train --data.file cut.h5 "${small[@]}"
echo "not hdf5" > text.h5
expect 2 "cannot open 'text.h5' as an HDF5 file" -- "$MFT" forward --data.file text.h5
# A learning rate far too large: the risk becomes NaN; exit 3 names the step.
expect 3 "training diverged at step [0-9]+" -- $run train "${small[@]}" --train.steps 200 --train.lr 1e6 --init.v_mean 0.5
[ ! -e run.h5 ] && [ ! -e run.h5.tmp ] && ok || bad "a diverged run wrote a run file"
# Rough edges found by hand (issue 34): each one line, exit 2, before any work.
expect 2 "parallel.threads = 100000 is more than 1024 threads a rank" -- "$MFT" forward --parallel.threads 100000
/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('nan_targets.h5', 'w') as f:
    f['/data/tokens'] = np.ones((2, 3, 2))
    y = np.zeros((2, 3, 2)); y[1, 2, 0] = np.nan
    f['/data/targets'] = y
"
expect 2 "nan_targets.h5: /data/targets holds NaN or Inf" -- "$MFT" train --data.file nan_targets.h5 --train.steps 2
[ ! -e run.h5 ] && ok || bad "a refused run wrote run.h5"
expect 2 "study.L holds 2 twice" -- "$MFT" study --study.L "2 2" --study.dir twice
[ ! -e twice ] && ok || bad "a refused study made its folder"
# Normalized tokens (issue 35): a zero token has no direction; an unknown norm.
/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('zero_token.h5', 'w') as f:
    x = np.ones((2, 3, 2)); x[1, 2] = 0
    f['/data/tokens'] = x
    f['/data/targets'] = np.ones((2, 3, 2))
"
for norm in sphere pre; do
  expect 2 "model.norm = $norm: token 2 of sequence 1 is zero" -- "$MFT" train --data.file zero_token.h5 --model.norm $norm
done
expect 0 "" -- "$MFT" forward --data.file zero_token.h5 --output.file zero_none.h5 # without a norm it is a token
expect 2 "model.norm 'ball' is not one of none.sphere.pre" -- "$MFT" forward --model.norm ball
expect 2 "study.worst_N: 6 after 4 is not a larger multiple of it" -- \
  "$MFT" study --study.worst true --study.worst_N "1 4 6" --study.dir worst_n
expect 2 "study.worst_atoms = 8 is fewer than the largest N searched \\(16\\)" -- \
  "$MFT" study --study.worst true --study.worst_N "4 16" --study.worst_atoms 8 --study.dir worst_n
expect 2 "study.worst_atoms: a measure of weighted atoms has no order" -- \
  "$MFT" study --study.worst true --study.worst_atoms 8 --model.causal true --study.dir worst_n
[ ! -e run.h5 ] && [ ! -e worst_n ] && ok || bad "a refused run wrote its output"
# A plan for more cores than any machine has is refused; the most it takes is planned within minutes (it ran
# for hours). The references here have 256 heads: at the default 4096 the cost model prices each of up to a
# million ranks of their grids, a minute on 2 cores; with 256 the plan is the same kind (3 sizes of groups,
# tens of thousands of them), in about a second.
expect 2 "study.plan_cores must be at most 1048576, got 100000000" -- "$MFT" study --list --study.plan_cores 100000000
expect 0 "" -- timeout 300 "$MFT" study --list --study.plan_cores 1048576 --limit.heads 256 --study.dir plan_big
grep -q "^plan on 1048576 cores" out.txt && ok || bad "no plan on 1048576 cores: $(tail -2 out.txt)"
# A config saved with a UTF-8 byte-order mark (as Windows editors do) reads as without it.
printf '\xef\xbb\xbf[model]\r\nL = 2\r\n' > bom.cfg
expect 0 "" -- "$MFT" forward --config bom.cfg --output.file bom.h5
grep -q "L=2 " out.txt && ok || { bad "the BOM config's L = 2 was not read"; cat out.txt; }
# Options that would do nothing are refused, not ignored.
expect 2 "mft worst searches inputs of its own .* it reads no data.file" -- \
  "$MFT" worst --params.file any.h5 --worst.references any.h5 --data.file any.h5
expect 2 "worst.radius = 3 does not apply to model.norm = sphere" -- \
  "$MFT" study --study.worst true --model.norm sphere --worst.radius 3 --study.dir sphere_radius
expect 2 "study.worst_atoms = 4 without study.worst = true" -- "$MFT" study --study.worst_atoms 4 --study.dir no_search
expect 2 "limit.adjoint_heads = 100000 exceeds limit.heads = 256" -- \
  "$MFT" limit --limit.fluctuation true --limit.heads 256 --limit.adjoint_heads 100000
expect 2 "limit.sample_heads = 300 exceeds limit.heads = 256" -- \
  "$MFT" limit --limit.fluctuation true --limit.heads 256 --limit.sample_heads 300
# A request that cannot finish is priced and refused before any work (it ran for hours).
expect 2 "limit.fluctuation would hold .* GiB a rank \(the exact trace: N d = 1280000 probe vectors.* set limit.probes" -- \
  "$MFT" limit --limit.fluctuation true --data.N 20000 --model.d 64
# Help lists every option with its default, exit 0.
expect 0 "" -- "$MFT" train --help
grep -q -- "--model.L arg (=8)" out.txt && ok || bad "--help does not list model.L with its default"
finish
