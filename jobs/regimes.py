#!/usr/bin/python3
"""The regime map (docs/results.md, 'The regime map'): how far an L x H
transformer at initialisation moves its tokens, E |x_i(1) - x_i(0)|^2, for
centred and uncentred value maps, depth exponents a and head exponents c =
a or c = 1, over L; and where a limit exists, the distance to it.

    /usr/bin/python3 jobs/regimes.py OUT.csv [--a "0.25 0.5 0.75 1"] [--L "4 8 ... 256"]
        [--H 4] [--beta "0 1"] [--samples 400] [--ranks 2] [--mft build/mft]

Every point is `mft forward --init.samples S` (the samples' x(1) and the
probes' x(0) from its file); the standard error is the samples'. With v_mean
= 0 at a = c = 1/2 the limit is the diffusive SDE (`mft limit`): the
distance is the relative gap of the Gram means (docs/guide.md, 'Studies in
law'); with v_mean != 0 at a = c = 1 the limit is the mean-field ODE (`mft
limit`, adaptive): the distance is E |x(1) - X(1)|^2 / |X(1)|^2. At beta = 0
every point has a closed form, drawn beside them by jobs/plot_regimes.py:
    E |x_i(1) - x_i(0)|^2 = |xbar(0)|^2 (rho^L - 2 m^L + 1),
    m = 1 + mu L^-a H^(1-c),  rho = m^2 + sigma^2 L^-2a H^(1-2c),
mu = v_mean, sigma = v_gain (qkv heads): uniform attention keeps every
token's offset from its sequence's mean and moves the mean alone.
Writes OUT.csv: centred, a, c, L, H, beta, samples, moved, moved_se,
closed_form (beta = 0), limit_distance, limit_distance_se. A point whose
tokens overflow (mft exits 3) is said and left out.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

MEAN, GAIN = 0.5, 1.0  # the uncentred value maps' mean, and every value map's gain


def closed_form(mu, a, c, L, H, xbar2):
    s = L ** -a * H ** (1 - c)
    m = 1 + mu * s
    rho = m * m + GAIN ** 2 * L ** (-2 * a) * H ** (1 - 2 * c)
    return xbar2 * (rho ** L - 2 * m ** L + 1)


def run(args, options, out):
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpiexec", "--oversubscribe", "-n", str(args.ranks), args.mft] + options + ["--output.file", out]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode == 3:  # the tokens overflowed: an exploding point, recorded as such
        print(f"regimes.py: {' '.join(options[:1] + options[2:4])}...: {done.stderr.strip().splitlines()[-1]}")
        return False
    if done.returncode != 0:
        sys.exit(f"regimes.py: {' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return True


def model(mu, a, c, L, H, beta, d=4, N=8, M=2):
    return ["--model.L", str(L), "--model.H", str(H), "--model.d", str(d), "--model.k", "2", "--model.beta",
            str(beta), "--model.depth_exponent", str(a), "--model.head_exponent", str(c), "--init.v_mean", str(mu),
            "--init.v_gain", str(GAIN), "--data.M", str(M), "--data.N", str(N), "--data.family", "discrete"]


def limit_distance(args, tmp, mu, a, c, beta, samples_file):
    """The distance to the limit where one exists, and its standard error."""
    f = h5py.File(samples_file, "r")
    x = f["/output/samples"][()]  # (S, M, N, d)
    if mu == 0 and a == 0.5 and c == 0.5:
        path = f"{tmp}/sde-{beta}.h5"
        if not os.path.exists(path):
            run(args, ["limit"] + model(mu, a, c, 1, 1, beta) + ["--limit.paths", str(4 * args.samples),
                                                                 "--limit.steps", "32", "--limit.step_heads", "16"],
                path)
        g = h5py.File(path, "r")
        lm, ls = g["/limit/gram_mean"][()], g["/limit/gram_stderr"][()]
        gm, gs = f["/output/gram_mean"][()], f["/output/gram_stderr"][()]
        gaps = [np.linalg.norm(gm[m] - lm[m]) / np.linalg.norm(lm[m]) for m in range(len(lm))]
        ses = [np.sqrt(((gs[m] ** 2 + ls[m] ** 2)).sum()) / np.linalg.norm(lm[m]) for m in range(len(lm))]
        k = int(np.argmax(gaps))
        return gaps[k], ses[k]
    if mu != 0 and a == 1 and c == 1:
        path = f"{tmp}/ode-{beta}.h5"
        if not os.path.exists(path):
            run(args, ["limit"] + model(mu, a, c, 1, 1, beta) + ["--limit.heads", "4096"], path)
        X = h5py.File(path, "r")["/limit/tokens"][()]
        dist = ((x - X[None]) ** 2).sum(axis=(2, 3)).mean(axis=1) / (X ** 2).sum(axis=(1, 2)).mean()
        return dist.mean(), dist.std(ddof=1) / math.sqrt(len(dist))
    return float("nan"), float("nan")


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
                            if not run(args, ["forward"] + model(mu, a, c, L, args.H, beta) +
                                       ["--init.samples", str(args.samples)], out):
                                continue
                            f = h5py.File(out, "r")
                            x0, x1 = f["/data/tokens"][()], f["/output/samples"][()]
                            moved = ((x1 - x0[None]) ** 2).sum(axis=3).mean(axis=(1, 2))  # a sample's mean over tokens
                            xbar2 = (x0.mean(axis=1) ** 2).sum(axis=1).mean()
                            dist, dist_se = limit_distance(args, tmp, mu, a, c, beta, out)
                            rows.append(dict(centred=int(mu == 0), a=a, c=c, L=L, H=args.H, beta=beta,
                                             samples=args.samples, moved=moved.mean(),
                                             moved_se=moved.std(ddof=1) / math.sqrt(len(moved)),
                                             closed_form=closed_form(mu, a, c, L, args.H, xbar2) if beta == 0 else "",
                                             limit_distance=dist, limit_distance_se=dist_se))
                            print("regimes.py: " + ", ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"regimes.py: wrote {args.out}")


if __name__ == "__main__":
    main()
