#!/usr/bin/python3
"""Plots a trained study's heads' diversity (diversity.csv, docs/model.md,
'The heads' diversity'): the mean over seeds with its 95% interval against
one size, log-log, a line a series.

    /usr/bin/python3 jobs/plot_diversity.py STUDY_DIR [--x model.k]

--x: a column of diversity.csv (L, H) or a key the variants override
(model.k, the default); every other override and the time make the series
(at initialisation dashed, after training solid). Writes
STUDY_DIR/diversity.png. Draws only: every figure is mft's. Needs Debian's
python3-matplotlib.
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(rows, x):
    """{(label, time): [(x, mean, lo, hi), ...]} sorted in x."""
    out = {}
    for r in rows:
        over = dict(kv.split("=", 1) for kv in r["overrides"].split())
        if x in r:
            at = float(r[x])
            label = " ".join("%s=%s" % kv for kv in sorted(over.items()))
        elif x in over:
            at = float(over.pop(x))
            label = " ".join("%s=%s" % kv for kv in sorted(over.items()))
            label = (label + " " if label else "") + "L=%s H=%s" % (r["L"], r["H"])
        else:
            sys.exit("plot_diversity.py: %s is neither a column of diversity.csv nor a key the variants set" % x)
        out.setdefault((label, int(r["time"])), []).append(
            (at, float(r["diversity"]), float(r["diversity_lo"]), float(r["diversity_hi"])))
    return {k: sorted(v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description="a trained study's heads' diversity against one size")
    ap.add_argument("dir")
    ap.add_argument("--x", default="model.k")
    o = ap.parse_args()
    path = os.path.join(o.dir, "diversity.csv")
    if not os.path.exists(path):
        sys.exit("plot_diversity.py: %s is missing (a trained study writes it)" % path)
    rows = [r for r in csv.DictReader(open(path)) if r["diversity"] not in ("", "nan")]
    if not rows:
        sys.exit("plot_diversity.py: %s has no figure" % path)
    drawn = series(rows, o.x)
    last = max(t for _, t in drawn)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    labels = sorted({label for label, _ in drawn})
    for i, label in enumerate(labels):
        for t in sorted(t for l, t in drawn if l == label):
            pts = drawn[(label, t)]
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
            ax.errorbar(xs, ys, yerr=err, fmt="o-" if t == last else "o--", color="C%d" % (i % 10),
                        mfc="C%d" % (i % 10) if t == last else "none", capsize=3,
                        label="%s, step %d" % (label, t) if t in (0, last) else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(o.x)
    ax.set_ylabel("heads' diversity (mean over seeds, 95% interval)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    out = os.path.join(o.dir, "diversity.png")
    fig.savefig(out, dpi=120)
    print("plot_diversity.py: wrote %s" % out)


if __name__ == "__main__":
    main()
