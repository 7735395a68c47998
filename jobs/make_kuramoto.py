#!/usr/bin/python3
"""Tokens on the circle for the Kuramoto check of model.norm = sphere.

    /usr/bin/python3 jobs/make_kuramoto.py OUT.h5 [--N 2000] [--r0 0.3] [--seed 35]

Writes a data file of one sequence of N tokens x_i = (cos theta_i, sin theta_i)
with the phases drawn from the wrapped Cauchy law of order parameter r0
(theta = 2 atan((1 - r0) / (1 + r0) tan(pi (u - 1/2))), u uniform), the law
for which Ott and Antonsen's reduction is exact: on the circle with beta = 0
and V = T I, the sphere's dynamics is the Kuramoto model of coupling T and
r(s)^2 = r0^2 e^{T s} / (1 - r0^2 + r0^2 e^{T s}) (docs/model.md). The
targets are the tokens (mft limit reads the tokens only). input/kuramoto.h5
is this script's output with its defaults. Needs Debian's python3-h5py.
"""
import argparse
import sys

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser(description="wrapped Cauchy tokens on the circle")
    ap.add_argument("out")
    ap.add_argument("--N", type=int, default=2000, help="tokens")
    ap.add_argument("--r0", type=float, default=0.3, help="order parameter of the law, in (0, 1)")
    ap.add_argument("--seed", type=int, default=35)
    a = ap.parse_args()
    if a.N < 1 or not 0 < a.r0 < 1:
        sys.exit(f"make_kuramoto: --N must be at least 1 and --r0 in (0, 1), got {a.N} and {a.r0}")
    u = np.random.default_rng(a.seed).random(a.N)
    theta = 2 * np.arctan((1 - a.r0) / (1 + a.r0) * np.tan(np.pi * (u - 0.5)))
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)[None]
    with h5py.File(a.out, "w") as f:
        f["/data/tokens"] = x
        f["/data/targets"] = x
        f.attrs["r0"] = a.r0
    print(f"make_kuramoto: wrote {a.out}: {a.N} tokens, wrapped Cauchy r0 = {a.r0}, "
          f"empirical r = {np.hypot(*x[0].mean(axis=0)):.4f}")


if __name__ == "__main__":
    main()
