#!/usr/bin/env bash
# The diffusive regime from the command line: input/diffusive.cfg's samples
# and limit on 2 ranks (their files' layout, the rank count changes no
# sample), the exponents recorded and taken from a params file, and the
# refusals of what has no limit.
source "$(dirname "$0")/lib.sh" "$1"
cfg="$2/diffusive.cfg"
small=(--model.L 16 --model.H 4)
samples=(--init.samples 64)
paths=(--limit.paths 64 --limit.steps 8 --limit.step_heads 4)

expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" forward --config "$cfg" "${small[@]}" "${samples[@]}" --output.file s2.h5
grep -q '^mft-summary .*"samples": 64' out.txt && ok || bad "no summary of 64 samples"
expect 0 "" -- "$MFT" forward --config "$cfg" "${small[@]}" "${samples[@]}" --output.file s1.h5
h5ls s2.h5/output | grep -q 'samples *Dataset {64, 2, 8, 4}' && ok || bad "/output/samples is not (S, M, N, d)"
h5ls s2.h5/output | grep -q 'gram_stderr *Dataset {2, 8, 8}' && ok || bad "/output/gram_stderr is not (M, N, N)"
# A sample is computed on one rank whatever the rank count: the same binary gives the same numbers.
h5diff -q s1.h5 s2.h5 /output/samples /output/samples && ok || bad "2 ranks changed the samples"
# Each rank writes its block of the samples: 3 ranks, the same samples; the
# Gram means are sums over ranks, the same to round-off (1e-12 relative).
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" forward --config "$cfg" "${small[@]}" "${samples[@]}" --output.file s3.h5
h5diff -q s1.h5 s3.h5 /output/samples /output/samples && ok || bad "3 ranks changed the samples"
h5diff -q -p 1e-12 s1.h5 s3.h5 /output/gram_mean /output/gram_mean && ok || bad "3 ranks moved the Gram means"
h5diff -q -p 1e-12 s1.h5 s3.h5 /output/gram_stderr /output/gram_stderr && ok || bad "3 ranks moved the standard errors"
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" forward --config "$cfg" "${small[@]}" "${samples[@]}" \
  --output.samples false --output.file nos.h5
! h5ls nos.h5/output | grep -q '^samples' && h5ls nos.h5/output | grep -q gram_mean && ok ||
  bad "output.samples = false still wrote the samples"
h5dump -a model.depth_exponent s2.h5 | grep -q '(0): 0.5' && ok || bad "the run file does not record model.depth_exponent"

expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" limit --config "$cfg" "${small[@]}" "${paths[@]}" \
  --limit.coupling independent --output.file l.h5
grep -q '^mft-summary .*"regime": "diffusive".*"fine_steps": 16' out.txt && ok || bad "no diffusive summary"
h5dump -a limit.pair l.h5 | grep -q '"independent"' && ok || bad "the independent pair is not said in the file"
for ds in 'samples *Dataset {64, 2, 8, 4}' 'samples_coarse *Dataset {64, 2, 8, 4}' 'gram_mean *Dataset {2, 8, 8}'; do
  h5ls l.h5/limit | grep -q "$ds" && ok || bad "/limit lacks $ds"
done

# The limit's paths on 1 and 3 ranks: the same paths, the same Gram means to round-off.
for np in 1 3; do
  expect 0 "" -- mpiexec --oversubscribe -n $np "$MFT" limit --config "$cfg" "${small[@]}" "${paths[@]}" \
    --limit.coupling halves --output.file l$np.h5
done
h5diff -q l1.h5 l3.h5 /limit/samples /limit/samples && h5diff -q l1.h5 l3.h5 /limit/samples_coarse \
  /limit/samples_coarse && ok || bad "3 ranks changed the limit's paths"
h5diff -q -p 1e-12 l1.h5 l3.h5 /limit/gram_mean /limit/gram_mean && ok || bad "3 ranks moved the limit's Gram means"
h5dump -a limit.pair l3.h5 | grep -q '"halves"' && ok || bad "the limit file does not say how its pair is coupled"
# halves is the default: an odd step count of heads is refused, and the way out said.
expect 2 "limit.step_heads must be even \\(given 3\\), or give limit.coupling independent" -- "$MFT" limit \
  --config "$cfg" "${small[@]}" --limit.step_heads 3

# A model at a = c = 1/2 evaluated from its run file keeps its exponents.
expect 0 "" -- "$MFT" forward --config "$cfg" --model.L 4 --model.H 2 --init.samples 0 --output.file one.h5
expect 0 "" -- "$MFT" forward --params.file one.h5 --data.M 2 --data.N 8 --output.file again.h5
h5diff -q one.h5 again.h5 /output/tokens /output/tokens && ok || bad "the params file's exponents were not taken"

# The mean-field limit of centred heads is the identity, and mft limit says so.
expect 0 "" -- "$MFT" limit --limit.heads 32 --output.file ode.h5
grep -q 'limit velocity is zero' out.txt && grep -q '"limit_velocity": "zero"' out.txt && ok || bad "no word of a zero velocity"
expect 0 "" -- "$MFT" limit --limit.heads 32 --init.v_mean 1 --output.file ode.h5
grep -q '"limit_velocity": "nonzero"' out.txt && ! grep -q 'limit velocity is zero' out.txt && ok ||
  bad "a nonzero velocity called zero"

# What has no limit, or no meaning, is refused in one line.
expect 2 "computes the mean-field ODE .* and the diffusive" -- "$MFT" limit --model.depth_exponent 0.75 \
  --model.head_exponent 0.75
expect 2 "value maps of mean zero" -- "$MFT" limit --config "$cfg" --init.v_mean 0.5
expect 2 "error's law of the mean-field" -- "$MFT" limit --config "$cfg" --limit.fluctuation true
expect 2 "study at initialisation" -- "$MFT" study --config "$2/study_depth.cfg" --model.depth_exponent 0.5 --list
expect 2 "draws the heads anew" -- "$MFT" forward --params.file one.h5 --init.samples 4
expect 0 "" -- "$MFT" forward --model.L 8 --output.file mean_field.h5
expect 2 "exponents a = 1, c = 1, params.file one.h5 one with a = 0.5" -- "$MFT" worst --params.file one.h5 \
  --worst.references mean_field.h5
expect 2 "model.depth_exponent" -- "$MFT" forward --model.depth_exponent 0
# A drift that grows with L is said once, and the run goes on.
expect 0 "" -- "$MFT" forward --model.depth_exponent 0.5 --init.v_mean 1 --output.file drift.h5
[ "$(grep -c 'warning: value maps of mean init.v_mean = 1 .*grows without bound' out.txt)" -eq 1 ] && ok ||
  bad "no single warning of the drift"
finish
