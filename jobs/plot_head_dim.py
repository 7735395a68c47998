#!/usr/bin/python3
"""Draws a study over the head dimension (every variant sets model.k alone;
input/study_head_dim_trained.cfg): the corrected err of every cell against
k, one line an H, with its 95% interval, and mft's fit err^2 = A^2 H^-2q +
B^2 k^-2r (head_dim_fits.csv) beside it.

    /usr/bin/python3 jobs/plot_head_dim.py STUDY_DIR [--time T] [--quantity x]

Reads STUDY_DIR/study.csv and head_dim_fits.csv; writes
STUDY_DIR/head_dim.png. Draws only: every figure is mft's. Needs Debian's
python3-matplotlib and python3-numpy.
"""
import argparse
import csv
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--time", default=None, help="training step (default: the last)")
    ap.add_argument("--quantity", default="x", choices=["x", "p"])
    o = ap.parse_args()
    fits_path = os.path.join(o.dir, "head_dim_fits.csv")
    if not os.path.exists(fits_path):
        sys.exit("plot_head_dim.py: %s is missing (a study whose variants set model.k alone writes it)" % fits_path)
    fits = [f for f in csv.DictReader(open(fits_path)) if f["quantity"] == o.quantity]
    if not fits:
        sys.exit("plot_head_dim.py: %s has no fit of %s" % (fits_path, o.quantity))
    time = o.time if o.time is not None else max(fits, key=lambda f: int(f["time"]))["time"]
    fit = next((f for f in fits if f["time"] == time), None)
    if fit is None:
        sys.exit("plot_head_dim.py: no fit at time %s" % time)
    A, q, B, r = (float(fit[c]) for c in ("A", "q", "B", "r"))
    rows = [x for x in csv.DictReader(open(os.path.join(o.dir, "study.csv"))) if x["time"] == time]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for h in sorted({int(x["H"]) for x in rows}):
        at = [x for x in rows if int(x["H"]) == h and x["err_corrected_" + o.quantity]]
        k = np.array([float(re.search(r"model\.k=([0-9.]+)", x["overrides"]).group(1)) for x in at])
        err = np.array([float(x["err_corrected_" + o.quantity]) for x in at])
        lo = np.array([float(x["err_corrected_%s_lo" % o.quantity]) for x in at])
        hi = np.array([float(x["err_corrected_%s_hi" % o.quantity]) for x in at])
        line = ax.errorbar(k, err, yerr=[err - lo, hi - err], fmt="o", capsize=3, label="H = %d" % h)
        ks = np.geomspace(k.min(), k.max(), 50)
        ax.plot(ks, np.sqrt(A ** 2 * h ** (-2 * q) + B ** 2 * ks ** (-2 * r)), color=line[0].get_color(), lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("head dimension k")
    ax.set_ylabel("err of %s to the references (step %s)" % ("x(1)" if o.quantity == "x" else "p(0)", time))
    ax.set_title("q = %s [%s, %s], r = %s [%s, %s]" % (fit["q"], fit["q_lo"], fit["q_hi"], fit["r"], fit["r_lo"],
                                                       fit["r_hi"]), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(o.dir, "head_dim.png")
    fig.savefig(out, dpi=120)
    print("plot_head_dim.py: wrote %s" % out)


if __name__ == "__main__":
    main()
