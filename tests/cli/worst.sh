#!/usr/bin/env bash
# mft worst, checked against truths it does not compute itself.
# Usage: worst.sh MFT PART, PART one of
#   closed_form   N = 1: every layer is linear, x(1) = prod_l (I + Abar_l / L) x0, so the supremum over
#                 |x0| <= r is r sigma_max(D), D = the model's product minus the references' mean
#                 product (numpy, from the files' /params); mft worst must reach it to 1e-6 relative
#   random_bound  the search beats the best of 1000 random inputs in the ball (and every probe)
#   ranks         1, 2 and 3 ranks find the same input and figures (1e-9)
#   bad_input     radius <= 0, worst.starts 0, a missing or foreign reference, no model: one line, exit 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh" "$1"
part="$2"
run() { mpiexec --oversubscribe -n "$@"; }
summary() { grep '^mft-summary' "$1" | sed 's/^mft-summary //'; }
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(open('$1').read())['$2'])"; }

# A model and references from mft forward: initial heads of other seeds and sizes.
make_models() { # kind N extra...
  local kind="$1" N="$2"
  shift 2
  local common=(--model.head_kind "$kind" --model.d 4 --model.k 2 --data.M 1 --data.N "$N" --init.v_mean 0.5
                --init.v_gain 1.5 --init.q_gain 2 --init.k_gain 2 "$@")
  run 1 "$MFT" forward "${common[@]}" --model.L 3 --model.H 2 --init.seed 11 --output.file model.h5 >/dev/null &&
  run 1 "$MFT" forward "${common[@]}" --model.L 12 --model.H 16 --init.seed 21 --output.file ref1.h5 >/dev/null &&
  run 1 "$MFT" forward "${common[@]}" --model.L 12 --model.H 16 --init.seed 22 --output.file ref2.h5 >/dev/null &&
  run 1 "$MFT" forward "${common[@]}" --model.L 12 --model.H 16 --init.seed 23 --output.file ref3.h5 >/dev/null
}

case "$part" in
closed_form)
  for kind in qkv qkvo; do
    make_models "$kind" 1 || { bad "$kind: mft forward failed"; continue; }
    if ! run 2 "$MFT" worst --params.file model.h5 --worst.references "ref1.h5 ref2.h5" --worst.crossfit false \
        --data.N 1 --worst.radius 2 --worst.starts 3 --worst.steps 300 --study.probes "" --output.file w.h5 >out.txt 2>err.txt; then
      bad "$kind: mft worst failed: $(cat err.txt)"; continue
    fi
    summary out.txt >sum.json
    got=$(field sum.json worst_err_raw)
    /usr/bin/python3 - "$got" <<'EOF' && ok || bad "$kind: closed form"
import sys, h5py, numpy as np
def product(path):
    with h5py.File(path, "r") as f:
        V = f["/params/V"][...]
        A = np.einsum("lhdk,lhkc->lhdc", f["/params/O"][...], V) if "/params/O" in f else V
    L, d = A.shape[0], A.shape[2]
    P = np.eye(d)
    for l in range(L):  # x^{l+1} = (I + mean_h A_lh / L) x^l
        P = (np.eye(d) + A[l].mean(axis=0) / L) @ P
    return P
D = product("model.h5") - (product("ref1.h5") + product("ref2.h5")) / 2
s = np.linalg.svd(D, compute_uv=False)
truth, got = 2 * s[0], float(sys.argv[1])
with h5py.File("w.h5", "r") as f:
    x = f["/worst/tokens"][0, 0]
rel = abs(got - truth) / truth
print(f"closed form r sigma_max(D) = {truth:.12e}, mft worst {got:.12e}, relative {rel:.2e}, |x0| = {np.linalg.norm(x):.12f}"
      f" (sigma_2/sigma_1 = {s[1] / s[0]:.3f})")
sys.exit(0 if rel < 1e-6 and abs(np.linalg.norm(x) - 2) < 1e-9 else 1)
EOF
  done
  ;;
