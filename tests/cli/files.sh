#!/usr/bin/env bash
# Files that describe themselves:
# - mft info on a run file, a checkpoint, a data file written by h5py and a
#   damaged file (exit 2, one line naming it);
# - --params.file takes the model and loss settings from the file: ntk and
#   forward (a trained model on other data) need no other option; a
#   contradicting option is refused naming both values; commands that do not
#   use it refuse it; --data.file (a run file) and --restart FILE take the
#   settings they record too;
# - an option given on the command line that the command does not read is
#   refused, while a config file may hold other commands' sections;
# - jobs/plot_run.py draws a run.
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh" "$1"
run="mpiexec --oversubscribe -n 2 $MFT"
expect 0 "" -- $run train --model.L 3 --model.H 4 --model.d 3 --model.k 2 --data.M 3 --data.N 6 --train.steps 8 \
  --checkpoint.every 4 --checkpoint.dir ck --output.file run.h5
expect 0 "" -- "$MFT" info run.h5
grep -q "run.h5: run file (mft train)" out.txt && grep -q "checksum: verifies" out.txt && grep -q "/params/Q (3, 4, 2, 3)" out.txt \
  && ok || { bad "mft info does not describe the run file"; cat out.txt; }
expect 0 "" -- "$MFT" info ck/checkpoint-00000004.h5
grep -q "checkpoint" out.txt && grep -q "step 4 of 8" out.txt && ok || { bad "mft info does not describe the checkpoint"; cat out.txt; }
/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('data.h5', 'w') as f:
    f['/data/tokens'] = np.random.default_rng(1).normal(size=(2, 5, 3))
    f['/data/targets'] = np.zeros((2, 5, 3))
"
expect 0 "" -- "$MFT" info data.h5
grep -q "data.h5: data file" out.txt && grep -q "M = 2 sequences of N = 5 tokens in R^3" out.txt && ok || { bad "mft info does not describe the data file"; cat out.txt; }
cp run.h5 damaged.h5
offset=$(h5dump -p -H -d /params/V damaged.h5 | sed -n 's/.*OFFSET \([0-9]*\).*/\1/p')
printf '\x5a' | dd of=damaged.h5 bs=1 seek=$((offset + 9)) conv=notrunc status=none
expect 2 "damaged.h5 is damaged: its checksum does not verify" -- "$MFT" info damaged.h5

# --params.file: the model comes from the file.
expect 0 "" -- $run ntk --params.file run.h5 --data.file run.h5 --output.file ntk.h5
expect 0 "" -- $run forward --params.file run.h5 --data.file data.h5 --output.file other.h5
h5dump -H -d /output/tokens other.h5 | grep -q "( 2, 5, 3 )" && ok || bad "forward on other data: /output/tokens has the wrong shape"
h5dump -A other.h5 | grep -A4 '"model.L"' | grep -q "(0): 3$" && ok || bad "forward did not take model.L from the params file"
expect 2 "model.L = 5 is given, but params.file run.h5 has model.L = 3" -- "$MFT" forward --params.file run.h5 --data.file data.h5 --model.L 5
expect 2 "params.file is not used by mft lse" -- "$MFT" lse --params.file run.h5

# A params and data file written by h5py alone, in the documented layout with
# the documented short attributes (Python str, int, bool; no mft attribute):
# forward, ntk and train take their settings from it and give what mft's own
# file of the same numbers gives.
/usr/bin/python3 -c "
import h5py
with h5py.File('run.h5') as src, h5py.File('foreign.h5', 'w') as f:
    for name in ['/data/tokens', '/data/targets', '/params/Q', '/params/K', '/params/V']:
        f[name] = src[name][()]
    f.attrs['L'] = 3; f.attrs['H'] = 4; f.attrs['d'] = 3; f.attrs['k'] = 2
    f.attrs['head_kind'] = 'qkv'; f.attrs['loss'] = 'token'; f.attrs['causal'] = False; f.attrs['beta'] = 1.0
