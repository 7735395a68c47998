#!/usr/bin/python3
"""The Kuramoto check of model.norm = sphere as a picture.

    /usr/bin/python3 jobs/plot_kuramoto.py RUN.h5 [--r0 R0] [--out OUT.png]

Reads a run on the circle (d = 2, beta = 0, V = T I; input/kuramoto.cfg)
written with --output.trajectory S: its tokens at S + 1 depths. Left: the
order parameter r(s) = |mean_i x_i(s)| against Ott and Antonsen's
r(s)^2 = r0^2 e^{T s} / (1 - r0^2 + r0^2 e^{T s}), T = init.v_mean, r0 the
run's own r(0) unless given (the law's, e.g. 0.3 for input/kuramoto.h5).
Right: the phases on the circle at s = 0, 1/2 and 1. Needs Debian's
python3-matplotlib and python3-h5py.
"""
import argparse
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="order parameter of the tokens on the circle")
    ap.add_argument("file")
    ap.add_argument("--r0", type=float, help="the law's order parameter (default: the run's r(0))")
    ap.add_argument("--out", help="PNG to write (default: FILE with .png)")
    a = ap.parse_args()
    out = a.out or a.file.rsplit(".", 1)[0] + ".png"
    try:
        with h5py.File(a.file, "r") as f:
            if "/trajectory/tokens" not in f:
                sys.exit(f"plot_kuramoto: {a.file} has no /trajectory (run with --output.trajectory S)")
            x = f["/trajectory/tokens"][:, 0]  # (S+1, N, 2): the first sequence
            depth = f["/trajectory/depth"][()]
            T = float(f.attrs["init.v_mean"])
    except OSError as e:
        sys.exit(f"plot_kuramoto: cannot open {a.file}: {e}")
    if x.shape[-1] != 2:
        sys.exit(f"plot_kuramoto: the tokens have d = {x.shape[-1]}, not 2 (the circle)")
    r = np.hypot(*x.mean(axis=1).T)
    r0 = a.r0 if a.r0 is not None else r[0]
    s = np.linspace(0, 1, 200)
    closed = np.sqrt(r0**2 * np.exp(T * s) / (1 - r0**2 + r0**2 * np.exp(T * s)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4))
    left.plot(s, closed, color="0.3", label=f"Ott-Antonsen, r0 = {r0:.3g}, T = {T:g}")
    left.plot(depth, r, "o", color="tab:blue", markersize=4, label=f"mft, N = {x.shape[1]}")
    left.set_xlabel("depth s")
    left.set_ylabel("order parameter r(s)")
    left.set_ylim(0, 1.02)
    left.grid(True, alpha=0.3)
    left.legend(loc="lower right")
    circle = np.linspace(0, 2 * np.pi, 200)
    right.plot(np.cos(circle), np.sin(circle), color="0.85", linewidth=1)
    shown = np.unique([0, len(depth) // 2, len(depth) - 1])
    for i, (k, colour) in enumerate(zip(shown, ("tab:blue", "tab:orange", "tab:red"))):
        radius = 1 + 0.06 * (1 + i)  # a ring a depth, outward
        right.scatter(radius * x[k, :, 0], radius * x[k, :, 1], s=4, color=colour, alpha=0.5,
                      label=f"s = {depth[k]:.3g}")
    right.set_aspect("equal")
    right.axis("off")
    right.legend(loc="center", fontsize=8, title="phases, a ring a depth", title_fontsize=8)
    fig.suptitle("tokens on the circle: the Kuramoto model (model.norm = sphere, beta = 0, V = T I)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot_kuramoto: wrote {out}: r(0) = {r[0]:.4f}, r(1) = {r[-1]:.4f}, closed form r(1) = {closed[-1]:.4f}")


if __name__ == "__main__":
    main()
