#!/usr/bin/env bash
# Token trajectories from the command line: forward, train and limit write
# /trajectory whose end slices are the run's input and output (bitwise), the
# same on 1 and 3 ranks; sizes that cannot work exit 2 with one line before
# any work; the shipped clustering input and plot_tokens.py give pictures.
source "$(dirname "$0")/lib.sh" "$1"
top="$2"
py=/usr/bin/python3
small=(--model.L 6 --model.H 3 --model.d 3 --model.k 2 --data.M 3 --data.N 5 --init.v_mean 0.5)

# check FILE PYTHON-EXPRESSION-ON-f: the expression must hold.
check() {
  "$py" - "$1" "$2" <<'PY' && ok || bad "$1: $2"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

expect 0 "" -- "$MFT" forward "${small[@]}" --gradient --output.trajectory 3 --output.file f1.h5
check f1.h5 'f["/trajectory/tokens"].shape == (4, 3, 5, 3) and list(f["/trajectory/depth"][()]) == [0, 1/3, 2/3, 1]'
check f1.h5 'np.array_equal(f["/trajectory/tokens"][-1], f["/output/tokens"][()])'
check f1.h5 'np.array_equal(f["/trajectory/tokens"][0], f["/data/tokens"][()])'
check f1.h5 'f["/trajectory/adjoint"].shape == (4, 3, 5, 3) and np.abs(f["/trajectory/adjoint"][()]).max() > 0'
expect 0 "" -- mpiexec --oversubscribe -n 3 "$MFT" forward "${small[@]}" --gradient --output.trajectory 3 --output.file f3.h5
for name in tokens adjoint; do
  h5diff --relative=1e-12 f1.h5 f3.h5 /trajectory/$name >/dev/null && ok || bad "/trajectory/$name differs on 3 ranks"
done
# Without --gradient there is no adjoint; without the option, no trajectory.
expect 0 "" -- "$MFT" forward "${small[@]}" --output.trajectory 2 --output.file f0.h5
check f0.h5 '"/trajectory/adjoint" not in f and f["/trajectory/tokens"].shape[0] == 3'
expect 0 "" -- "$MFT" forward "${small[@]}" --output.file fn.h5
check fn.h5 '"/trajectory" not in f'
"$MFT" info f1.h5 >info.txt 2>&1 && grep -q "/trajectory/tokens" info.txt && ok || bad "mft info does not list /trajectory/tokens"

# train: the trajectory of the final heads; the checkpoint holds none.
expect 0 "" -- "$MFT" train "${small[@]}" --train.steps 3 --output.trajectory 6 --checkpoint.dir ck --output.file t.h5
check t.h5 'np.array_equal(f["/trajectory/tokens"][-1], f["/output/tokens"][()]) and f["/trajectory/adjoint"].shape[0] == 7'
check ck/checkpoint-00000003.h5 '"/trajectory" not in f'

# limit: the adaptive solve lands on the depths; x(1) and p(0) are the end slices.
expect 0 "" -- "$MFT" limit "${small[@]}" --limit.heads 8 --output.trajectory 4 --output.file l.h5
check l.h5 'np.array_equal(f["/trajectory/tokens"][-1], f["/limit/tokens"][()])'
check l.h5 'np.array_equal(f["/trajectory/adjoint"][0], f["/limit/adjoint"][()])'
check l.h5 'f["/trajectory/tokens"].shape[0] == 5 and np.abs(f["/trajectory/tokens"][2] - f["/trajectory/tokens"][0]).max() > 1e-3'

# limit.fluctuation: the error's law in the run file and the summary line,
# err_predicted^2 = euler_err^2 + fluctuation^2 / (L H); the same on 3 ranks.
law=(--limit.heads 64 --limit.fluctuation true)
for np in 1 3; do
  expect 0 "" -- mpiexec --oversubscribe -n $np "$MFT" limit "${small[@]}" "${law[@]}" --output.file law$np.h5
  grep '^mft-summary' out.txt >law$np.txt
done
"$py" - law1.txt law3.txt <<'PY' && ok || bad "the law's summary line or its 3-rank figures"
import json, sys
a, b = (json.loads(open(n).read().split(" ", 1)[1]) for n in sys.argv[1:])
law = (a["euler_err"] ** 2 + a["fluctuation"] ** 2 / (a["L"] * a["H"])) ** 0.5
assert abs(law - a["err_predicted"]) < 1e-12 * law and 0 < a["err_predicted_stderr"] < 0.2 * law, a
assert all(abs(a[k] - b[k]) < 1e-10 * abs(a[k]) for k in ("euler_err", "fluctuation", "err_predicted")), (a, b)
PY
check law1.h5 'all(f["/fluctuation/" + n].shape == (3,) for n in ("euler_err", "fluctuation", "fluctuation_stderr"))'

# Sizes that cannot work, and commands that do not use the option.
expect 2 "output.trajectory = 4 does not divide model.L = 6" -- "$MFT" forward "${small[@]}" --output.trajectory 4
expect 2 "output.trajectory = 6000 needs .* GiB on a node .* more than its .* GiB available" -- \
  "$MFT" forward "${small[@]}" --model.L 6000 --output.trajectory 6000 --data.M 3000 --data.N 1000 --gradient
expect 2 "output.trajectory is not used by mft ntk" -- "$MFT" ntk "${small[@]}" --output.trajectory 2
expect 2 "output.trajectory .*" -- "$MFT" forward "${small[@]}" --output.trajectory -1
[ ! -e run.h5 ] && ok || bad "a refused run wrote run.h5"

# The shipped picture and the plot script (a PNG and a GIF that are not blank).
expect 0 "" -- "$MFT" forward --config "$top/input/clustering.cfg" --gradient
"$py" "$top/jobs/plot_tokens.py" clustering.h5 --gif >plot.txt 2>&1 && ok || { bad "plot_tokens.py failed"; cat plot.txt; }
"$py" "$top/jobs/plot_tokens.py" f1.h5 --out f1.png --sequences 1,2 --panels 3 >plot.txt 2>&1 && ok || { bad "plot_tokens.py (d = 3, PCA) failed"; cat plot.txt; }
# Tokens on the sphere collapse to one point (d = 3): every slice on the
# sphere, the cloud's diameter at s = 1 below 1e-3, the 3-D picture.
expect 0 "" -- "$MFT" forward --config "$top/input/sphere_clustering.cfg"
"$py" - <<'PY' && ok || bad "sphere_clustering: the tokens did not collapse on the sphere"
import h5py, numpy as np
x = h5py.File("sphere_clustering.h5")["/trajectory/tokens"][:, 0]  # (S+1, N, 3)
norms = np.abs(np.linalg.norm(x, axis=-1) - 1).max()
diameter = [np.linalg.norm(y[:, None] - y[None], axis=-1).max() for y in x]
print(f"sphere_clustering: |x| - 1 at most {norms:.1e}; diameter {diameter[0]:.3f} at s = 0, {diameter[-1]:.2e} at s = 1")
raise SystemExit(0 if norms < 1e-12 and diameter[0] > 1.5 and diameter[-1] < 1e-3 else 1)
PY
"$py" "$top/jobs/plot_tokens.py" sphere_clustering.h5 >plot.txt 2>&1 && ok || { bad "plot_tokens.py (sphere) failed"; cat plot.txt; }
for png in clustering.png clustering.gif f1.png sphere_clustering.png; do
  "$py" - "$png" <<'PY' && ok || bad "$png is missing or blank"
import sys
import numpy as np
from PIL import Image
im = Image.open(sys.argv[1])
a = np.asarray(im.convert("L"), dtype=float)
sys.exit(0 if a.shape[0] > 200 and a.shape[1] > 200 and a.std() > 5 and len(np.unique(a)) > 20 else 1)
PY
done
"$py" "$top/jobs/plot_tokens.py" fn.h5 >plot.txt 2>&1
[ $? -ne 0 ] && grep -q "has no /trajectory" plot.txt && ok || bad "plot_tokens.py on a file without a trajectory"
finish
