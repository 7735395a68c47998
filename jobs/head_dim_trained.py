#!/usr/bin/python3
"""The trained (k, H) grid of a study whose variants are model.k values and
whose references are infinite heads (study.reference_k inf; the shipped
input/study_head_dim_trained.cfg): the fit

    err(k, H)^2 = A^2 H^-2q + B^2 k^-2r,

the H term the finite width's error (the references have many more heads),
the k term the gap between heads of dimension k and infinite heads (a bias:
the two add in squares), with 95% intervals from a parametric bootstrap of
the cells (each cell's err normal with the standard error its interval
gives). Then the order of the limits: B fitted at each H alone (r held at its
joint value, the H term free): when the B_H agree, the gap in k does not
depend on H, the fit is separable, and taking k then H, H then k or both
together reach the same limit.

    /usr/bin/python3 jobs/head_dim_trained.py STUDY_DIR [--time T] [--quantity x] [--calibrate R]

A diffusive study (a = c = 1/2: random trained models) is compared in law by
mft itself (a trained study in law: law.csv, law_fits.csv).
--calibrate R measures the intervals' coverage instead: R synthetic grids
whose cells are the fitted law plus normal noise of each cell's standard
error, each fitted and bootstrapped as the data are; prints how often the
95% intervals of q and r hold the law's.

Reads STUDY_DIR/study.csv; prints the table and the fits; writes
STUDY_DIR/head_dim_trained.csv and head_dim_trained.png. Needs
python3-numpy, python3-scipy, python3-matplotlib.
"""
import argparse
import csv
import os
import re

import numpy as np
from scipy.optimize import nnls

EXPONENTS = np.arange(0.0, 1.501, 0.01)
RATES = np.arange(0.01, 3.001, 0.01)


def cells(path, time, quantity):
    """(k, H, err, se) of every resolved cell at `time`."""
    out = []
    for r in csv.DictReader(open(path)):
        if r["time"] != time:
            continue
        k = re.search(r"model\.k=(\d+)", r["overrides"])
        err, lo, hi = (r[f"err_corrected_{quantity}{s}"] for s in ("", "_lo", "_hi"))
        if k is None or not err or r[f"resolved_{quantity}"] != "1":
            continue
        out.append((float(k.group(1)), float(r["H"]), float(err), (float(hi) - float(lo)) / 3.92))
    return np.array(out)


def fit(k, H, err, se):
    """A, q, B, r of err^2 = A^2 H^-2q + B^2 k^-2r: (q, r) on a grid, A^2 and
    B^2 >= 0 by weighted least squares of err^2 (weights 1 / se(err^2)), in
    closed form for every pair of the grid at once."""
    w = 1 / np.maximum(2 * err * se, 1e-12)
    y = err ** 2 * w
    U = H[None, :] ** (-2 * EXPONENTS[:, None]) * w  # (exponents, cells)
    V = k[None, :] ** (-2 * EXPONENTS[:, None]) * w
    Suu, Svv, Suy, Svy, Syy = (U * U).sum(1), (V * V).sum(1), U @ y, V @ y, y @ y
    Suv = U @ V.T
    np.seterr(divide="ignore", invalid="ignore")  # a pair of equal columns: only one of them is kept
    det = Suu[:, None] * Svv[None, :] - Suv ** 2
    a = (Svv[None, :] * Suy[:, None] - Suv * Svy[None, :]) / det
    b = (Suu[:, None] * Svy[None, :] - Suv * Suy[:, None]) / det
    both = Syy - a * Suy[:, None] - b * Svy[None, :]
    both[(a < 0) | (b < 0) | ~np.isfinite(both)] = np.inf
    only_a = np.broadcast_to((Syy - np.maximum(Suy, 0) ** 2 / Suu)[:, None], both.shape)
    only_b = np.broadcast_to((Syy - np.maximum(Svy, 0) ** 2 / Svv)[None, :], both.shape)
    res = np.minimum(both, np.minimum(only_a, only_b))
    i, j = np.unravel_index(np.argmin(res), res.shape)
    if res[i, j] == both[i, j]:
        A2, B2 = a[i, j], b[i, j]
    elif res[i, j] == only_a[i, j]:
        A2, B2 = max(Suy[i], 0) / Suu[i], 0.0
    else:
        A2, B2 = 0.0, max(Svy[j], 0) / Svv[j]
    return np.sqrt(A2), EXPONENTS[i], np.sqrt(B2), EXPONENTS[j], res[i, j]


def intervals(k, H, err, se, rng, boots):
    """The bootstrap's 95% intervals of (A, q, B, r)."""
    boot = np.array([fit(k, H, np.abs(err + se * rng.standard_normal(len(err))), se)[:4] for _ in range(boots)])
    return np.percentile(boot, [2.5, 97.5], axis=0)


