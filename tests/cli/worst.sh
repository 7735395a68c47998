#!/usr/bin/env bash
# mft worst, checked against truths it does not compute itself.
# Usage: worst.sh MFT PART, PART one of
#   closed_form   N = 1: every layer is linear, x(1) = prod_l (I + Abar_l / L) x0 (times I + W_l^T U_l / (L m)
#                 after it with identity MLP sublayers), so the supremum over
#                 |x0| <= r is r sigma_max(D), D = the model's product minus the references' mean
#                 product (numpy, from the files' /params); mft worst must reach it to 1e-6 relative
#                 (and a measure of one atom, --worst.atoms 1, the same; of three, at least it)
#   random_bound  the search beats the best of 1000 random inputs in the ball (and every probe)
#   ranks         1, 2 and 3 ranks find the same input and figures (1e-9), sequences and measures
#   measure       two models where the collapsed input is not the worst: N = 1, 2, 4, 8, each started
#                 from the one before (--worst.start), never fall; the measure of 8 atoms started from
#                 N = 8 is at least every N's figure and beats the collapsed input; at its defaults
#                 a measure search's budget check gains at most 1%
#   sphere        model.norm = sphere: every token of the input found on the sphere, its figure above the
#                 best of 1000 random inputs on the sphere and above the collapsed (one-token) start
#   bad_input     radius <= 0, worst.starts 0, a missing or foreign reference (another d, loss, mask,
#                 norm or MLP), no model, a start of the wrong kind or size: one line, exit 2
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
  # mlp: qkv heads and identity MLP sublayers of no bias, x <- (I + W^T U / (L m)) (I + Abar / L) x a layer.
  mlp=(--model.mlp_width 3 --model.mlp_activation identity --init.mlp_w_mean 0.5 --init.mlp_w_gain 1.5
       --init.mlp_u_gain 1.5)
  for kind in qkv qkvo mlp; do
    if [ "$kind" = mlp ]; then make_models qkv 1 "${mlp[@]}"; else make_models "$kind" 1; fi ||
      { bad "$kind: mft forward failed"; continue; }
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
        mlp = [f["/params/mlp/" + k][...] for k in ("U", "W")] if "/params/mlp" in f else None
    L, d = A.shape[0], A.shape[2]
    P = np.eye(d)
    for l in range(L):  # x^{l+1} = (I + W_l^T U_l / (L m)) (I + mean_h A_lh / L) x^l
        P = (np.eye(d) + A[l].mean(axis=0) / L) @ P
        if mlp:
            P = (np.eye(d) + mlp[1][l].T @ mlp[0][l] / (L * mlp[0].shape[1])) @ P
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
    # A measure of one atom is one token; of three, its figure is at least the one token's.
    for K in 1 3; do
      run 2 "$MFT" worst --params.file model.h5 --worst.references "ref1.h5 ref2.h5" --worst.crossfit false \
        --worst.atoms $K --worst.radius 2 --worst.starts 3 --worst.steps 100 --study.probes "" --output.file m.h5 \
        >out.txt 2>err.txt || { bad "$kind: the measure of $K atoms failed: $(cat err.txt)"; continue; }
      summary out.txt >m.json
      m=$(field m.json worst_err_raw)
      /usr/bin/python3 -c "import sys; g, t = $m, $got; sys.exit(0 if ($K == 1 and abs(g - t) <= 1e-9 * t) or ($K > 1 and g >= t * (1 - 1e-12)) else 1)" &&
        ok || bad "$kind: a measure of $K atoms ($m) against one token ($got)"
    done
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
  make_models qkvo 6 || bad "mft forward failed"
  for np in 1 2 3; do
    run "$np" "$MFT" worst --params.file model.h5 --worst.references "ref1.h5 ref2.h5 ref3.h5" --worst.atoms 5 \
      --worst.starts 3 --worst.steps 25 --output.file m$np.h5 >o$np.txt 2>&1 || bad "$np ranks (measure) failed: $(cat o$np.txt)"
  done
  /usr/bin/python3 - <<'EOF' && ok || bad "1, 2 and 3 ranks differ"
import sys, h5py, numpy as np
worst = 0.0
for kind, names in (("w", ("/worst/tokens",)), ("m", ("/worst/atoms", "/worst/weights"))):
    f = [h5py.File(f"{kind}{n}.h5", "r") for n in (1, 2, 3)]
    for name in names + ("/worst/output", "/worst/reference_output", "/worst/heldout_output", "/worst/objective"):
        a = f[0][name][...]
        for g in f[1:]:
            worst = max(worst, np.abs(g[name][...] - a).max() / max(np.abs(a).max(), 1e-300))
    e = [float(g.attrs["worst.err"]) for g in f]
    print(f"{kind}: largest relative difference across 1, 2, 3 ranks: {worst:.2e}; worst.err {e}, {f[0].attrs['worst.estimator']}")
    if max(e) - min(e) > 1e-9 * max(e):
        sys.exit(1)
