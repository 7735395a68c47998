#!/usr/bin/python3
"""The trained diffusive spread: reads a trained study of a = c = 1/2
students (input/study_training_spread.cfg) and prints, per L, the seeds'
spread of the trained outputs on the study's probes at the transferred rate
lr = LR0 (L / 4)^-1/2 (training_regimes.py's spread: the mean over pairs of
seeds of |x_s(1) - x_s'(1)|^2 / |x(1)|^2) with its jackknife standard error
over the seeds, and whether it settles: two consecutive doublings of L that
change it by less than their combined standard error.

    /usr/bin/python3 jobs/trained_spread.py STUDY_DIR [OUT.png] [--lr0 0.015625]

Writes STUDY_DIR/trained_spread.csv and the figure (default
STUDY_DIR/trained_spread.png). Needs python3-h5py, python3-matplotlib.
"""
import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training_regimes as tr  # noqa: E402  (its case reader and spread)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def jackknife(cases, a, lr, L):
    """The spread and its jackknife standard error over the seeds."""
    seeds = sorted({s for (ca, cl, cL, s) in cases if (ca, cl, cL) == (a, lr, L)})
    whole = tr.spread(cases, a, lr, L)
    if len(seeds) < 3:
        return whole, float("nan"), len(seeds)
    loo = [tr.spread({k: v for k, v in cases.items() if k[3] != s}, a, lr, L) for s in seeds]
    n = len(seeds)
    return whole, math.sqrt((n - 1) / n * sum((x - np.mean(loo)) ** 2 for x in loo)), n


def main():
    ap = argparse.ArgumentParser(description="the seeds' spread of trained a = c = 1/2 students against L")
    ap.add_argument("folder")
    ap.add_argument("png", nargs="?")
    ap.add_argument("--lr0", type=float, default=0.015625, help="the rate at L = 4 (lr = lr0 (L / 4)^-1/2)")
    o = ap.parse_args()
    cases = tr.read_cases(o.folder)
    rates = sorted({k[1] for k in cases})
    Ls = sorted({k[2] for k in cases if k[0] == 0.5})
    if not Ls:
        sys.exit("trained_spread.py: no a = c = 1/2 cases in " + o.folder)
    rows = []
    for L in Ls:
        want = o.lr0 * (L / 4) ** -0.5
        lr = rates[tr.nearest(rates, want)]
        if abs(math.log(lr / want)) > 0.1:
            sys.exit("trained_spread.py: L = %d has no rate near %.4g" % (L, want))
        value, se, seeds = jackknife(cases, 0.5, lr, L)
        rows.append((L, lr, seeds, value, se))
        print("L = %4d, lr %.4g, %d seeds: spread %.4g +- %.2g" % (L, lr, seeds, value, se))
    steps = [(a, b, abs(b[3] - a[3]) < math.hypot(a[4], b[4])) for a, b in zip(rows[:-1], rows[1:])]
    for a, b, small in steps:
        print("L %d -> %d: change %+.3g, combined s.e. %.2g: %s" %
              (a[0], b[0], b[3] - a[3], math.hypot(a[4], b[4]), "within" if small else "beyond"))
    settled = [steps[k][0][0] for k in range(len(steps) - 1) if steps[k][2] and steps[k + 1][2]]
    print("settles: " + ("from L = %d (two doublings within their standard errors)" % settled[0] if settled else
                         "not on this grid"))
    with open(os.path.join(o.folder, "trained_spread.csv"), "w", newline="") as f:
        csv.writer(f).writerows([["L", "lr", "seeds", "spread", "spread_se"]] +
                                [[L, "%.4g" % lr, n, "%.5g" % v, "%.3g" % s] for L, lr, n, v, s in rows])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.errorbar([r[0] for r in rows], [r[3] for r in rows], yerr=[1.96 * r[4] for r in rows], marker="o", capsize=3)
    ax.set(xscale="log", xlabel="L (H = 4)", ylabel="seeds' spread of the trained x(1)",
           title="a = c = 1/2, lr = %.4g (L/4)^-1/2: 95%% intervals" % o.lr0)
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    png = o.png or os.path.join(o.folder, "trained_spread.png")
    fig.savefig(png, dpi=110)
    print("wrote", png)


if __name__ == "__main__":
    main()