def calibrate(k, H, se, law, replicates, boots, rng):
    """Coverage of q and r over synthetic grids of the fitted law."""
    A, q, B, r = law
    truth = np.sqrt(A ** 2 * H ** (-2 * q) + B ** 2 * k ** (-2 * r))
    hits = np.zeros(2)
    for _ in range(replicates):
        err = np.abs(truth + se * rng.standard_normal(len(truth)))
        lo, hi = intervals(k, H, err, se, rng, boots)
        hits += [lo[1] <= q <= hi[1], lo[3] <= r <= hi[3]]
    print(f"head_dim_trained: {replicates} synthetic grids of q = {q:.2f}, r = {r:.2f}: the 95% intervals hold q "
          f"in {hits[0] / replicates:.3f} of them, r in {hits[1] / replicates:.3f}")


def gap_at(k, err, se, r):
    """B at one H: err^2 = a + B^2 k^-2r, a >= 0 and B^2 >= 0."""
    y, w = err ** 2, 1 / np.maximum(2 * err * se, 1e-12)
    coef, _ = nnls(np.column_stack([np.ones_like(k), k ** (-2 * r)]) * w[:, None], y * w)
    return np.sqrt(coef[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--time", default=None, help="training step (default: the last)")
    ap.add_argument("--quantity", default="x", choices=["x", "p"])
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--calibrate", type=int, default=0, help="replicates of a coverage measurement (0: none)")
    a = ap.parse_args()
    path = os.path.join(a.dir, "study.csv")
    times = sorted({int(r["time"]) for r in csv.DictReader(open(path))})
    time = a.time if a.time is not None else str(times[-1])
    c = cells(path, time, a.quantity)
    if len(c) < 5:
        raise SystemExit(f"head_dim_trained: {len(c)} resolved cells at time {time}: too few to fit")
    k, H, err, se = c.T
    A, q, B, r, chi2 = fit(k, H, err, se)
    rng = np.random.default_rng(7)
    if a.calibrate:
        return calibrate(k, H, se, (A, q, B, r), a.calibrate, a.bootstrap, rng)
    lo, hi = intervals(k, H, err, se, rng, a.bootstrap)
    print(f"head_dim_trained: {a.dir}, time {time}, err_corrected_{a.quantity}, {len(c)} cells")
    print("   k     H   err (+- s.e.)")
    for row in c:
        print(f"{row[0]:4.0f} {row[1]:5.0f}   {row[2]:.4f} +- {row[3]:.4f}")
    print(f"err^2 = A^2 H^-2q + B^2 k^-2r: A = {A:.3f} [{lo[0]:.3f}, {hi[0]:.3f}], q = {q:.2f} [{lo[1]:.2f}, "
          f"{hi[1]:.2f}], B = {B:.4f} [{lo[2]:.4f}, {hi[2]:.4f}], r = {r:.2f} [{lo[3]:.2f}, {hi[3]:.2f}]; "
          f"chi^2 {chi2:.1f} on {len(c) - 4}")
    rows = []
    for h in sorted(set(H)):
        at = H == h
        b = gap_at(k[at], err[at], se[at], r)
        bb = [gap_at(k[at], np.abs(err[at] + se[at] * rng.standard_normal(at.sum())), se[at], r)
              for _ in range(a.bootstrap)]
        blo, bhi = np.percentile(bb, [2.5, 97.5])
        print(f"the gap in k at H = {h:.0f} alone: B = {b:.4f} [{blo:.4f}, {bhi:.4f}]")
        rows.append((h, b, blo, bhi))
    with open(os.path.join(a.dir, "head_dim_trained.csv"), "w") as f:
        f.write("A,A_lo,A_hi,q,q_lo,q_hi,B,B_lo,B_hi,r,r_lo,r_hi,chi2,cells\n")
        f.write(",".join(f"{v:.6g}" for v in (A, lo[0], hi[0], q, lo[1], hi[1], B, lo[2], hi[2], r, lo[3], hi[3],
                                              chi2, len(c))) + "\n")
        f.write("H,B_H,B_H_lo,B_H_hi\n")
        for row in rows:
            f.write(",".join(f"{v:.6g}" for v in row) + "\n")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ks = np.geomspace(k.min(), k.max(), 50)
    for h in sorted(set(H)):
        at = H == h
        line = ax.errorbar(k[at], err[at], yerr=1.96 * se[at], fmt="o", capsize=3, label=f"H = {h:.0f}")
        ax.plot(ks, np.sqrt(A ** 2 * h ** (-2 * q) + B ** 2 * ks ** (-2 * r)), color=line[0].get_color(), lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("head dimension k")
    ax.set_ylabel(f"err to infinite heads (time {time})")
    ax.set_title(f"q = {q:.2f}, r = {r:.2f}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.dir, "head_dim_trained.png"), dpi=120)
    print(f"head_dim_trained: wrote {a.dir}/head_dim_trained.csv, head_dim_trained.png")


if __name__ == "__main__":
    main()