sys.exit(0 if worst < 1e-9 else 1)
EOF
  ;;
measure)
  # Untrained models of d = 4 at beta = 4 (v_gain 1.5, radius 1.5), where spread-out inputs beat the collapsed one.
  make_models qkv 8 --model.beta 4 || bad "mft forward failed"
  for seed in 11 12; do
    run 1 "$MFT" forward --model.head_kind qkv --model.d 4 --model.k 2 --data.M 1 --data.N 8 --init.v_mean 0.5 \
      --init.v_gain 1.5 --init.q_gain 2 --init.k_gain 2 --model.beta 4 --model.L 4 --model.H 3 --init.seed $seed \
      --output.file model$seed.h5 >/dev/null || bad "mft forward failed"
    w=(worst --params.file model$seed.h5 --worst.references "ref1.h5 ref2.h5 ref3.h5" --worst.radius 1.5 --worst.starts 4
       --worst.steps 40)
    previous=()
    for N in 1 2 4 8; do
      run 2 "$MFT" "${w[@]}" --data.N $N "${previous[@]}" --output.file s$seed-$N.h5 >o.txt 2>&1 || bad "N = $N failed: $(cat o.txt)"
      summary o.txt >s$seed-$N.json
      previous=(--worst.start s$seed-$N.h5)
    done
    run 2 "$MFT" "${w[@]}" --worst.atoms 8 --worst.start s$seed-8.h5 --output.file m$seed.h5 >o.txt 2>&1 ||
      bad "the measure failed: $(cat o.txt)"
    summary o.txt >m$seed.json
    /usr/bin/python3 - $seed <<'EOF' && ok || bad "model $seed: the figures fell with N or the measure is below a sequence"
import json, sys
seed = sys.argv[1]
raw = [json.load(open(f"s{seed}-{N}.json"))["worst_err_raw"] for N in (1, 2, 4, 8)]
m = json.load(open(f"m{seed}.json"))
print(f"model {seed}: sup over N = 1, 2, 4, 8: {raw}; measure of 8 atoms {m['worst_err_raw']} (collapsed {m['collapsed_err']})")
ok = all(b >= a * (1 - 1e-12) for a, b in zip(raw, raw[1:])) and m["worst_err_raw"] >= max(raw) * (1 - 1e-12)
sys.exit(0 if ok and m["input"] == "measure" and m["worst_err_raw"] > 1.05 * m["collapsed_err"] else 1)
EOF
  done
  /usr/bin/python3 -c "import h5py, sys; w = h5py.File('m11.h5')['/worst/weights'][0]; sys.exit(0 if w.shape == (8,) and (w > 0).all() and abs(w.sum() - 1) < 1e-12 else 1)" &&
    ok || bad "the measure's weights are not positive and summing to 1"
  # At its defaults a measure search has budget enough: its check (twice the starts and steps) gains at
  # most 1% on a pair where 100 iterations left 1.7% (a 4 x 3 model against one 16 x 8 reference).
  pair=(--model.d 4 --model.k 2 --model.beta 4 --init.v_gain 1.5 --init.v_mean 0.5 --data.N 8)
  run 1 "$MFT" forward "${pair[@]}" --model.L 4 --model.H 3 --init.seed 3 --output.file pair_model.h5 >/dev/null &&
    run 1 "$MFT" forward "${pair[@]}" --model.L 16 --model.H 8 --init.seed 103 --output.file pair_ref.h5 >/dev/null ||
    bad "mft forward failed"
  run 2 "$MFT" worst --params.file pair_model.h5 --worst.references pair_ref.h5 --worst.atoms 32 --worst.radius 1.5 \
    --worst.check true --output.file pair.h5 >o.txt 2>&1 || bad "the measure search at its defaults failed: $(cat o.txt)"
  summary o.txt >pair.json
  gain=$(field pair.json check_gain); iterations=$(field pair.json iterations)
  echo "measure of 32 atoms at its defaults: $iterations iterations, check gain $gain"
  /usr/bin/python3 -c "import sys; sys.exit(0 if $gain <= 0.01 and $iterations == 200 else 1)" &&
    ok || bad "a measure search at its defaults: check gain $gain above 1% (or $iterations iterations, not 200)"
  ;;
