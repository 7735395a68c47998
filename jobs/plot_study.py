#!/usr/bin/python3
"""Plots a convergence study: err(L, H) of docs/model.md against L and against H,
log-log, with the bootstrap intervals, the fitted slopes and the seed-2
reference slopes (1/L and L^-1/3 H^-1/2) drawn beside. With two or more
references the plotted err is the corrected one (the reference's own error
removed; docs/results.md), the raw err in grey beside it, and the floor as a line.

    /usr/bin/python3 jobs/plot_study.py STUDY_DIR

Reads STUDY_DIR/study.h5 (written by `mft study --aggregate`), writes
STUDY_DIR/study_v<variant>_<quantity>.png; for a trained study also
study_v<variant>_curves.png (the training curves' distance from the
references' against L and H, from study.csv), and for a learning-rate study
(lr.csv, best_lr.csv) study_lr_v<variant>.png: the risk against the rate per
(L, H), and the best rate against L and H with its interval. A study in law
(law.csv, law_fits.csv) gets study_law_v<variant>.png: err_law against L
(one line a width) and against H (one line a depth), with its intervals, the
unresolved cells hollow, the fit and the slope 1/L beside; a study over k
(law.csv's k column) gets err_law against k with the fit C k^-r; a trained
study in law (law.csv's time column) is drawn at its last time. Needs Debian's
python3-matplotlib and python3-h5py.
"""
import csv
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def attr(f, key):
    v = f.attrs.get(key)
    if v is None:
        return float("nan")
    if isinstance(v, bytes):
        v = v.decode()
    try:
        return float(v)
    except ValueError:
        return float("nan")


def drop_fixed(fig, ax_l, ax_h, L, H):
    """No panel against an axis the grid does not vary (a fixed L or H)."""
    fixed = [ax for ax, values in ((ax_l, L), (ax_h, H)) if len(values) < 2]
    if len(fixed) == 1:
        fig.delaxes(fixed[0])
        width, height = fig.get_size_inches()
        fig.set_size_inches(width / 2 + 0.5, height)


def plot(f, v, quantity, out):
    L = f[f"/v{v}/L"][()]
    H = f[f"/v{v}/H"][()]
    raw = f[f"/v{v}/{quantity}/err"][()]
    corrected = attr(f, f"v{v}.references") >= 2 and f"/v{v}/{quantity}/err_corrected" in f
    tag = "_corrected" if corrected else ""
    key = f"v{v}.{quantity}" + (".corrected" if corrected else "")
    err = f[f"/v{v}/{quantity}/err{tag}"][()]
    lo = f[f"/v{v}/{quantity}/err{tag}_lo"][()]
    hi = f[f"/v{v}/{quantity}/err{tag}_hi"][()]
    floor = attr(f, f"v{v}.{quantity}.floor")
    overrides = f.attrs.get(f"v{v}.overrides", b"")
    overrides = overrides.decode() if isinstance(overrides, bytes) else str(overrides)
    fig, (ax_l, ax_h) = plt.subplots(1, 2, figsize=(11, 4.5))
    for j, h in enumerate(H):
        ax_l.errorbar(L, err[:, j], yerr=[err[:, j] - lo[:, j], hi[:, j] - err[:, j]], marker="o", capsize=3,
                      label=f"H = {int(h)}")
    for i, l in enumerate(L):
        ax_h.errorbar(H, err[i, :], yerr=[err[i, :] - lo[i, :], hi[i, :] - err[i, :]], marker="o", capsize=3,
                      label=f"L = {int(l)}")
    if corrected:  # the raw err, and the references' own error
        for ax, x, y in ((ax_l, L, raw[:, -1]), (ax_h, H, raw[-1, :])):
            ax.plot(x, y, color="0.6", ls="--", marker=".", label="raw err (last curve)")
            if np.isfinite(floor) and floor > 0:
                ax.axhline(floor, color="0.4", ls="-.", lw=1, label=f"reference floor {floor:.3g}")
    slope_l = attr(f, f"{key}.slope_L")
    slope_h = attr(f, f"{key}.slope_H")
    # Fitted lines through the last column / row, and the reference slopes.
    for ax, x, y, slope, refs, name in (
        (ax_l, L, err[:, -1], slope_l, [(-1.0, "1/L"), (-1.0 / 3, "L^-1/3")], "L"),
        (ax_h, H, err[-1, :], slope_h, [(-0.5, "H^-1/2")], "H"),
    ):
        ok = np.isfinite(y) & (y > 0)
        if ok.sum() >= 2 and np.isfinite(slope):
            x0, y0 = x[ok][-1], y[ok][-1]
            ax.plot(x, y0 * (x / x0) ** slope, "k-", lw=1.5, label=f"fit: slope {slope:.2f}")
            for s, label in refs:
                ax.plot(x, y0 * (x / x0) ** s, "k:", lw=1, label=f"reference {label}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(name)
        ax.set_ylabel(f"err ({quantity}{', corrected' if corrected else ''})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    ax_l.set_title(f"against L (fit at the largest H)")
    ax_h.set_title(f"against H (fit at the largest L)")
    fig.suptitle(f"convergence to the mean-field limit: {quantity}" + (f" [{overrides}]" if overrides != "(none)" else ""))
    drop_fixed(fig, ax_l, ax_h, L, H)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_time(f, v, quantity, times, out):
    """err along training, drawn as the L and H plots are: err against L at the
    largest H and against H at the largest L, one line per recorded step in the
    colours of one sequential map (early light, late dark), with intervals."""
    L = f[f"/v{v}/L"][()]
    H = f[f"/v{v}/H"][()]
    corrected = attr(f, f"v{v}.references") >= 2
    tag = "_corrected" if corrected else ""

    def get(t, suffix):
        return f[f"/t{t}/v{v}/{quantity}/err{tag}{suffix}"][()]

    colours = plt.cm.viridis(np.linspace(0.85, 0.0, len(times)))
    fig, (ax_l, ax_h) = plt.subplots(1, 2, figsize=(11, 4.8))
    for i, (t, colour) in enumerate(zip(times, colours)):
        err, lo, hi = get(t, ""), get(t, "_lo"), get(t, "_hi")
        dodge = 2.0 ** (0.04 * (i - (len(times) - 1) / 2))  # the times side by side at each L or H
        for ax, x, y, y_lo, y_hi in ((ax_l, L, err[:, -1], lo[:, -1], hi[:, -1]),
                                     (ax_h, H, err[-1, :], lo[-1, :], hi[-1, :])):
            ax.errorbar(x * dodge, y, yerr=[y - y_lo, y_hi - y], color=colour, marker="o", capsize=2, label=f"t = {t}")
    for ax, name, where in ((ax_l, "L", f"H = {int(H[-1])}"), (ax_h, "H", f"L = {int(L[-1])}")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(name)
        ax.set_ylabel(f"err ({quantity}{', corrected' if corrected else ''})")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"against {name} at {where}")
    handles, labels = ax_l.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(times), 8), fontsize=8, title="training step")
    fig.suptitle(f"err along training: {quantity}")
    drop_fixed(fig, ax_l, ax_h, L, H)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def rows(path, **match):
    if not os.path.exists(path):
        return []
    return [r for r in csv.DictReader(open(path)) if all(r[k] == v for k, v in match.items())]


