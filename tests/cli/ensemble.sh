#!/usr/bin/env bash
# mft train --train.seeds S: the ensemble's run file and its seeds axis, a
# model against the seed trained alone, restart from its checkpoints
# (bitwise, and on another number of ranks), the same with MLP sublayers,
# and its bad inputs (an ensemble's file as one model's params.file too):
# each one line, exit 2, nothing lost.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh" "$1"

m=(--model.L 3 --model.H 4 --model.d 4 --model.k 2 --data.M 4 --data.N 6 --model.depth_exponent 0.5
   --model.head_exponent 0.5 --init.v_mean 0 --data.teacher_init "v_mean=-0.5 v_gain=1.5" --train.optimizer adamw
   --train.lr 0.02 --train.steps 20 --train.log_every 5 --init.seed 40)
mpiexec --oversubscribe -n 3 "$MFT" train "${m[@]}" --train.seeds 11 --checkpoint.every 0 --output.file e3.h5 \
  >e3.txt 2>&1 && ok || bad "an ensemble on 3 ranks failed: $(tail -2 e3.txt)"
"$MFT" train "${m[@]}" --init.seed 47 --checkpoint.every 0 --output.file alone.h5 >alone.txt 2>&1 \
  || bad "model 7 alone failed: $(tail -2 alone.txt)"
/usr/bin/python3 - <<'EOF' && ok || bad "the ensemble file against model 7 trained alone"
import sys
import h5py
import numpy as np
e, a = h5py.File('e3.h5', 'r'), h5py.File('alone.h5', 'r')
shapes = {k: e[k].shape for k in ('/params/Q', '/params/V', '/output/tokens', '/history/loss', '/ensemble/diverged')}
print(shapes, 'models', e.attrs['ensemble.models'])
want = {'/params/Q': (11, 3, 4, 2, 4), '/params/V': (11, 3, 4, 4, 4), '/output/tokens': (11, 4, 6, 4),
        '/history/loss': (11, 20), '/ensemble/diverged': (11,)}
rel = lambda x, y: np.abs(x - y).max() / np.abs(y).max()
errs = [rel(e[k][7], a[k][()]) for k in ('/params/Q', '/params/K', '/params/V', '/output/tokens', '/history/loss',
                                       '/optimizer/m/V', '/optimizer/v/K')]
print('model 7 against its seed alone:', max(errs))
sys.exit(1 if shapes != want or max(errs) > 1e-12 or (e['/ensemble/diverged'][()] != -1).any() else 0)
EOF

# MLP sublayers: model 7's neurons, their gradient and moments against its
# seed alone; a restart (adamw-block) bitwise the straight run.
mlp=(--model.mlp_width 5 --model.mlp_activation gelu --model.mlp_depth_exponent 0.5 --model.mlp_width_exponent 0.5
     --init.mlp_b_gain 0.5)
mpiexec --oversubscribe -n 3 "$MFT" train "${m[@]}" "${mlp[@]}" --train.seeds 11 --checkpoint.every 0 \
  --output.file m3.h5 >m3.txt 2>&1 && ok || bad "an ensemble with MLP sublayers failed: $(tail -2 m3.txt)"
"$MFT" train "${m[@]}" "${mlp[@]}" --init.seed 47 --checkpoint.every 0 --output.file malone.h5 >malone.txt 2>&1 \
  || bad "model 7 with MLP sublayers alone failed: $(tail -2 malone.txt)"
"$MFT" info m3.h5 | grep -qF "ensemble: 11 models, seeds from 40" && ok || bad "mft info does not name the ensemble"
"$MFT" train "${m[@]}" "${mlp[@]}" --train.optimizer adamw-block --train.seeds 4 --checkpoint.dir mck \
  --checkpoint.every 10 --output.file mfull.h5 >mf.txt 2>&1 || bad "MLP ensemble with checkpoints failed: $(tail -2 mf.txt)"
rm -f mck/checkpoint-00000020.h5
"$MFT" train "${m[@]}" "${mlp[@]}" --train.optimizer adamw-block --train.seeds 4 --checkpoint.dir mck --restart auto \
  --output.file mresumed.h5 >mr.txt 2>&1 || bad "the MLP ensemble's restart failed: $(tail -2 mr.txt)"
/usr/bin/python3 - <<'EOF' && ok || bad "an MLP ensemble against model 7 alone, or its restart"
import sys
import h5py
import numpy as np
e, a = h5py.File('m3.h5', 'r'), h5py.File('malone.h5', 'r')
keys = ['/params/mlp/U', '/params/mlp/b', '/params/mlp/W', '/grad/mlp/W', '/optimizer/mlp/m/U', '/optimizer/mlp/v/b',
        '/params/V', '/output/tokens', '/history/loss']
