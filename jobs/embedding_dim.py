#!/usr/bin/python3
"""The embedding dimension with the heads: models along d = k H against the
same models at a fixed d, compared through the N x N Gram matrices of x(1).

The task: M sequences of N tokens in R^d0 (d0 = 4, drawn once) and, as
targets, their x(1) under one teacher in R^d0 (2 x 8 qkvo heads, k = 4,
v_mean = -0.5, its own seed). A model of dimension d >= d0 sees both padded
with zeros, an isometric embedding (the Gaussian initial law of a head is
invariant under rotations), so every d learns the same task and the Gram
matrices G_ij = x_i(1) . x_j(1) of every d compare directly.

Models: L x H qkvo heads of k = 4 (v_mean = 0.5, o_mean = 1, Gaussian law,
the mean-field exponents), H = 1, 2, 4, 8, either at d = k H ("grown") or at
d = d0 ("fixed"), S seeds a cell, against R references of H_ref heads (d = k
H_ref, or d0) from their own seeds, at initialisation (--init.samples) and
after T steps of AdamW and of blockwise AdamW (the same rate):

    err(H)^2 = mean_s |G_s - mean_r G_r|^2 / (M N^2) - floor^2 / R,
    floor^2  = mean over reference pairs a < b of |G_a - G_b|^2 / (2 M N^2),

with a 95% interval from a bootstrap over seeds, and the fit err = C H^-q.
Seed 1 leaves open whether the rate in H survives when d grows with H; seed
2 finds blockwise AdamW's constant independent of d.

    /usr/bin/python3 jobs/embedding_dim.py MFT OUT_DIR [--H 1 2 4 8] [--Href 32]
            [--seeds 6] [--refs 4] [--steps 200] [--lr 0.01] [--ranks 1]

Writes OUT_DIR/embedding_dim.csv (stage, design, H, d, err and its interval)
and OUT_DIR/embedding_dim_fits.csv (stage, design, C, q and its interval).
Needs python3-numpy, python3-h5py, mpiexec.
"""
import argparse
import csv
import os
import subprocess
import sys

import h5py
import numpy as np

D0, K, M, N = 4, 4, 8, 8
MODEL = ["--model.head_kind", "qkvo", "--model.k", str(K), "--init.v_mean", "0.5", "--init.o_mean", "1"]


def run(mft, ranks, args):
    """mft under mpiexec; stops the script with mft's last lines on failure."""
    cmd = (["mpiexec", "-n", str(ranks)] if ranks > 1 else []) + [mft] + args
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"embedding_dim: {' '.join(cmd)} failed:\n{p.stdout[-600:]}{p.stderr[-600:]}")


def data_file(out, mft, ranks, d, z, y):
    """The task padded to dimension d, written by jobs/make_data.py."""
    path = os.path.join(out, f"task-d{d}.h5")
    if not os.path.exists(path):
        pad = lambda a: np.concatenate([a, np.zeros(a.shape[:-1] + (d - D0,))], axis=-1)
        np.save(os.path.join(out, "tokens.npy"), pad(z))
        np.save(os.path.join(out, "targets.npy"), pad(y))
        make = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_data.py")
        subprocess.run(["/usr/bin/python3", make, "--tokens", os.path.join(out, "tokens.npy"), "--targets",
                        os.path.join(out, "targets.npy"), "--out", path], check=True, capture_output=True)
    return path


def grams(x):
    """(..., M, N, d) -> (..., M, N, N)."""
    return np.einsum("...mid,...mjd->...mij", x, x)


def err(models, refs, rng, boots=400):
    """err and its bootstrap interval over the models' seeds."""
    R = len(refs)
    gbar = refs.mean(axis=0)
    floor2 = np.mean([((refs[a] - refs[b]) ** 2).mean() / 2 for a in range(R) for b in range(a + 1, R)])
    d2 = ((models - gbar) ** 2).mean(axis=(1, 2, 3))
    value = lambda s: np.sqrt(max(s.mean() - floor2 / R, 0.0))
    boot = [value(d2[rng.integers(0, len(d2), len(d2))]) for _ in range(boots)]
    return value(d2), *np.percentile(boot, [2.5, 97.5])


