#!/usr/bin/python3
"""Plots a convergence study: err(L, H) of docs/model.md against L and against H,
log-log, with the bootstrap intervals, the fitted slopes and the seed-2
reference slopes (1/L and L^-1/3 H^-1/2) drawn beside. With two or more
references the plotted err is the corrected one (the reference's own error
removed; docs/results.md), the raw err in grey beside it, and the floor as a line.

    /usr/bin/python3 jobs/plot_study.py STUDY_DIR

Reads STUDY_DIR/study.h5 (written by `mft study --aggregate`), writes
STUDY_DIR/study_v<variant>_<quantity>.png. Needs Debian's python3-matplotlib
and python3-h5py.
"""
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
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_time(f, v, quantity, times, out):
    """err against the training step, one line per (L, H): the trained state."""
    L = f[f"/v{v}/L"][()]
    H = f[f"/v{v}/H"][()]
    corrected = attr(f, f"v{v}.references") >= 2
    tag = "_corrected" if corrected else ""
    err = np.array([f[f"/t{t}/v{v}/{quantity}/err{tag}"][()] for t in times])  # (T, nL, nH)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, l in enumerate(L):
        for j, h in enumerate(H):
            ax.plot(times, err[:, i, j], marker="o", label=f"L = {int(l)}, H = {int(h)}")
    ax.set_xticks(times)
    ax.set_yscale("log")
    ax.set_xlabel("training step t")
    ax.set_ylabel(f"err ({quantity}{', corrected' if corrected else ''})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(f"err along training: {quantity}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_study.py STUDY_DIR")
    d = sys.argv[1]
    with h5py.File(f"{d}/study.h5", "r") as f:
        count = int(attr(f, "study.variants_count"))
        for v in range(count):
            for quantity in ("tokens", "adjoint"):
                if f"/v{v}/{quantity}/err" not in f:
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