rel = lambda x, y: np.abs(x - y).max() / np.abs(y).max()
err = max(rel(e[k][7], a[k][()]) for k in keys)
f, r = h5py.File('mfull.h5', 'r'), h5py.File('mresumed.h5', 'r')
same = all(np.array_equal(f[k][()], r[k][()]) for k in ('/params/mlp/U', '/params/mlp/W', '/optimizer/mlp/v', '/history/loss'))
print('shape', e['/params/mlp/U'].shape, '; model 7 against its seed alone:', err, '; restart bitwise:', same)
sys.exit(0 if e['/params/mlp/U'].shape == (11, 3, 5, 4) and err < 1e-12 and same else 1)
EOF

# Checkpoints: 20 steps straight, against 10 then a restart (on 2 ranks,
# then 3): the first bitwise, the second to round-off.
"$MFT" train "${m[@]}" --train.seeds 6 --checkpoint.dir ck --checkpoint.every 10 --output.file full.h5 >f.txt 2>&1 \
  || bad "ensemble with checkpoints failed: $(tail -2 f.txt)"
rm -f ck/checkpoint-00000020.h5
"$MFT" train "${m[@]}" --train.seeds 6 --checkpoint.dir ck --restart auto --output.file resumed.h5 >r.txt 2>&1 \
  || bad "the restart failed: $(tail -2 r.txt)"
grep -q "restarting from ck/checkpoint-00000010.h5 at step 10" r.txt && ok || bad "the restart did not resume at 10"
rm -f ck/checkpoint-00000020.h5
mpiexec --oversubscribe -n 3 "$MFT" train "${m[@]}" --train.seeds 6 --checkpoint.dir ck --restart auto \
  --output.file resumed3.h5 >r3.txt 2>&1 || bad "the restart on 3 ranks failed: $(tail -2 r3.txt)"
/usr/bin/python3 - <<'EOF' && ok || bad "a restarted ensemble against the straight run"
import sys
import h5py
import numpy as np
f, r, r3 = (h5py.File(p, 'r') for p in ('full.h5', 'resumed.h5', 'resumed3.h5'))
same = all(np.array_equal(f[k][()], r[k][()]) for k in ('/params/Q', '/params/V', '/history/loss', '/output/tokens'))
close = max(np.abs(f[k][()] - r3[k][()]).max() / np.abs(f[k][()]).max() for k in ('/params/V', '/output/tokens'))
print('bitwise on 1 rank:', same, '; on 3 ranks:', close)
sys.exit(1 if not same or close > 1e-12 else 0)
EOF

# Bad inputs: one line, exit 2; the checkpoints already written stay.
expect 2 "train.seeds must be at least 1" -- "$MFT" train "${m[@]}" --train.seeds 0
expect 2 "train.seeds must be at least 1" -- "$MFT" train "${m[@]}" --train.seeds -4
expect 2 "train.seeds" -- "$MFT" train "${m[@]}" --train.seeds many
expect 2 "need [0-9.e+]+ GiB a rank .*more than the" -- "$MFT" train "${m[@]}" --train.seeds 2000000000
expect 2 "3 models on 4 ranks" -- mpiexec --oversubscribe -n 4 "$MFT" train "${m[@]}" --train.seeds 3
expect 2 "train.lr_head_exponent" -- "$MFT" train "${m[@]}" --train.lr_head_exponent nan
expect 2 "train.lr_depth_exponent" -- "$MFT" train "${m[@]}" --train.lr_depth_exponent inf
expect 2 "does not take params.file" -- "$MFT" train "${m[@]}" --train.seeds 4 --params.file full.h5
expect 2 "full.h5 holds an ensemble of 6 models .*params.file takes one model's file" -- \
  "$MFT" forward --params.file full.h5 --output.file one.h5
[ ! -e one.h5 ] && ok || bad "a refused forward wrote one.h5"
expect 2 "train.seeds = 6 there but 5 now" -- "$MFT" train "${m[@]}" --train.seeds 5 --checkpoint.dir ck --restart auto
ls ck/checkpoint-00000010.h5 >/dev/null && ok || bad "a refused restart lost the checkpoint"
cp full.h5 damaged.h5
/usr/bin/python3 -c "
import h5py
with h5py.File('damaged.h5', 'r+') as f: f['/params/V'][3, 0, 0, 0, 0] += 1"
expect 2 "damaged|checksum" -- "$MFT" train "${m[@]}" --train.seeds 6 --restart damaged.h5
expect 2 "checksum" -- "$MFT" info damaged.h5
finish
