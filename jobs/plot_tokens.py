#!/usr/bin/python3
"""Pictures of the flow: the tokens of chosen sequences at several depths.

    /usr/bin/python3 jobs/plot_tokens.py RUN.h5 [--out OUT.png] [--sequences 0,1,2]
                                                [--panels 6] [--gif]

Reads /trajectory/tokens (S+1, M, N, d) and /trajectory/depth of a run
written with --output.trajectory S (mft forward, train or limit), and
/trajectory/adjoint where present. Draws one panel per depth (the first and
last always among them): the first two coordinates for d = 2, the sphere
itself in 3-D for d = 3 tokens of norm 1 (model.norm = sphere), otherwise one
fixed PCA projection of the whole trajectory of the chosen sequences (the same
axes at every depth), coloured by sequence; the adjoint's magnitude |p_i(s)|
as marker size where the file has it (relative to its largest over the
depths, sequence by sequence). Each panel has its own limits (tokens
may grow with depth): the picture is their arrangement. With --gif, also an
animation through every depth (OUT.gif). Needs Debian's python3-matplotlib,
python3-h5py and python3-pil.
"""
import argparse
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.animation import FuncAnimation, PillowWriter  # noqa: E402


def text(f, key):
    v = f.attrs.get(key)
    return v.decode() if isinstance(v, bytes) else ("" if v is None else str(v))


def projection(points):
    """The first two coordinates (d <= 2) or the two leading principal axes."""
    d = points.shape[-1]
    if d == 1:
        return lambda x: np.concatenate([x, np.zeros_like(x)], axis=-1), ("x_1", "")
    if d == 2:
        return lambda x: x, ("x_1", "x_2")
    flat = points.reshape(-1, d)
    mean = flat.mean(axis=0)
    _, _, vt = np.linalg.svd(flat - mean, full_matrices=False)
    axes = vt[:2].T
    return lambda x: (x - mean) @ axes, ("PC 1", "PC 2")


def main():
    ap = argparse.ArgumentParser(description="token trajectories through depth")
    ap.add_argument("file")
    ap.add_argument("--out", help="PNG to write (default: FILE with .png, beside it)")
    ap.add_argument("--sequences", default="", help="comma-separated sequence indices (default: up to 4)")
    ap.add_argument("--panels", type=int, default=6, help="depths shown (at most S + 1)")
    ap.add_argument("--gif", action="store_true", help="also an animation through depth (OUT.gif)")
    a = ap.parse_args()
    out = a.out or a.file.rsplit(".", 1)[0] + ".png"
    try:
        f = h5py.File(a.file, "r")
    except OSError as e:
        sys.exit(f"plot_tokens: cannot open {a.file}: {e}")
    with f:
        if "/trajectory/tokens" not in f:
            sys.exit(f"plot_tokens: {a.file} has no /trajectory (run with --output.trajectory S)")
        tokens = f["/trajectory/tokens"][()]
        depth = f["/trajectory/depth"][()]
        adjoint = f["/trajectory/adjoint"][()] if "/trajectory/adjoint" in f else None
        title = (f"mft {text(f, 'command')}: L = {text(f, 'model.L')}, H = {text(f, 'model.H')}, "
                 f"d = {text(f, 'model.d')}, beta = {text(f, 'model.beta')}"
                 + (f", norm = {text(f, 'model.norm')}" if text(f, "model.norm") not in ("", "none") else ""))
    S1, M = tokens.shape[0], tokens.shape[1]
    try:
        seqs = [int(s) for s in a.sequences.split(",") if s.strip()] or list(range(min(M, 4)))
    except ValueError:
        sys.exit(f"plot_tokens: --sequences '{a.sequences}' is not a list of integers")
    bad = [s for s in seqs if not 0 <= s < M]
    if bad:
        sys.exit(f"plot_tokens: sequences {bad} are not among the file's {M}")
    if a.panels < 1:
        sys.exit("plot_tokens: --panels must be at least 1")
    x = tokens[:, seqs]                      # (S+1, m, N, d)
    p = adjoint[:, seqs] if adjoint is not None else None
    sphere = x.shape[-1] == 3 and np.abs(np.linalg.norm(x, axis=-1) - 1).max() < 1e-6
    project, labels = (lambda y: y, ("x_1", "x_2", "x_3")) if sphere else projection(x)
    xy = project(x)                          # (S+1, m, N, 2), or 3 on the sphere
    size = None
    if p is not None:
        mag = np.linalg.norm(p, axis=-1)     # (S+1, m, N)
        peak = np.maximum(mag.max(axis=(0, 2), keepdims=True), 1e-300)  # per sequence, over every depth
        size = 6 + 60 * np.sqrt(mag / peak)
    colours = plt.cm.tab10(np.arange(len(seqs)) % 10)

    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 25), np.linspace(0, np.pi, 13))

    def draw(ax, k):
        ax.clear()
        if sphere:  # the unit sphere as a wire frame, the tokens on it
            ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.8", linewidth=0.4)
        for j in range(len(seqs)):
            where = [xy[k, j, :, c] for c in range(3 if sphere else 2)]
            ax.scatter(*where, s=18 if size is None else size[k, j], color=colours[j], alpha=0.75,
                       edgecolors="none", label=f"sequence {seqs[j]}")
        ax.set_title(f"s = {depth[k]:.3g}")
        ax.set_xlabel(labels[0])
        ax.set_ylabel(labels[1])
        if sphere:
            ax.set_zlabel(labels[2])
            ax.set_box_aspect((1, 1, 1))
            return
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(True, alpha=0.3)

    shown = np.unique(np.round(np.linspace(0, S1 - 1, min(a.panels, S1))).astype(int))
    cols = min(len(shown), 3)
    rows = (len(shown) + cols - 1) // cols
    space = {"subplot_kw": {"projection": "3d"}} if sphere else {}
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4.0 * rows), squeeze=False, **space)
    for i, ax in enumerate(axes.flat):
        if i < len(shown):
            draw(ax, shown[i])
        else:
            ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="best")
    fig.suptitle(title + ("; marker size: |adjoint|" if size is not None else ""))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot_tokens: wrote {out}")
    if a.gif:
        gif = out.rsplit(".", 1)[0] + ".gif"
        fig, ax = plt.subplots(figsize=(5, 5), **space)
        FuncAnimation(fig, lambda k: draw(ax, k), frames=S1).save(gif, writer=PillowWriter(fps=4))
        print(f"plot_tokens: wrote {gif}")


if __name__ == "__main__":
    main()
