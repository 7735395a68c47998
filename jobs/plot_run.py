#!/usr/bin/python3
"""Plots a training run: the risk and the largest head norm against the step
(log scale), and the NTK spectrum where the file has one (mft ntk, or a run
with --train.ntk).

    /usr/bin/python3 jobs/plot_run.py RUN.h5 [OUT.png]

Reads the run file (docs/model.md layout: /history/loss, /history/max_param_norm,
/ntk/eigenvalues), writes OUT.png (default: RUN.png beside the file). Needs
Debian's python3-matplotlib and python3-h5py.
"""
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def text(f, key):
    v = f.attrs.get(key)
    return v.decode() if isinstance(v, bytes) else ("" if v is None else str(v))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: plot_run.py RUN.h5 [OUT.png]")
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else path.rsplit(".", 1)[0] + ".png"
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        sys.exit(f"plot_run: cannot open {path}: {e}")
    with f:
        loss = f["/history/loss"][()] if "/history/loss" in f else np.array([])
        norm = f["/history/max_param_norm"][()] if "/history/max_param_norm" in f else np.array([])
        eig = f["/ntk/eigenvalues"][()] if "/ntk/eigenvalues" in f else None
        title = (f"L = {text(f, 'model.L')}, H = {text(f, 'model.H')}, d = {text(f, 'model.d')}, "
                 f"{text(f, 'model.head_kind')}, {text(f, 'train.optimizer')} lr {text(f, 'train.lr')}")
    if loss.size == 0 and eig is None:
        sys.exit(f"plot_run: {path} has no training history and no NTK spectrum")
    panels = (loss.size > 0) + (eig is not None)
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.5), squeeze=False)
    axes = list(axes[0])
    if loss.size > 0:
        ax = axes.pop(0)
        steps = np.arange(loss.size)
        ax.semilogy(steps, loss, "b-", label="risk R")
        ax.set_xlabel("training step")
        ax.set_ylabel("risk", color="b")
        ax.grid(True, which="both", alpha=0.3)
        if norm.size:
            ax2 = ax.twinx()
            ax2.semilogy(steps, norm, "r--", label="largest head norm")
            ax2.set_ylabel("largest |theta| over heads", color="r")
        ax.set_title("training")
    if eig is not None:
        ax = axes.pop(0)
        ax.semilogy(np.arange(1, eig.size + 1), np.sort(np.abs(eig))[::-1], "ko-", ms=3)
        ax.set_xlabel("index")
        ax.set_ylabel("|eigenvalue| of the NTK")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"NTK spectrum (lambda_min = {eig.min():.3g})")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot_run: wrote {out}")


if __name__ == "__main__":
    main()
