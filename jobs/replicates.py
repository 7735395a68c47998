#!/usr/bin/env python3
"""How often replicates of one study agree with each other's intervals.

    jobs/replicates.py DIR DIR [DIR ...]     (study folders of one config run
                                               with other --init.seed offsets)

For every figure of fits.csv (slope_L, slope_H, a, b of the corrected fits,
per variant, quantity and time), counts the ordered pairs (i, j) of
replicates where i's point lies inside j's 95% interval. With calibrated
intervals of the same width the expected fraction is
P(|Z| < 1.96 / sqrt(2)) = 0.834: the two points each carry the noise.
Figures flagged as not determined (a bound, too few depths or widths, one
term) are counted apart.

Then the replicates pooled, per variant and time, for x(1) (quantity
`tokens`): the inverse-variance weighted mean of each figure over the
replicates where it is determined, with the standard error taken from each
interval's half-width over 1.96 (a fixed-effect combination: the replicates
share data and teacher, not seeds)."""
import csv
import itertools
import math
import sys

FIGURES = {"slope_L": ("slope_L_lo", "slope_L_hi", "slope_L:"),
           "slope_H": ("slope_H_lo", "slope_H_hi", "slope_H:"),
           "a": ("a_lo", "a_hi", "a: ab: joint:"),
           "b": ("b_lo", "b_hi", "b: ab: joint:")}


def read(folder):
    rows = {}
    with open(folder + "/fits.csv") as f:
        for r in csv.DictReader(f):
            if r["corrected"] == "1":
                rows[(r["variant"], r["quantity"], r["time"])] = r
    return rows


def number(x):
    return float(x) if x not in ("", None) else math.nan


def main(folders):
    if len(folders) < 2:
        sys.exit("replicates.py: give at least two study folders")
    runs = [read(d) for d in folders]
    keys = sorted(set.intersection(*(set(r) for r in runs)))
    expected = math.erf(1.959964 / math.sqrt(2) / math.sqrt(2))
    print(f"{len(folders)} replicates, {len(keys)} fits each; expected agreement with calibrated intervals {expected:.3f}")
    print(f"{'figure':8s} {'time':>5s} {'agree':>7s} {'pairs':>6s} {'undetermined':>13s}  points")
    for name, (lo, hi, undecided) in FIGURES.items():
        for time in sorted({k[2] for k in keys}, key=int):
            agree = pairs = flagged = 0
            points = []
            for key in (k for k in keys if k[2] == time):
                rows = [r[key] for r in runs]
                bad = [any(f in r["flags"] for f in undecided.split()) for r in rows]
                points += [number(r[name]) for r in rows]
                for i, j in itertools.permutations(range(len(rows)), 2):
                    if bad[i] or bad[j]:
                        flagged += 1
                        continue
                    x, a, b = number(rows[i][name]), number(rows[j][lo]), number(rows[j][hi])
                    pairs += 1
                    agree += a <= x <= b
            frac = agree / pairs if pairs else math.nan
            spread = f"{min(points):.3f} .. {max(points):.3f}" if points else ""
            print(f"{name:8s} {time:>5s} {frac:7.3f} {pairs:6d} {flagged:13d}  {spread}")
    print("\npooled over the replicates (x(1)): estimate [95% interval] (replicates used)")
    for key in keys:
        if key[1] != "tokens":
            continue
        cells = []
        for name, (lo, hi, undecided) in FIGURES.items():
            w = wx = 0.0
            used = 0
            for r in (run[key] for run in runs):
                x, a, b = number(r[name]), number(r[lo]), number(r[hi])
                if any(f in r["flags"] for f in undecided.split()) or not (b > a):
                    continue
                weight = (2 * 1.959964 / (b - a)) ** 2
                w += weight
                wx += weight * x
                used += 1
            if used:
                m, se = wx / w, 1 / math.sqrt(w)
                cells.append(f"{name} {m:.3f} [{m - 1.96 * se:.3f}, {m + 1.96 * se:.3f}] ({used})")
            else:
                cells.append(f"{name} not determined")
        print(f"variant {key[0]} t={key[2]}: " + "; ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
