#!/usr/bin/python3
"""Turns NumPy arrays or CSV tables into an mft data file.

    jobs/make_data.py --tokens X --targets Y [--readout W] --out data.h5
                      [--weights P] [--N N] [--heldout F --heldout-out heldout.h5 --seed S]

X, Y, W are .npy files, NAME.npz:KEY (one array of an .npz), or .csv tables
(comma-separated numbers, one row per token or sequence; --N N gives the
tokens per sequence of a CSV of tokens). Shapes (the documented layout):

    tokens   (M, N, d)                     a CSV: M*N rows of d numbers
    targets  (M, N, d) token loss          a CSV: M*N rows of d numbers
             (M, c)    pooled loss         a CSV: M rows of c numbers
    readout  (c, d)    pooled loss only
    weights  (M, N)    optional: each token's mass (a CSV: M rows of N numbers);
                       positive, each row scaled to sum to 1 (counts n_j give n_j / N)

The file holds /data/tokens, /data/targets (and /data/readout, /data/weights) as float64 and
the attributes M, N, d (and c, loss); mft reads the sizes and the loss from
it. With --heldout F, a fraction F of the sequences (drawn with --seed) goes
to --heldout-out instead, in the same layout: `mft forward --params.file
run.h5 --data.file heldout.h5` then gives the held-out risk of a trained run.

Wrong shapes, sizes that do not match, NaN or infinite entries and missing
files are refused with one line `make_data: error: ...` and exit 2; nothing
is written then.
"""
import argparse
import os
import sys

import numpy as np


class Refused(Exception):
    pass