"
expect 0 "" -- $run forward --params.file foreign.h5 --data.file foreign.h5 --output.file fwd_foreign.h5
expect 0 "" -- $run forward --params.file run.h5 --data.file run.h5 --output.file fwd_own.h5
h5diff fwd_foreign.h5 fwd_own.h5 /output/tokens >/dev/null && ok || bad "forward on an h5py file differs from mft's own file"
expect 0 "" -- $run ntk --params.file foreign.h5 --data.file foreign.h5 --output.file ntk_foreign.h5
h5diff ntk_foreign.h5 ntk.h5 /ntk >/dev/null && ok || bad "ntk on an h5py file differs from mft's own file"
expect 0 "" -- $run train --params.file foreign.h5 --data.file foreign.h5 --train.steps 2 --checkpoint.dir ckf --output.file tr_foreign.h5
expect 0 "" -- $run train --params.file run.h5 --data.file run.h5 --train.steps 2 --checkpoint.dir cko --output.file tr_own.h5
h5diff tr_foreign.h5 tr_own.h5 /params >/dev/null && ok || bad "train from an h5py file differs from mft's own file"
expect 2 "model.L = 5 is given, but params.file foreign.h5 has model.L = 3" -- "$MFT" forward --params.file foreign.h5 --data.file foreign.h5 --model.L 5
# With no attribute at all, the shapes say the model: /params/Q (L, H, k, d), no /params/O: qkv.
/usr/bin/python3 -c "
import h5py
with h5py.File('run.h5') as src, h5py.File('bare.h5', 'w') as f:
    for name in ['/data/tokens', '/data/targets', '/params/Q', '/params/K', '/params/V']:
        f[name] = src[name][()]
"
expect 0 "" -- $run forward --params.file bare.h5 --data.file bare.h5 --output.file fwd_bare.h5
h5diff fwd_bare.h5 fwd_own.h5 /output/tokens >/dev/null && ok || bad "forward on a file with shapes only differs from mft's own file"
/usr/bin/python3 -c "
import h5py
with h5py.File('nothing.h5', 'w') as f: f['/data/tokens'] = [[[1.0]]]
"
expect 2 "params.file nothing.h5 records no settings and has no /params/Q" -- "$MFT" forward --params.file nothing.h5 --data.file bare.h5

# jobs/make_data.py: NumPy arrays and CSV tables into a data file that mft reads.
make_data="/usr/bin/python3 $here/../../jobs/make_data.py"
/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('run.h5') as f:
    np.save('x.npy', f['/data/tokens'][()]); np.save('y.npy', f['/data/targets'][()])
    np.savetxt('x.csv', f['/data/tokens'][()].reshape(-1, 3), delimiter=',', fmt='%.17g')
bad = np.load('x.npy'); bad[1, 2, 0] = np.nan; np.save('bad.npy', bad); np.save('w.npy', np.ones((2, 3)))
"
expect 0 "" -- $make_data --tokens x.npy --targets y.npy --out conv.h5
expect 0 "" -- $run forward --params.file run.h5 --data.file conv.h5 --output.file fwd_conv.h5
h5diff fwd_conv.h5 fwd_own.h5 /output/tokens >/dev/null && ok || bad "forward on a converted .npy data file differs"
expect 0 "" -- $make_data --tokens x.csv --N 6 --targets y.npy --out conv_csv.h5
h5diff conv_csv.h5 conv.h5 /data/tokens >/dev/null && ok || bad "a CSV of tokens converts to other tokens than the .npy"
expect 0 "" -- $make_data --tokens x.npy --targets y.npy --out part.h5 --heldout 0.34 --heldout-out held.h5
h5dump -H -d /data/tokens part.h5 | grep -q "( 2, 6, 3 )" && h5dump -H -d /data/tokens held.h5 | grep -q "( 1, 6, 3 )" \
  && ok || bad "the held-out split does not put 1 of 3 sequences apart"
expect 0 "" -- $run forward --params.file run.h5 --data.file held.h5 --output.file fwd_held.h5
# Bad conversions: one line naming the problem, exit 2, nothing written.
for args in "--tokens bad.npy --targets y.npy:has 1 NaN or infinite entries" \
            "--tokens x.npy --targets w.npy:targets have shape \(2, 3\)" \
            "--tokens x.csv --N 4 --targets y.npy:18 rows, not a multiple of --N 4" \
            "--tokens missing.npy --targets y.npy:no such file"; do
  /usr/bin/python3 "$here/../../jobs/make_data.py" ${args%%:*} --out refused.h5 >out.txt 2>err.txt
  code=$?
  [ "$code" -eq 2 ] && [ "$(wc -l < err.txt)" -eq 1 ] && grep -qE "^make_data: error: .*${args#*:}" err.txt && [ ! -e refused.h5 ] \
    && ok || { bad "make_data ${args%%:*}: exit $code, $(cat err.txt)"; }
done

