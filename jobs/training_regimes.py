#!/usr/bin/python3
"""Training in both regimes: reads a trained learning-rate study whose base
variants differ in their exponents (input/study_training_regimes.cfg), and
prints and draws, per regime (a = c):

  - the rate's scaling that makes depth transfer: of g = 0, -1/2, -1, the
    one nearest the best rate's drift in L (fits.csv, quantity best_lr);
  - the collapse of the loss curves when the rate scales as lr0 (L / L0)^g
    (L0 the smallest L; every lr0 of the grid from which each L's rate is
    on it): per pair of consecutive depths, max_t |R_L(t) - R_2L(t)| /
    R_2L(t) of the seeds' mean curves (study.csv's curve_distance) with its
    sampling floor; curves that collapse have distances that fall with L;
  - how far the heads moved by the last step: every block's relative change
    a layer (movement.csv's layers' mean, HeadsBlockChange) against L, at
    a fixed rate and at the transferred scaling from the same lr0 (the
    smallest from which both stay on the grid), with its slope in L;
  - the seeds' spread of the trained outputs at the transferred rate
    (spread.csv, mft's): near 0 when training leads every seed to one
    function (a deterministic limit), of order 1 when the outputs stay random.

    /usr/bin/python3 jobs/training_regimes.py STUDY_DIR [OUT.png]

Writes STUDY_DIR/regimes_collapse.csv and regimes_movement.csv, and the
figure (default STUDY_DIR/training_regimes.png). Needs python3-h5py,
python3-matplotlib.
"""
import csv
import glob
import math
import os
import re
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SCALINGS = (0.0, -0.5, -1.0)