def load(spec, what, N=None):
    """An array from NAME.npy, NAME.npz:KEY or NAME.csv."""
    path, key = spec, None
    if ".npz:" in spec:
        path, key = spec.rsplit(":", 1)
    if not os.path.isfile(path):
        raise Refused(f"--{what} {path}: no such file")
    try:
        if path.endswith(".npz"):
            with np.load(path) as z:
                if key is None:
                    if len(z.files) != 1:
                        raise Refused(f"--{what} {path} holds {', '.join(z.files)}: name one as {path}:KEY")
                    key = z.files[0]
                if key not in z.files:
                    raise Refused(f"--{what} {path} has no array '{key}' (it has {', '.join(z.files)})")
                a = z[key]
        elif path.endswith(".npy"):
            a = np.load(path, allow_pickle=False)
        elif path.endswith(".csv"):
            a = np.loadtxt(path, delimiter=",", ndmin=2)
            if N is not None:
                if a.shape[0] % N:
                    raise Refused(f"--{what} {path} has {a.shape[0]} rows, not a multiple of --N {N}")
                a = a.reshape(a.shape[0] // N, N, a.shape[1])
        else:
            raise Refused(f"--{what} {path}: not a .npy, .npz or .csv file")
    except Refused:
        raise
    except Exception as e:  # numpy's own message, on one line
        raise Refused(f"--{what} {path} cannot be read: {' '.join(str(e).split())}")
    try:
        a = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise Refused(f"--{what} {path} is not numeric")
    bad = ~np.isfinite(a)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise Refused(f"--{what} {path} has {int(bad.sum())} NaN or infinite entries (the first at {where})")
    return a


def check(tokens, targets, readout):
    if tokens.ndim != 3 or min(tokens.shape) == 0:
        raise Refused(f"tokens have shape {tokens.shape}, expected (M, N, d) with every size positive")
    M, N, d = tokens.shape
    if targets.shape == tokens.shape:
        if readout is not None:
            raise Refused(f"targets of shape {targets.shape} are per token (token loss): a readout is for pooled targets (M, c)")
        return "token"
    if targets.ndim == 2 and targets.shape[0] == M and targets.shape[1] > 0:
        c = targets.shape[1]
        if readout is None:
            raise Refused(f"pooled targets of shape {targets.shape} need --readout of shape ({c}, {d})")
        if readout.shape != (c, d):
            raise Refused(f"readout has shape {readout.shape}, expected ({c}, {d}) for targets {targets.shape} and d = {d}")
        return "pooled"
    raise Refused(f"targets have shape {targets.shape}: expected {tokens.shape} (token loss) or ({M}, c) (pooled loss)")


def masses(weights, tokens):
    """The weights as masses: shape (M, N), positive, each row scaled to sum to 1."""
    if weights.shape != tokens.shape[:2]:
        raise Refused(f"weights have shape {weights.shape}, expected (M, N) = {tokens.shape[:2]}")
    if (weights <= 0).any():
        where = tuple(int(i) for i in np.argwhere(weights <= 0)[0])
        raise Refused(f"weights must be positive: {weights[where]} at {where}")
    return weights / weights.sum(axis=1, keepdims=True)


def write(path, tokens, targets, readout, loss, weights=None):
    import h5py
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        f["/data/tokens"] = tokens
        f["/data/targets"] = targets
        if readout is not None:
            f["/data/readout"] = readout
        if weights is not None:
            f["/data/weights"] = weights
        M, N, d = tokens.shape
        f.attrs["M"], f.attrs["N"], f.attrs["d"], f.attrs["loss"] = M, N, d, loss
        if loss == "pooled":
            f.attrs["c"] = targets.shape[1]
    os.replace(tmp, path)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", required=True)
    p.add_argument("--targets", required=True)
    p.add_argument("--readout")
    p.add_argument("--weights", help="each token's mass, (M, N); rows scaled to sum to 1")
    p.add_argument("--out", required=True)
    p.add_argument("--N", type=int, help="tokens per sequence of a CSV of tokens (and of token targets)")
    p.add_argument("--heldout", type=float, default=0.0, help="fraction of the sequences held out (0 <= F < 1)")
    p.add_argument("--heldout-out", help="the held-out file (with --heldout)")
    p.add_argument("--seed", type=int, default=0, help="the draw of the held-out sequences")
    a = p.parse_args(argv)
    if a.heldout > 0 and not a.heldout_out:
        raise Refused("--heldout needs --heldout-out FILE")
    if a.N is not None and a.N < 1:
        raise Refused(f"--N {a.N} is not positive")
    for out in [a.out] + ([a.heldout_out] if a.heldout > 0 else []):
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise Refused(f"cannot write {out}: its folder is missing or not writable")
    tokens = load(a.tokens, "tokens", a.N)
    targets = load(a.targets, "targets")
    if a.targets.endswith(".csv") and targets.shape[0] == tokens.shape[0] * tokens.shape[1]:
        targets = targets.reshape(tokens.shape[0], tokens.shape[1], targets.shape[1])  # one row per token
    readout = load(a.readout, "readout") if a.readout else None
    weights = load(a.weights, "weights") if a.weights else None
    convert(tokens, targets, readout, a.out, a.heldout, a.heldout_out, a.seed, weights)


def convert(tokens, targets, readout, out, heldout=0.0, heldout_out=None, seed=0, weights=None):
    """Checks the arrays and writes them, a fraction `heldout` of the sequences to heldout_out."""
    if not 0 <= heldout < 1:
        raise Refused(f"--heldout {heldout} is not in [0, 1)")
    loss = check(tokens, targets, readout)
    if weights is not None:
        weights = masses(weights, tokens)
    M = tokens.shape[0]
    held = np.zeros(M, dtype=bool)
    if heldout > 0:
        k = int(round(heldout * M))
        if k < 1 or k >= M:
            raise Refused(f"--heldout {heldout} of {M} sequences leaves {k} held out and {M - k} to train: both need one")
        held[np.random.default_rng(seed).choice(M, size=k, replace=False)] = True
    kept = lambda w, rows: None if w is None else w[rows]
    write(out, tokens[~held], targets[~held], readout, loss, kept(weights, ~held))
    print(f"make_data: wrote {out}: {int((~held).sum())} sequences of {tokens.shape[1]} tokens in R^{tokens.shape[2]}, "
          f"{loss} loss" + (f" ({targets.shape[1]} outputs)" if loss == "pooled" else ""))
    if held.any():
        write(heldout_out, tokens[held], targets[held], readout, loss, kept(weights, held))
        print(f"make_data: wrote {heldout_out}: {int(held.sum())} held-out sequences")
    return held


def run(main, name):
    """main(argv); a refusal is one line `NAME: error: ...` and exit 2."""
    try:
        main(sys.argv[1:])
    except Refused as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    run(main, "make_data")