# --data.file: a run file given as data supplies its model and loss settings;
# a model setting given differently wins, a loss setting given differently is refused.
expect 0 "" -- "$MFT" forward --data.file run.h5 --output.file asdata.h5
h5diff asdata.h5 run.h5 /data/targets >/dev/null && ok || bad "forward --data.file run.h5 changed the targets"
h5dump -A asdata.h5 | grep -A4 '"model.H"' | grep -q "(0): 4$" && ok || bad "forward did not take model.H from the data file"
expect 0 "" -- "$MFT" forward --data.file run.h5 --model.L 5 --output.file asdata5.h5
h5dump -H -d /params/Q asdata5.h5 | grep -q "( 5, 4, 2, 3 )" && ok || bad "model.L given beside a data file did not win"
expect 2 "loss.kind = pooled is given, but data.file run.h5 has loss.kind = token" -- "$MFT" forward --data.file run.h5 --loss.kind pooled

# --restart FILE alone: the checkpoint's settings are taken; the run ends as the uninterrupted one (bitwise).
expect 0 "" -- $run train --restart ck/checkpoint-00000004.h5 --train.steps 8 --checkpoint.dir ck2 --output.file resumed.h5
h5diff resumed.h5 run.h5 /params >/dev/null && ok || bad "--restart FILE alone did not continue the run"
expect 2 "cannot restart from ck/checkpoint-00000004.h5: model.L = 3 there but 5 now" -- \
  "$MFT" train --restart ck/checkpoint-00000004.h5 --model.L 5 --checkpoint.dir ck3

# An option the command does not read, on the command line, is refused naming the commands that read it.
expect 2 "train.lr is not used by mft forward \(only by train, study, bench\)" -- "$MFT" forward --train.lr 0.5
expect 2 "model.L is not used by mft lse" -- "$MFT" lse --model.L 3
expect 2 "ntk.part is not used by mft limit" -- "$MFT" limit --ntk.part value
# ... while a config file may hold sections for other commands.
printf '[model]\nd = 3\n[train]\nlr = 0.5\n[output]\nfile = lse.h5\n' > shared.cfg
expect 0 "" -- "$MFT" lse --config shared.cfg

# A params file of a normalized run brings its model.norm (the header says
# it, the output records it); the worst-input search takes it to the sphere.
expect 0 "" -- "$MFT" train --model.norm sphere --train.steps 2 --output.file sphere.h5
expect 0 "" -- "$MFT" forward --params.file sphere.h5 --output.file sphere_f.h5
grep -q "norm=sphere" out.txt && ok || bad "forward --params.file did not take model.norm = sphere: $(head -1 out.txt)"
[ "$(/usr/bin/python3 -c "import h5py; print(h5py.File('sphere_f.h5').attrs['model.norm'].decode())")" = sphere ] && ok ||
  bad "sphere_f.h5 does not record model.norm = sphere"
expect 0 "" -- "$MFT" info sphere_f.h5
grep -q "qkv, beta = 1, norm sphere; loss token" out.txt && ok || bad "mft info does not name the norm: $(grep model: out.txt)"
expect 0 "" -- "$MFT" worst --params.file sphere.h5 --worst.references "sphere.h5 sphere.h5" --worst.steps 3 \
  --output.file sphere_w.h5
grep -q "on the unit sphere" out.txt && ok || bad "mft worst does not say it searches the sphere: $(head -1 out.txt)"

# A picture of the run.
/usr/bin/python3 "$here/../../jobs/plot_run.py" run.h5 run.png > plot.txt 2>&1 && ok || { bad "plot_run.py failed"; cat plot.txt; }
[ "$(stat -c %s run.png 2>/dev/null || echo 0)" -gt 10000 ] && file run.png | grep -q PNG && ok || bad "run.png is not a PNG of a plot"

# The logit exponent: recorded, shown by mft info, brought by --params.file,
# and a different one given beside it refused.
expect 0 "" -- "$MFT" train --config "$here/../../input/quickstart.cfg" --train.steps 3 --model.logit_exponent 0.5 \
  --output.file logit.h5
"$MFT" info logit.h5 | grep -q 'beta = 1, g = 0.5' && ok || bad "mft info does not show the logit exponent"
expect 0 "" -- "$MFT" forward --params.file logit.h5 --output.file logit_forward.h5
grep -q ' g=0.5 ' out.txt && ok || bad "--params.file did not bring the logit exponent: $(head -n 1 out.txt)"
expect 2 'model.logit_exponent = 1 is given, but params.file logit.h5 has model.logit_exponent = 0.5' -- \
  "$MFT" forward --params.file logit.h5 --model.logit_exponent 1 --output.file bad.h5
finish