def number(x):
    return float(x) if x not in ("", "nan") else float("nan")


def plot_curves(d, v, out):
    """The training curves' distance from the references' (study.csv's
    curve_distance at the last step) against L, one line per H, and against H."""
    table = rows(f"{d}/study.csv", variant=str(v))
    if not table:
        return False
    last = max(int(r["time"]) for r in table)
    table = [r for r in table if int(r["time"]) == last and r["curve_distance"] not in ("", "nan")]
    if not table:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (along, other) in zip(axes, (("L", "H"), ("H", "L"))):
        for o in sorted({int(r[other]) for r in table}):
            sel = sorted((r for r in table if int(r[other]) == o), key=lambda r: int(r[along]))
            x = [int(r[along]) for r in sel]
            y = np.array([number(r["curve_distance"]) for r in sel])
            lo = np.array([number(r["curve_distance_lo"]) for r in sel])
            hi = np.array([number(r["curve_distance_hi"]) for r in sel])
            ax.errorbar(x, y, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)], marker="o", capsize=3,
                        label=f"{other} = {o}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(along)
        ax.set_ylabel("max_t |R(t) - R_ref(t)| / R_ref(t)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"training curves against the references' (steps 0 .. {last})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def plot_rates(d, v, out):
    """A learning-rate study: the risk against the rate per (L, H) (training,
    held-out), and the best rate against L (one line per H) with its interval."""
    table, best = rows(f"{d}/lr.csv", variant=str(v)), rows(f"{d}/best_lr.csv", variant=str(v))
    if not table:
        return False
    kinds = [k for k in ("risk", "heldout_risk") if any(r[k] not in ("", "nan") for r in table)]
    fig, axes = plt.subplots(1, len(kinds) + 1, figsize=(5 * (len(kinds) + 1), 4))
    cells = sorted({(int(r["L"]), int(r["H"])) for r in table})
    Ls = sorted({c[0] for c in cells})
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(Ls)))
    styles = ["-", "--", "-.", ":"]
    Hs = sorted({c[1] for c in cells})
    for ax, kind in zip(axes, kinds):
        for (l, h) in cells:
            sel = [r for r in table if int(r["L"]) == l and int(r["H"]) == h]
            ax.plot([number(r["lr"]) for r in sel], [number(r[kind]) for r in sel], marker="o", ms=3,
                    color=colours[Ls.index(l)], ls=styles[Hs.index(h) % len(styles)], label=f"L={l} H={h}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("learning rate")
        ax.set_ylabel(kind.replace("_", " ") + " at the last step")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=5, ncol=2)
    ax = axes[-1]
    for quantity, marker in (("best_lr", "o"), ("best_lr_heldout", "s")):
        for h in Hs:
            sel = sorted((r for r in best if r["quantity"] == quantity and int(r["H"]) == h), key=lambda r: int(r["L"]))
            if not sel:
                continue
            y = np.array([number(r["best_lr"]) for r in sel])
            lo = np.array([number(r["best_lr_lo"]) for r in sel])
            hi = np.array([number(r["best_lr_hi"]) for r in sel])
            ax.errorbar([int(r["L"]) for r in sel], y, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)],
                        marker=marker, capsize=3, ls=styles[Hs.index(h) % len(styles)],
                        label=f"{'held-out' if 'heldout' in quantity else 'training'}, H = {h}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("L")
    ax.set_ylabel("best learning rate (mean over seeds)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    fig.suptitle("learning rates: does the best rate move with L and H?")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def plot_law_k(table, fit, out):
    """err_law of a study over k (study.k) against k, its intervals and the fit C k^-r (one line per (L, H))."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for L, H in sorted({(int(r["L"]), int(r["H"])) for r in table}):
        cells = sorted((r for r in table if (int(r["L"]), int(r["H"])) == (L, H)), key=lambda r: int(r["k"]))
        ks = np.array([int(r["k"]) for r in cells], float)
        e = np.array([number(r["err_law"]) for r in cells])
        lo = np.array([number(r["err_law_lo"]) for r in cells])
        hi = np.array([number(r["err_law_hi"]) for r in cells])
        ok = np.array([r["resolved"] == "true" for r in cells])
        line = ax.errorbar(ks, e, yerr=[e - lo, hi - e], marker="o", capsize=3, linestyle="none", mfc="none",
                           label=f"L = {L}, H = {H}: err_law, 95%")
        ax.plot(ks[ok], e[ok], "o", color=line[0].get_color(), label="resolved (the largest gap; the fit takes one sequence)")
        mine = [f for f in fit if f.get("L", str(L)) in (str(L), "") and f.get("H", str(H)) in (str(H), "")]
        if mine and mine[0]["q"] not in ("", "nan"):
            draw_fit(ax, ks, mine[0], "q", number(mine[0].get("reference_H") or "inf"), [(0.5, "--"), (1.0, ":")], "r")
            ax.set_title(fit_verdict(mine[0], "q").replace("q =", "r =", 1), fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("k (against infinite heads)")
    ax.set_ylabel("err_law (Gram means, relative)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def fit_verdict(f, rate):
    """The fit's rate, its interval and its verdict in words (law_fits.csv's columns)."""
    e, lo, hi = (number(f[c]) for c in (rate, rate + "_lo", rate + "_hi"))
    if f.get("rejected") == "true":
        word = "rejected"
    else:
        word = "decided" if f.get("decided_" + rate) == "true" else "not decided"
    return f"{rate} = {e:.2f} [{lo:.2f}, {hi:.2f}], chi^2 {number(f['chi2']):.2g} on {f['dof']}: {word}"


def draw_fit(ax, xs, f, rate, ref, slopes, name=None):
    """The fitted law C |n^-e - n_ref^-e| (n_ref^-e = 0 against a limit) over xs, with its band (the law at every
    exponent of the interval, through the fit at the middle of the fitted sizes), and the same law at the reference
    exponents it is judged against, through the same point."""
    C, e, lo, hi = (number(f[c]) for c in ("C", rate, rate + "_lo", rate + "_hi"))
    name = name or rate
    n = np.geomspace(xs.min(), xs.max(), 64)
    law = lambda q: np.abs(n ** -q - (ref ** -q if np.isfinite(ref) else 0))
    pivot = np.argmin(np.abs(n - np.sqrt(xs.min() * xs.max())))
    middle = C * law(e)
    band = np.array([law(q) * middle[pivot] / law(q)[pivot] for q in np.linspace(lo, hi, 9)])
    against = f" against {ref:g}" if np.isfinite(ref) else ""
    ax.plot(n, middle, "k-", lw=1, label=f"fit C |n^-{name} - n_ref^-{name}|{against}" if against else
            f"fit C n^-{name}")
    ax.fill_between(n, band.min(0), band.max(0), color="k", alpha=0.12, label="its 95% band")
    for q, style in slopes:
        ax.plot(n, law(q) * middle[pivot] / law(q)[pivot], style, color="tab:red", lw=1, label=f"{name} = {q:g}")


def law_axes(table):
    """The sizes a study in law varies, in L, H order."""
    return [x for x in ("L", "H") if len({r[x] for r in table}) > 1]


def plot_law(d, v, out):
    """err_law of a study in law against each size it varies (or k), its intervals, the fit with its band and the
    reference exponents; filled marks: resolved cells (each cell's largest gap; the fit takes one sequence)."""
    table = rows(f"{d}/law.csv", variant=str(v))
    fit = [f for f in rows(f"{d}/law_fits.csv", variant=str(v)) if f.get("metric", "err_law") == "err_law"]
    if table and "time" in table[0]:  # a trained study in law: its last time
        last = str(max(int(r["time"]) for r in table))
        table = [r for r in table if r["time"] == last]
        fit = [f for f in fit if f["time"] == last]
    if table and table[0].get("k"):
        return plot_law_k(table, fit, out)
    axes_of = law_axes(table) or ["L"]
    fig, axes = plt.subplots(1, len(axes_of), figsize=(5.5 * len(axes_of), 4.2), squeeze=False)
    for ax, x in zip(axes[0], axes_of):
        other = "H" if x == "L" else "L"
        for value in sorted({int(r[other]) for r in table}):
            cells = sorted((r for r in table if int(r[other]) == value), key=lambda r: int(r[x]))
            xs = np.array([int(r[x]) for r in cells], float)
            e = np.array([number(r["err_law"]) for r in cells])
            lo = np.array([number(r["err_law_lo"]) for r in cells])
            hi = np.array([number(r["err_law_hi"]) for r in cells])
            ok = np.array([r["resolved"] == "true" for r in cells])
            line = ax.errorbar(xs, e, yerr=[e - lo, hi - e], marker="o", capsize=3, linestyle="none", mfc="none",
                               label=f"{other} = {value}: err_law, 95%")
            ax.plot(xs[ok], e[ok], "o", color=line[0].get_color(), label="resolved (the largest gap; the fit takes one sequence)")
        rate = "p" if x == "L" else "q"
        if len(axes_of) == 1 and fit and fit[0].get(rate) not in ("", "nan", None):
            ref = number(fit[0].get("reference_" + x) or "inf")
            slopes = [(0.5, "--"), (1.0, ":")] if x == "L" else [(0.5, "--")]
            draw_fit(ax, np.array(sorted({int(r[x]) for r in table}), float), fit[0], rate, ref, slopes)
            ax.set_title(fit_verdict(fit[0], rate), fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(x)
        ax.set_ylabel("err_law (Gram means, relative)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_study.py STUDY_DIR")
    d = sys.argv[1]
    if os.path.exists(f"{d}/law.csv"):
        for v in sorted({r["variant"] for r in rows(f"{d}/law.csv")}, key=int):
            out = f"{d}/study_law_v{v}.png"
            plot_law(d, v, out)
            print(f"plot_study: wrote {out}")
        return
    bases = {r["variant"] for r in rows(f"{d}/lr.csv")}
    for v in sorted(bases, key=int):
        out = f"{d}/study_lr_v{v}.png"
        if plot_rates(d, v, out):
            print(f"plot_study: wrote {out}")
    with h5py.File(f"{d}/study.h5", "r") as f:
        count = int(attr(f, "study.variants_count"))
        for v in range(count):
            out = f"{d}/study_v{v}_curves.png"
            if plot_curves(d, v, out):
                print(f"plot_study: wrote {out}")
            for quantity in ("tokens", "adjoint"):
                if f"/v{v}/{quantity}/err" not in f:
                    if not bases:
                        print(f"plot_study: variant {v} was not measured (no reference); no plot")
                    continue
                err = f[f"/v{v}/{quantity}/err"][()]
                if not np.any(np.isfinite(err) & (err > 0)):
                    print(f"plot_study: variant {v} has no measured error ({quantity}); no plot")
                    continue
                out = f"{d}/study_v{v}_{quantity}.png"
                plot(f, v, quantity, out)
                print(f"plot_study: wrote {out}")
                times = f.attrs.get("study.recorded_times", b"0")
                times = [int(t) for t in (times.decode() if isinstance(times, bytes) else str(times)).split()]
                if len(times) > 1:
                    out = f"{d}/study_v{v}_{quantity}_time.png"
                    plot_time(f, v, quantity, times, out)
                    print(f"plot_study: wrote {out}")


if __name__ == "__main__":
    main()