def text(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def case_files(folder):
    """The finished cases' files (not a running case's recordings)."""
    return [p for p in glob.glob(os.path.join(folder, "case-*.h5")) if re.fullmatch(r"case-\d+\.h5", os.path.basename(p))]


def read_cases(folder):
    """Every model case: (a, lr, L, seed) -> its loss curve and block change
    at the last time (layers' mean per block)."""
    cases = {}
    for path in case_files(folder):
        with h5py.File(path, "r") as f:
            if text(f.attrs["study.reference"]) == "true":
                continue
            key = (float(f.attrs["model.depth_exponent"]), float(f.attrs["train.lr"]),
                   int(f.attrs["study.case_L"]), int(f.attrs["study.case_seed"]))
            last = str(max(int(t) for t in f["times"]))
            blocks = f["times"][last]["training"]["block_change"][...]
            cases[key] = {"loss": f["training/loss"][...], "blocks": blocks.mean(axis=0)}
    if not cases:
        sys.exit("training_regimes.py: no model case files in " + folder)
    return cases


def mean_curve(cases, a, lr, L, se=False):
    """The seeds' mean loss curve (with se: and its standard error); None if one diverged."""
    curves = [c["loss"] for (ca, cl, cL, _), c in cases.items() if (ca, cl, cL) == (a, lr, L)]
    if not curves or any(not np.all(np.isfinite(c)) for c in curves):
        return None
    n = min(len(c) for c in curves)
    curves = np.array([c[:n] for c in curves])
    mean = curves.mean(axis=0)
    return (mean, curves.std(axis=0, ddof=1) / math.sqrt(len(curves))) if se else mean


def best_rates(folder, a_of_variant):
    """Per (a, L): the best rate by the training risk (best_lr.csv)."""
    best = {}
    for r in csv.DictReader(open(os.path.join(folder, "best_lr.csv"))):
        if r["quantity"] == "best_lr":
            best[(a_of_variant[int(r["variant"])], int(r["L"]))] = float(r["best_lr"])
    return best


def nearest(rates, x):
    return min(range(len(rates)), key=lambda j: abs(math.log(rates[j] / x)))


def on_grid(rates, j0, g, L, L0):
    """The grid index of lr0 (L / L0)^g, or None off the grid or between its points."""
    want = rates[j0] * (L / L0) ** g
    j = nearest(rates, want)
    return j if abs(math.log(rates[j] / want)) < 0.1 else None


def collapse(cases, a, rates, j0, g, Ls):
    """Per pair of consecutive depths (L, 2L) at lr0 (L / L0)^g: the curve
    distance max_t |R_L(t) - R_2L(t)| / R_2L(t) of the seeds' mean curves (inf
    where one diverged) and its sampling floor, 2 max_t (se_L^2 + se_2L^2)^(1/2)
    / R_2L(t) from the seeds' standard errors; None where a rate leaves the grid."""
    out = []
    for L, L2 in zip(Ls[:-1], Ls[1:]):
        j, j2 = on_grid(rates, j0, g, L, Ls[0]), on_grid(rates, j0, g, L2, Ls[0])
        if j is None or j2 is None:
            return None
        cur, ref = mean_curve(cases, a, rates[j], L, True), mean_curve(cases, a, rates[j2], L2, True)
        if cur is None or ref is None:
            out.append((float("inf"), float("nan")))
            continue
        out.append((float(np.max(np.abs(cur[0] - ref[0]) / ref[0])),
                    float(2 * np.max(np.hypot(cur[1], ref[1]) / ref[0]))))
    return out


def transfer_scaling(folder, a_of_variant):
    """Per regime: the scaling of SCALINGS nearest the best rate's drift in L (fits.csv)."""
    out = {}
    for r in csv.DictReader(open(os.path.join(folder, "fits.csv"))):
        if r["quantity"] == "best_lr" and int(r["variant"]) in a_of_variant:
            out[a_of_variant[int(r["variant"])]] = (min(SCALINGS, key=lambda g: abs(g - float(r["slope_L"]))),
                                                    float(r["slope_L"]), r["slope_L_lo"], r["slope_L_hi"])
    return out


def spreads(folder):
    """mft's spread.csv at the last recorded time: (a, lr, L) -> (the seeds'
    spread of x(1), its interval's ends), each variant's a and lr read from
    its case files."""
    of_variant = {}
    for path in case_files(folder):
        with h5py.File(path, "r") as f:
            of_variant[text(f.attrs["study.variant"])] = (float(f.attrs["model.depth_exponent"]),
                                                         float(f.attrs["train.lr"]))
    rows = list(csv.DictReader(open(os.path.join(folder, "spread.csv"))))
    last = max(int(r["time"]) for r in rows)
    number = lambda x: float(x) if x else float("nan")  # noqa: E731  (empty: fewer seeds than the figure needs)
    return {of_variant[r["variant"]] + (int(r["L"]),): tuple(number(r[c]) for c in ("spread", "spread_lo", "spread_hi"))
            for r in rows if int(r["time"]) == last and r["variant"] in of_variant}


def slope(Ls, ys):
    ok = [(L, y) for L, y in zip(Ls, ys) if y > 0 and math.isfinite(y)]
    if len(ok) < 2:
        return float("nan")
    return float(np.polyfit(np.log([L for L, _ in ok]), np.log([y for _, y in ok]), 1)[0])


def collapse_rows(cases, a, rates, Ls):
    """Every lr0 and scaling's consecutive distances; printed at each scaling's smallest lr0 on the grid."""
    rows = []
    for g in SCALINGS:
        said = False
        for j0, lr0 in enumerate(rates):
            d = collapse(cases, a, rates, j0, g, Ls)
            if d is None:
                continue
            rows.append([a, g, lr0] + ["%.4g" % x for x, _ in d] + ["%.4g" % f for _, f in d])
            if not said:
                print("a = c = %g: lr = %.4g (L/%d)^%g: curve distance of L and 2L [floor]: %s" %
                      (a, lr0, Ls[0], g, " ".join("L=%d %.3g [%.2g]" % (L, x, f) for L, (x, f) in zip(Ls, d))))
                said = True
    return rows


def movement_rows(cases, spread, a, rates, Ls, j0, g):
    """The blocks' movement and the seeds' spread against L at lr0 (L / L0)^g."""
    js = [on_grid(rates, j0, g, L, Ls[0]) for L in Ls]
    rows = []
    for b, block in enumerate("QKV"):
        ys = [np.mean([c["blocks"][b] for (ca, cl, cL, _), c in cases.items() if (ca, cl, cL) == (a, rates[j], L)])
              for L, j in zip(Ls, js)]
        rows.append([a, rates[j0], g, block] + ys + [slope(Ls, ys)])
    ys = [spread[(a, rates[j], L)][0] for L, j in zip(Ls, js)]
    rows.append([a, rates[j0], g, "seeds_spread"] + ys + [slope(Ls, ys)])
    return rows


def draw(axes, cases, a, rates, Ls, j0, g, moved):
    ax = axes[0]
    for L in Ls:
        xs = [lr for lr in rates if mean_curve(cases, a, lr, L) is not None]
        ax.plot(xs, [mean_curve(cases, a, lr, L)[-1] for lr in xs], "o-", ms=3, label="L = %d" % L)
    ax.set(xscale="log", yscale="log", xlabel="AdamW rate", ylabel="risk at the last step (mean over seeds)",
           title="a = c = %g: risk after training against the rate" % a)
    ax.set_ylim(top=1e2)  # diverged rates off the top
    ax.legend(fontsize=7)
    ax = axes[1]
    for L in Ls:
        j = on_grid(rates, j0, g, L, Ls[0])
        cur = mean_curve(cases, a, rates[j], L)
        if cur is not None:
            ax.plot(cur, label="L = %d, lr %.3g" % (L, rates[j]))
    ax.set(yscale="log", xlabel="step", ylabel="risk (mean over seeds)",
           title="a = c = %g: loss curves at lr = %.3g (L/%d)^%g" % (a, rates[j0], Ls[0], g))
    ax.legend(fontsize=7)
    ax = axes[2]
    for r in moved:
        style = "-" if r[2] == g else "--"
        name = "fixed lr" if r[2] == 0 else "lr ~ L^%g" % r[2]
        ax.plot(Ls, r[4:4 + len(Ls)], style, marker="o", ms=3, label="%s, %s (slope %.2f)" % (r[3], name, r[-1]))
    ax.set(yscale="log", xlabel="L (H fixed)", ylabel="relative change a layer (mean); seeds' spread of x(1)",
           title="a = c = %g: the blocks' movement after training" % a)
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=6)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: training_regimes.py STUDY_DIR [OUT.png]")
    folder = sys.argv[1]
    png = sys.argv[2] if len(sys.argv) == 3 else os.path.join(folder, "training_regimes.png")
    cases = read_cases(folder)
    regimes = sorted({k[0] for k in cases}, reverse=True)
    rates = sorted({k[1] for k in cases})
    Ls = sorted({k[2] for k in cases})
    a_of_variant = {}
    for r in csv.DictReader(open(os.path.join(folder, "best_lr.csv"))):
        a_of_variant[int(r["variant"])] = float(r["overrides"].split("model.depth_exponent=")[1].split()[0])
    transfer = transfer_scaling(folder, a_of_variant)
    spread = spreads(folder)
    collapsed, moved = [], []
    fig, axes = plt.subplots(len(regimes), 3, figsize=(15, 4.4 * len(regimes)), squeeze=False)
    for row, a in enumerate(regimes):
        g, drift, lo, hi = transfer.get(a, (0.0, float("nan"), "", ""))  # no fit: no drift measured
        print("a = c = %g: best lr ~ L^%.3f [%s, %s]: the transferred scaling lr ~ L^%g" % (a, drift, lo, hi, g))
        collapsed += collapse_rows(cases, a, rates, Ls)
        # The smallest lr0 from which both scalings stay on the grid at every L.
        j0 = min(j for j in range(len(rates)) if all(on_grid(rates, j, h, Ls[-1], Ls[0]) is not None for h in (0, g)))
        here = movement_rows(cases, spread, a, rates, Ls, j0, 0.0) + (
            movement_rows(cases, spread, a, rates, Ls, j0, g) if g else [])
        for r in here:
            print("a = c = %g, lr %.4g (L/%d)^%g, %s: %s; slope in L %.3f" %
                  (a, r[1], Ls[0], r[2], r[3], " ".join("%.3g" % y for y in r[4:-1]), r[-1]))
        moved += here
        draw(axes[row], cases, a, rates, Ls, j0, g, here)
    with open(os.path.join(folder, "regimes_collapse.csv"), "w", newline="") as f:
        csv.writer(f).writerows([["a", "g", "lr0"] + ["L%d_L%d" % (L, 2 * L) for L in Ls[:-1]] +
                                 ["floor_L%d_L%d" % (L, 2 * L) for L in Ls[:-1]]] + collapsed)
    with open(os.path.join(folder, "regimes_movement.csv"), "w", newline="") as f:
        csv.writer(f).writerows([["a", "lr0", "g", "block"] + ["L%d" % L for L in Ls] + ["slope_L"]] +
                                [[x if isinstance(x, str) else "%.4g" % x for x in r] for r in moved])
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("wrote", png)


if __name__ == "__main__":
    main()
