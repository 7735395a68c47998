#!/usr/bin/python3
"""Draws the regime map of jobs/regimes.py: E |x(1) - x(0)|^2 against L for
centred and uncentred value maps, one colour an exponent pair (a, c), the
measured points (beta = 0 filled, beta = 1 hollow) with mft's beta = 0
closed form at the same L joined by a line. Exploding moments are
heavy-tailed: where the sample mean falls below the closed form by many
standard errors the samples have not met the rare draws that make the mean.

    /usr/bin/python3 jobs/plot_regimes.py REGIMES.csv OUT.png

Needs Debian's python3-matplotlib.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from regimes import MEAN  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_regimes.py REGIMES.csv OUT.png")
    rows = list(csv.DictReader(open(sys.argv[1])))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    pairs = sorted({(float(r["a"]), float(r["c"])) for r in rows})
    colours = dict(zip(pairs, plt.cm.viridis(np.linspace(0, 0.9, len(pairs)))))
    H = int(rows[0]["H"])
    for ax, centred in zip(axes, (1, 0)):
        for (a, c) in pairs:
            sel = [r for r in rows if int(r["centred"]) == centred and float(r["a"]) == a and float(r["c"]) == c]
            if not sel:
                continue
            zero = [r for r in sel if float(r["beta"]) == 0 and r["closed_form"] != ""]
            if zero:
                ax.plot([int(r["L"]) for r in zero], [float(r["closed_form"]) for r in zero],
                        color=colours[(a, c)], lw=1, label=f"a = {a:g}, c = {c:g}")
            for beta, face in ((0.0, "full"), (1.0, "none")):
                pts = [r for r in sel if float(r["beta"]) == beta]
                if pts:
                    ax.errorbar([int(r["L"]) for r in pts], [float(r["moved"]) for r in pts],
                                yerr=[float(r["moved_se"]) for r in pts], fmt="o", ms=4, capsize=2,
                                color=colours[(a, c)], mfc=colours[(a, c)] if face == "full" else "none")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("L (H = %d)" % H)
        ax.set_ylabel("E |x(1) - x(0)|^2")
        ax.set_title("centred value maps" if centred else f"uncentred value maps (v_mean = {MEAN})", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("lines: the beta = 0 closed form; points: beta = 0 (filled), beta = 1 (hollow)", fontsize=9)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"plot_regimes.py: wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
