#!/usr/bin/python3
"""Draws the regime map of jobs/regimes.py: E |x(1) - x(0)|^2 against L for
centred and uncentred value maps, one colour an exponent pair (a, c), the
measured points (beta = 0 filled, beta = 1 hollow) with the beta = 0 closed
form as a line; and the distance to the limit where one exists (a = c = 1/2
centred: the SDE; a = c = 1 uncentred: the ODE). Exploding moments are
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
from regimes import MEAN, closed_form  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_regimes.py REGIMES.csv OUT.png")
    rows = list(csv.DictReader(open(sys.argv[1])))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    pairs = sorted({(float(r["a"]), float(r["c"])) for r in rows})
    colours = dict(zip(pairs, plt.cm.viridis(np.linspace(0, 0.9, len(pairs)))))
    H = int(rows[0]["H"])
    for ax, centred in zip(axes[:2], (1, 0)):
        for (a, c) in pairs:
            sel = [r for r in rows if int(r["centred"]) == centred and float(r["a"]) == a and float(r["c"]) == c]
            if not sel:
                continue
            zero = [r for r in sel if float(r["beta"]) == 0]
            if zero:
                Ls = np.geomspace(min(int(r["L"]) for r in sel), max(int(r["L"]) for r in sel), 60)
                ratio = float(zero[0]["closed_form"]) / closed_form(0 if centred else MEAN, a, c, int(zero[0]["L"]), H, 1)
                ax.plot(Ls, [closed_form(0 if centred else MEAN, a, c, L, H, ratio) for L in Ls],
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
    ax = axes[2]
    for centred, (a, c), name in ((1, (0.5, 0.5), "SDE: relative Gram gap"), (0, (1.0, 1.0), "ODE: E|x - X|^2 / |X|^2")):
        for beta, face in ((0.0, "full"), (1.0, "none")):
            pts = [r for r in rows if int(r["centred"]) == centred and float(r["a"]) == a and float(r["c"]) == c
                   and float(r["beta"]) == beta and r["limit_distance"] not in ("", "nan")]
            if pts:
                ax.errorbar([int(r["L"]) for r in pts], [float(r["limit_distance"]) for r in pts],
                            yerr=[float(r["limit_distance_se"]) for r in pts], fmt="o-", ms=4, capsize=2,
                            color=colours[(a, c)], mfc=colours[(a, c)] if face == "full" else "none",
                            label=f"{name}, beta = {beta:g}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("L")
    ax.set_ylabel("distance to the limit")
    ax.set_title("where a limit exists", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("lines: the beta = 0 closed form; points: beta = 0 (filled), beta = 1 (hollow)", fontsize=9)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"plot_regimes.py: wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