def outputs(a, mft, ranks, stage, d, H, path, seeds):
    """x(1) of every seed: one --init.samples run at initialisation, one
    training run a seed otherwise."""
    base = MODEL + ["--model.L", str(a.L), "--model.H", str(H), "--model.d", str(d), "--data.file", path]
    tmp = os.path.join(a.out, "run.h5")
    if stage == "init":
        run(mft, ranks, ["forward"] + base + ["--init.samples", str(len(seeds)), "--init.seed", str(seeds[0]),
                                               "--output.file", tmp])
        with h5py.File(tmp) as f:
            return f["/output/samples"][...]
    xs = []
    for s in seeds:
        run(mft, ranks, ["train"] + base + ["--init.seed", str(s), "--train.optimizer", stage, "--train.lr",
                                             str(a.lr), "--train.steps", str(a.steps), "--train.log_every", "100000",
                                             "--output.file", tmp])
        with h5py.File(tmp) as f:
            xs.append(f["/output/tokens"][...])
    return np.array(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mft")
    ap.add_argument("out")
    ap.add_argument("--H", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--Href", type=int, default=32)
    ap.add_argument("--L", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--refs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--ranks", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(2026)
    z = rng.standard_normal((M, N, D0)) / np.sqrt(D0)
    teacher_in = data_file(a.out, a.mft, a.ranks, D0, z, z)  # the teacher's inputs (targets unused)
    tmp = os.path.join(a.out, "teacher.h5")
    run(a.mft, a.ranks, ["forward", "--model.L", "2", "--model.H", "8", "--model.d", str(D0), "--model.k", str(K),
                         "--model.head_kind", "qkvo", "--init.v_mean", "-0.5", "--init.seed", "999", "--data.file",
                         teacher_in, "--output.file", tmp])
    with h5py.File(tmp) as f:
        y = f["/output/tokens"][...]
    os.remove(teacher_in)
    rows, fits = [], []
    for stage in ["init", "adamw", "adamw-block"]:
        for design in ["fixed", "grown"]:
            dim = (lambda H: D0) if design == "fixed" else (lambda H: max(D0, K * H))
            ref = grams(outputs(a, a.mft, a.ranks, stage, dim(a.Href), a.Href,
                                data_file(a.out, a.mft, a.ranks, dim(a.Href), z, y),
                                [1000000 + r for r in range(a.refs)]))
            Hs, es = [], []
            for H in a.H:
                g = grams(outputs(a, a.mft, a.ranks, stage, dim(H), H, data_file(a.out, a.mft, a.ranks, dim(H), z, y),
                                  [1 + s for s in range(a.seeds)]))
                e, lo, hi = err(g, ref, rng)
                rows.append([stage, design, H, dim(H), e, lo, hi])
                Hs.append(H), es.append(e)
                print(f"{stage:12s} {design:6s} H = {H:3d} d = {dim(H):4d}: err {e:.4f} [{lo:.4f}, {hi:.4f}]", flush=True)
            q = -np.polyfit(np.log(Hs), np.log(es), 1)[0]
            C = np.exp(np.mean(np.log(es) + q * np.log(Hs)))
            se = [(r[6] - r[5]) / 3.92 for r in rows[-len(Hs):]]
            boot = [-np.polyfit(np.log(Hs), np.log(np.abs(np.array(es) + np.array(se) * rng.standard_normal(len(es)))
                                                      + 1e-12), 1)[0] for _ in range(400)]
            qlo, qhi = np.percentile(boot, [2.5, 97.5])
            fits.append([stage, design, C, q, qlo, qhi])
            print(f"{stage:12s} {design:6s} err = {C:.3f} H^-q, q = {q:.3f} [{qlo:.3f}, {qhi:.3f}]", flush=True)
    with open(os.path.join(a.out, "embedding_dim.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["stage", "design", "H", "d", "err", "err_lo", "err_hi"])
        w.writerows(rows)
    with open(os.path.join(a.out, "embedding_dim_fits.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["stage", "design", "C", "q", "q_lo", "q_hi"])
        w.writerows(fits)
    print(f"embedding_dim: wrote {a.out}/embedding_dim.csv, embedding_dim_fits.csv")


if __name__ == "__main__":
    main()