sphere)
  make_models qkv 4 --model.norm sphere --model.beta 3 || bad "mft forward failed"
  common=(--params.file model.h5 --worst.references "ref1.h5 ref2.h5" --worst.crossfit false --data.N 4)
  run 2 "$MFT" worst "${common[@]}" --worst.starts 1000 --worst.steps 0 --worst.seed 99 --output.file random.h5 >r.txt 2>&1 ||
    bad "the random inputs failed: $(cat r.txt)"
  run 2 "$MFT" worst "${common[@]}" --worst.starts 4 --worst.steps 60 --output.file search.h5 >s.txt 2>&1 ||
    bad "the search failed: $(cat s.txt)"
  summary r.txt >r.json; summary s.txt >s.json
  best=$(field r.json worst_err_raw); found=$(field s.json worst_err_raw); collapsed=$(field s.json collapsed_err)
  echo "sphere: best of 1000 random inputs $best, collapsed input $collapsed, search $found"
  /usr/bin/python3 -c "import sys; sys.exit(0 if $found > $best and $found >= $collapsed else 1)" && ok ||
    bad "the sphere's search ($found) is not above the random inputs ($best) and the collapsed one ($collapsed)"
  /usr/bin/python3 -c "import h5py, numpy as np, sys; x = h5py.File('search.h5')['/worst/tokens'][0]; sys.exit(0 if abs(np.linalg.norm(x, axis=1) - 1).max() < 1e-12 else 1)" &&
    ok || bad "the input found is not on the sphere"
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
  run 1 "$MFT" forward --model.d 4 --model.k 2 --data.N 4 --model.causal true --output.file causal.h5 >/dev/null
  run 1 "$MFT" forward --model.d 4 --model.k 2 --data.N 4 --model.norm pre --output.file pre.h5 >/dev/null
  expect 2 'causal.h5 is a model with model.causal = true .*params.file model.h5 one with model.causal = false' -- \
    "$MFT" "${w[@]}" --worst.references "ref1.h5 causal.h5"
  expect 2 'pre.h5 is a model with .*model.norm = pre.*must be the same model' -- "$MFT" "${w[@]}" --worst.references "ref1.h5 pre.h5"
  run 1 "$MFT" forward --model.d 4 --model.k 2 --data.N 4 --model.mlp_width 3 --output.file mlp.h5 >/dev/null
  expect 2 "mlp.h5 is a model with relu MLP sublayers of a' = 1, c' = 1, params.file model.h5 one with no MLP sublayers" -- \
    "$MFT" "${w[@]}" --worst.references "ref1.h5 mlp.h5"
  expect 2 'worst.atoms: a measure of weighted atoms has no order' -- \
    "$MFT" worst --params.file causal.h5 --worst.references causal.h5 --worst.atoms 3
  run 1 "$MFT" worst --params.file model.h5 --worst.references "ref1.h5 ref2.h5" --data.N 2 --worst.steps 1 --output.file n2.h5 >/dev/null
  run 1 "$MFT" worst --params.file model.h5 --worst.references "ref1.h5 ref2.h5" --worst.atoms 3 --worst.steps 1 --output.file k3.h5 >/dev/null
  expect 2 'a sequence of 2 tokens: a search of 3 tokens needs a multiple of it' -- \
    "$MFT" "${w[@]}" --worst.references ref1.h5 --data.N 3 --worst.start n2.h5
  expect 2 'a measure of 3 weighted atoms: it starts a measure search' -- "$MFT" "${w[@]}" --worst.references ref1.h5 --worst.start k3.h5
  expect 2 'has 3 atoms: a measure of 2 atoms cannot hold it' -- \
    "$MFT" "${w[@]}" --worst.references ref1.h5 --worst.atoms 2 --worst.start k3.h5
  expect 2 'worst.start: ref1.h5 holds no worst input' -- "$MFT" "${w[@]}" --worst.references ref1.h5 --worst.start ref1.h5
  expect 2 "cannot open 'nope.h5'.*worst.start" -- "$MFT" "${w[@]}" --worst.references ref1.h5 --worst.start nope.h5
  # A start outside the ball searched is projected into it: the input reported lies in the ball.
  run 1 "$MFT" worst --params.file model.h5 --worst.references ref1.h5 --data.N 4 --worst.steps 2 \
    --worst.radius 0.1 --worst.start n2.h5 --output.file small.h5 >out.txt 2>&1 || bad "the search from a far start failed"
  grep -q "the start's tokens lie outside the ball of worst.radius: projected onto it" out.txt && ok ||
    bad "a start outside the ball was not said to be projected"
  /usr/bin/python3 -c "import h5py, numpy as np, sys; x = h5py.File('small.h5')['/worst/tokens'][()]
sys.exit(0 if np.linalg.norm(x, axis=-1).max() <= 0.1 * (1 + 1e-12) else 1)" && ok || bad "the worst input lies outside the ball"
  # Sizes no machine holds: refused before any work (they ran until killed before).
  expect 2 "needs vectors of .* numbers, more than this PETSc can index" -- \
    timeout 60 "$MFT" worst --params.file model.h5 --worst.references ref1.h5 --data.N 100000000
  expect 2 "needs .* GiB on this node .*more than its .* GiB" -- \
    timeout 60 "$MFT" worst --params.file model.h5 --worst.references ref1.h5 --data.N 20000000
  [ ! -e run.h5 ] && ok || bad "a refused run wrote run.h5"
  ;;
*) echo "unknown part '$part'"; exit 2 ;;
esac
finish
