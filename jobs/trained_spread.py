#!/usr/bin/python3
"""The trained diffusive spread, drawn: reads a trained study of a = c = 1/2
students (input/study_training_spread.cfg) and draws, per L, the seeds'
spread of the trained outputs on the study's probes (mft's spread.csv: the
mean over pairs of seeds of 2 |x_s(1) - x_s'(1)|^2 / (|x_s(1)|^2 +
|x_s'(1)|^2), with its jackknife interval over the seeds) at the
transferred rate lr = LR0 (L / 4)^-1/2, the grid's rate nearest it.

    /usr/bin/python3 jobs/trained_spread.py STUDY_DIR [OUT.png] [--lr0 0.015625]

Prints the rows it draws; writes the figure (default
STUDY_DIR/trained_spread.png). Needs python3-h5py, python3-matplotlib.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training_regimes as tr  # noqa: E402  (spread.csv's reader)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="the seeds' spread of trained a = c = 1/2 students against L")
    ap.add_argument("folder")
    ap.add_argument("png", nargs="?")
    ap.add_argument("--lr0", type=float, default=0.015625, help="the rate at L = 4 (lr = lr0 (L / 4)^-1/2)")
    o = ap.parse_args()
    spread = {k: v for k, v in tr.spreads(o.folder).items() if k[0] == 0.5}
    rates = sorted({k[1] for k in spread})
    Ls = sorted({k[2] for k in spread})
    if not Ls:
        sys.exit("trained_spread.py: no a = c = 1/2 rows in " + os.path.join(o.folder, "spread.csv"))
    rows = []
    for L in Ls:
        want = o.lr0 * (L / 4) ** -0.5
        lr = min(rates, key=lambda r: abs(math.log(r / want)))
        if abs(math.log(lr / want)) > 0.1:
            sys.exit("trained_spread.py: L = %d has no rate near %.4g" % (L, want))
        rows.append((L, lr) + spread[(0.5, lr, L)])
        print("L = %4d, lr %.4g: spread %.4g [%.4g, %.4g]" % rows[-1])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.errorbar([r[0] for r in rows], [r[2] for r in rows],
                yerr=[[r[2] - r[3] for r in rows], [r[4] - r[2] for r in rows]], marker="o", capsize=3)
    ax.set(xlabel="L (H = 4)", ylabel="seeds' spread of the trained x(1)",
           title="a = c = 1/2, lr = %.4g (L/4)^-1/2: 95%% intervals" % o.lr0)
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    png = o.png or os.path.join(o.folder, "trained_spread.png")
    fig.savefig(png, dpi=110)
    print("wrote", png)


if __name__ == "__main__":
    main()
