#!/usr/bin/env bash
# Real data (input/digits.cfg) and what mft train reports beside the risk:
# - the progress table, the summary and the run file carry the held-out risk
#   and the training and held-out accuracy;
# - the held-out risk equals `mft forward` of the final heads on the held-out
#   file (its own risk), and the held-out accuracy equals the argmax of
#   W xbar(1) from that forward's outputs (numpy), on 1 and 2 ranks;
# - /history/heldout survives a restart (bitwise);
# - loss.accuracy without the pooled loss, a held-out file of another d, and
#   data.heldout given to forward are refused;
# - with scikit-learn installed, jobs/make_digits.py makes the shipped files again.
source "$(dirname "$0")/lib.sh" "$1"
inputs="$2"
top="$inputs/.."
for np in 1 2; do
  expect 0 "" -- mpiexec --oversubscribe -n $np "$MFT" train --config "$inputs/digits.cfg" --train.steps 60 \
    --train.log_every 20 --output.file run$np.h5 --checkpoint.dir ck$np
  grep -q "held-out    acc  h-acc$" out.txt && ok || bad "the progress table lacks the held-out columns"
  [ "$(grep -cE '^ +(0|20|40|59) .* [0-9.e+-]+ [01]\.[0-9]{4} [01]\.[0-9]{4}$' out.txt)" -eq 4 ] && ok || bad "4 logged rows with held-out columns expected"
  summary=$(grep '^mft-summary ' out.txt)
  for key in heldout_risk accuracy heldout_accuracy; do
    echo "$summary" | grep -q "\"$key\": " && ok || bad "the summary lacks $key"
  done
  h5dump -H -d /history/heldout run$np.h5 | grep -q "( 5, 4 )" && ok || bad "/history/heldout is not 5 rows of 4"
  expect 0 "" -- mpiexec --oversubscribe -n $np "$MFT" forward --params.file run$np.h5 \
    --data.file "$inputs/digits_heldout.h5" --output.file fwd$np.h5
  /usr/bin/python3 - "$summary" fwd$np.h5 <<'PY' && ok || bad "held-out figures differ from forward on the held-out file ($np ranks)"
import json, sys, h5py, numpy as np
s = json.loads(sys.argv[1].split(" ", 1)[1])
with h5py.File(sys.argv[2]) as f:
    risk = float(f.attrs["risk"]); x1 = f["/output/tokens"][()]; z = f["/data/targets"][()]; W = f["/data/readout"][()]
acc = np.mean(np.argmax(x1.mean(axis=1) @ W.T, axis=1) == np.argmax(z, axis=1))
ok = abs(risk - s["heldout_risk"]) <= 1e-12 * risk and abs(acc - s["heldout_accuracy"]) < 1e-12
print(risk, s["heldout_risk"], acc, s["heldout_accuracy"])
sys.exit(0 if ok else 1)
PY
done
h5diff run1.h5 run2.h5 /history/heldout >/dev/null 2>&1 || /usr/bin/python3 -c "
import h5py, numpy as np, sys
a, b = (h5py.File(f)['/history/heldout'][()] for f in ('run1.h5', 'run2.h5'))
sys.exit(0 if np.allclose(a, b, rtol=1e-12, atol=0) else 1)" && ok || bad "/history/heldout differs between 1 and 2 ranks"
# A restart keeps the held-out history: 30 + 30 steps = 60, bitwise.
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" train --config "$inputs/digits.cfg" --train.steps 30 \
  --train.log_every 20 --output.file half.h5 --checkpoint.dir ckr --checkpoint.every 30
expect 0 "" -- mpiexec --oversubscribe -n 2 "$MFT" train --config "$inputs/digits.cfg" --train.steps 60 \
  --train.log_every 20 --output.file resumed.h5 --checkpoint.dir ckr --restart auto
/usr/bin/python3 -c "
import h5py, numpy as np, sys
a, b = (h5py.File(f)['/history/heldout'][()] for f in ('resumed.h5', 'run2.h5'))
print(a[:, 0], b[:, 0])
sys.exit(0 if a.shape[1] == 4 and set(b[:, 0]) <= set(a[:, 0]) and all(np.array_equal(a[a[:, 0] == s], b[b[:, 0] == s]) for s in b[:, 0]) else 1)
" > rows.txt && ok || { bad "the resumed run's held-out history differs"; cat rows.txt; }
expect 2 "loss.accuracy needs the pooled loss" -- "$MFT" train --loss.accuracy true --train.steps 1 --checkpoint.dir ckx
/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('d5.h5', 'w') as f:
    f['/data/tokens'] = np.zeros((3, 8, 5)); f['/data/targets'] = np.zeros((3, 10)); f['/data/readout'] = np.zeros((10, 5))
"
expect 2 "data.heldout d5.h5 has d = 5, pooled loss with 10 outputs, but the training data d = 16" -- \
  "$MFT" train --config "$inputs/digits.cfg" --data.heldout d5.h5 --train.steps 1 --checkpoint.dir cky
expect 2 "data.heldout is not used by mft forward" -- "$MFT" forward --data.heldout d5.h5
if /usr/bin/python3 -c "import sklearn" 2>/dev/null; then
  expect 0 "" -- /usr/bin/python3 "$top/jobs/make_digits.py" --out again.h5 --heldout-out again_heldout.h5
  # To 1e-12, not bit for bit: the shipped files were made on another CPU.
  h5diff -d 1e-12 again.h5 "$inputs/digits.h5" >/dev/null && h5diff -d 1e-12 again_heldout.h5 "$inputs/digits_heldout.h5" \
    >/dev/null && ok || bad "jobs/make_digits.py does not make the shipped digits files (to 1e-12)"
else
  skip "scikit-learn is not installed: jobs/make_digits.py could not make the shipped digits files again here"
fi
finish
