#!/usr/bin/env bash
# mft ntk and mft lse from the command line, and the global-convergence run:
# the risk falls by at least 1e4 along a straight line in log R, at the rate
# the NTK predicts, with MLP sublayers too.
source "$(dirname "$0")/lib.sh" "$1"
inputs="$2"
field() { grep '^mft-summary ' out.txt | tail -n 1 | sed -nE "s/.*\"$1\": \"?([^,\"}]*)\"?.*/\1/p"; }
check() { awk -v v="$2" "BEGIN { exit !($3) }" && ok || bad "$1: $2 fails $3"; }

expect 0 "" -- "$MFT" train --config "$inputs/global_convergence.cfg" --output.file gc.h5
check "reduction" "$(field reduction)" "v >= 1e4"
check "fit residual" "$(field fit_rms)" "v < 1e-2"
predicted=$(field predicted_rate_steps)
check "fitted rate against $predicted" "$(field fitted_rate)" "v > 0.9 * $predicted && v < 1.1 * $predicted"
# With tanh MLP sublayers the NTK holds the neurons' part too (the heads' part
# alone predicts about 0.69 of the fitted rate); 1 and 3 ranks agree.
mlp=(--model.mlp_width 8 --model.mlp_activation tanh --init.mlp_w_mean 0.5 --init.mlp_b_gain 0.5)
expect 0 "" -- "$MFT" train --config "$inputs/global_convergence.cfg" "${mlp[@]}" --output.file gcm.h5
check "reduction (MLP)" "$(field reduction)" "v >= 1e4"
predicted=$(field predicted_rate_steps)
check "fitted rate against $predicted (MLP)" "$(field fitted_rate)" "v > 0.9 * $predicted && v < 1.1 * $predicted"
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" ntk --params.file gcm.h5 --output.file nm3.h5
expect 0 "" -- "$MFT" ntk --params.file gcm.h5 --output.file nm1.h5
h5diff --relative=1e-10 nm1.h5 nm3.h5 /ntk/eigenvalues >/dev/null && ok || bad "the NTK with MLP sublayers differs on 3 ranks"

expect 0 "" -- "$MFT" ntk --config "$inputs/ntk_discrete.cfg" --output.file n1.h5
[ "$(field positive_definite)" = true ] && ok || bad "the discrete NTK is not positive definite"
h5dump -H -d /ntk/matrix n1.h5 | grep -qF "( 4, 4 )" && ok || bad "no /ntk/matrix of shape (4, 4)"
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" ntk --config "$inputs/ntk_discrete.cfg" --output.file n3.h5
h5diff --relative=1e-10 n1.h5 n3.h5 /ntk/eigenvalues >/dev/null && ok || bad "NTK eigenvalues differ on 3 ranks"
# At the heads of a training run (--params.file), token loss, full part.
expect 0 "" -- "$MFT" train --config "$inputs/qkv_token.cfg" --train.steps 5 --data.M 2 --data.N 4 --output.file t.h5
expect 0 "" -- "$MFT" ntk --config "$inputs/qkv_token.cfg" --data.M 2 --data.N 4 --params.file t.h5 --ntk.part full --output.file nt.h5
h5dump -H -d /ntk/eigenvalues nt.h5 | grep -qF "( 64 )" && ok || bad "token-loss NTK is not 64 x 64"
expect 2 "needs .* GiB per rank, above ntk.max_gb" -- "$MFT" ntk --config "$inputs/ntk_discrete.cfg" --ntk.max_gb 1e-9
# The file's model settings are taken from it; a contradicting one is refused with both values.
expect 2 "model.d = 4 is given, but params.file t.h5 has model.d = 8" -- "$MFT" ntk --model.d 4 --model.k 2 --params.file t.h5 --output.file x.h5

expect 0 "" -- "$MFT" lse --config "$inputs/ntk_laplace.cfg" --lse.mode closed --output.file l.h5
check "laplace closed-form lse" "$(field relative_min)" "v > 0"
expect 2 "outside the closed form's domain" -- "$MFT" lse --config "$inputs/ntk_laplace.cfg" --lse.mode closed --lse.radius 3
finish
