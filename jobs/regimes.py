#!/usr/bin/python3
"""The regime map (docs/results.md, 'The regime map'): how far an L x H
transformer at initialisation moves its tokens, E |x_i(1) - x_i(0)|^2, for
centred and uncentred value maps, depth exponents a and head exponents c =
a or c = 1, over L. Launches and collects: every figure is mft's.

    /usr/bin/python3 jobs/regimes.py OUT.csv [--a "0.25 0.5 0.75 1"] [--L "4 8 ... 256"]
        [--H 4] [--beta "0 1"] [--samples 400] [--ranks 2] [--mft build/mft]

Every point is `mft forward --init.samples S`, whose file holds the samples'
mean move `moved`, its standard error and, at beta = 0, its closed form
(docs/model.md, 'Depth and head exponents'). Writes OUT.csv: centred, a, c, L, H,
beta, samples, moved, moved_se, closed_form (beta = 0). A point whose tokens
overflow (mft exits 3) is said and left out. How far a model is from its
limit is what the studies measure (docs/results.md).
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

import h5py

MEAN, GAIN = 0.5, 1.0  # the uncentred value maps' mean, and every value map's gain


def run(args, options, out, label):
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpiexec", "--oversubscribe", "-n", str(args.ranks), args.mft] + options + ["--output.file", out]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode == 3:  # the tokens overflowed: an exploding point, said and left out
        said = [line for line in done.stderr.splitlines() if line.startswith("mft: error:")]
        print(f"regimes.py: {label}: {said[0] if said else done.stderr.strip()}")
        return False
    if done.returncode != 0:
        sys.exit(f"regimes.py: {' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return True


def model(mu, a, c, L, H, beta, d=4, N=8, M=2):
    return ["--model.L", str(L), "--model.H", str(H), "--model.d", str(d), "--model.k", "2", "--model.beta",
            str(beta), "--model.depth_exponent", str(a), "--model.head_exponent", str(c), "--init.v_mean", str(mu),
            "--init.v_gain", str(GAIN), "--data.M", str(M), "--data.N", str(N), "--data.family", "discrete"]


def attributes(path, *keys):
    """The run file's attributes (text) as numbers; "" where one is absent."""
    a = h5py.File(path, "r").attrs
    text = [(a[k].decode() if isinstance(a[k], bytes) else str(a[k])) if k in a else "" for k in keys]
    return [float(t) if t else "" for t in text]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--a", default="0.25 0.5 0.75 1")
    p.add_argument("--L", default="4 8 16 32 64 128 256")
    p.add_argument("--H", type=int, default=4)
    p.add_argument("--beta", default="0 1")
    p.add_argument("--samples", type=int, default=400)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--mft", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "mft"))
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for beta in [float(b) for b in args.beta.split()]:
            for mu in (0.0, MEAN):
                for a in [float(v) for v in args.a.split()]:
                    for c in sorted({a, 1.0}):
                        for L in [int(v) for v in args.L.split()]:
                            out = f"{tmp}/s-{len(rows)}.h5"
                            label = f"centred {int(mu == 0)}, a {a}, c {c}, L {L}, beta {beta}"
                            if not run(args, ["forward"] + model(mu, a, c, L, args.H, beta) +
                                       ["--init.samples", str(args.samples)], out, label):
                                continue
                            moved, se, closed = attributes(out, "moved", "moved_stderr", "moved_closed_form")
                            rows.append(dict(centred=int(mu == 0), a=a, c=c, L=L, H=args.H, beta=beta,
                                             samples=args.samples, moved=moved, moved_se=se, closed_form=closed))
                            print("regimes.py: " + ", ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"regimes.py: wrote {args.out}")


if __name__ == "__main__":
    main()