random_bound)
  make_models qkv 8 --model.beta 2 || bad "mft forward failed"
  common=(--params.file model.h5 --worst.references "ref1.h5 ref2.h5" --worst.crossfit false --data.N 8 --worst.radius 2)
  run 2 "$MFT" worst "${common[@]}" --worst.starts 1000 --worst.steps 0 --worst.seed 99 --output.file random.h5 >r.txt 2>&1 ||
    bad "the random inputs failed: $(cat r.txt)"
  run 2 "$MFT" worst "${common[@]}" --worst.starts 4 --worst.steps 60 --output.file search.h5 >s.txt 2>&1 ||
    bad "the search failed: $(cat s.txt)"
  summary r.txt >r.json; summary s.txt >s.json
  best=$(field r.json worst_err_raw); found=$(field s.json worst_err_raw); start=$(field s.json initial_err)
  echo "best of 1000 random inputs and 8 probes: $best; search from 4 random starts and 8 probes: $start -> $found"
  /usr/bin/python3 -c "import sys; sys.exit(0 if $found > $best and $found > $start else 1)" && ok ||
    bad "the search ($found) does not beat the best random input ($best)"
  grep -q 'ETA' s.txt && ok || bad "no progress line with an ETA"
  ;;
ranks)
  make_models qkvo 6 --model.causal true || bad "mft forward failed"
  for np in 1 2 3; do
    run "$np" "$MFT" worst --params.file model.h5 --worst.references "ref1.h5 ref2.h5 ref3.h5" --data.N 6 \
      --worst.starts 3 --worst.steps 25 --output.file w$np.h5 >o$np.txt 2>&1 || bad "$np ranks failed: $(cat o$np.txt)"
  done
  /usr/bin/python3 - <<'EOF' && ok || bad "1, 2 and 3 ranks differ"
import sys, h5py, numpy as np
f = [h5py.File(f"w{n}.h5", "r") for n in (1, 2, 3)]
worst = 0.0
for name in ("/worst/tokens", "/worst/output", "/worst/reference_output", "/worst/heldout_output", "/worst/objective"):
    a = f[0][name][...]
    for g in f[1:]:
        worst = max(worst, np.abs(g[name][...] - a).max() / max(np.abs(a).max(), 1e-300))
e = [float(g.attrs["worst.err"]) for g in f]
print(f"largest relative difference across 1, 2, 3 ranks: {worst:.2e}; worst.err {e}, {f[0].attrs['worst.estimator']}")
sys.exit(0 if worst < 1e-9 and max(e) - min(e) <= 1e-9 * max(e) else 1)
EOF
  ;;
bad_input)
  make_models qkv 4 || bad "mft forward failed"
  run 1 "$MFT" forward --model.d 6 --model.k 2 --data.N 4 --output.file d6.h5 >/dev/null
  run 1 "$MFT" forward --model.d 4 --model.k 2 --data.N 4 --loss.kind pooled --output.file pooled.h5 >/dev/null
  w=(worst --params.file model.h5 --data.N 4 --worst.steps 2)
  expect 2 'worst.radius must be greater than 0' -- "$MFT" "${w[@]}" --worst.references ref1.h5 --worst.radius 0
  expect 2 'worst.radius must be greater than 0' -- "$MFT" "${w[@]}" --worst.references ref1.h5 --worst.radius -1
  expect 2 'worst.starts must be at least 1' -- "$MFT" "${w[@]}" --worst.references ref1.h5 --worst.starts 0
  expect 2 "cannot open 'missing.h5'.*worst.references" -- "$MFT" "${w[@]}" --worst.references "ref1.h5 missing.h5"
  expect 2 'd6.h5 .*d = 6.*must share d' -- "$MFT" "${w[@]}" --worst.references "ref1.h5 d6.h5"
  expect 2 'pooled.h5 .*pooled loss.*must share' -- "$MFT" "${w[@]}" --worst.references "pooled.h5"
  expect 2 'needs references' -- "$MFT" "${w[@]}"
  expect 2 'needs the model' -- "$MFT" worst --worst.references ref1.h5
  expect 2 "study.probes: 'cubes' is not a token family" -- "$MFT" "${w[@]}" --worst.references ref1.h5 --study.probes cubes
  [ ! -e run.h5 ] && ok || bad "a refused run wrote run.h5"
  ;;
*) echo "unknown part '$part'"; exit 2 ;;
esac
finish
