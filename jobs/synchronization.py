#!/usr/bin/python3
"""The synchronization map (docs/results.md, 'Synchronization by noise'):
the interaction energy E(s) = (1/N^2) sum_ij |x_i(s) - x_j(s)|^2 of
transformer blocks whose attention is a drift (a = c = 1, every head Q = K
= I, V = v I, pre-LN) and whose MLP sublayers are common noise (a' = c' =
1/2, centred w of gain `noise`), over attention's strength beta, the noise
and the activation. Launches and collects: every figure is mft's.

    /usr/bin/python3 jobs/synchronization.py OUT.csv [--beta "0 1 2 4 8"] [--noise "0 0.5 1 2"]
        [--activation "relu gelu tanh erf"] [--v -1] [--L 32] [--samples 400] [--ranks 2]
        [--plot MAP.png] [--mft build/mft]

Every point is `mft forward --init.samples S --output.trajectory 8`, whose
file holds the mean energy at 9 depths with its standard errors and the
fitted rate lambda of E = E0 e^(-lambda s) with its interval, misfit and
verdict (decided: docs/results.md, 'What "decided" means'). Writes OUT.csv:
activation, beta, noise, v, L, samples, E0, E1, E1_se, rate, rate_lo,
rate_hi, chi2, dof, p_value, decided; with --plot, the map: lambda over
(beta, noise), a panel an activation, decided points filled.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

import h5py


def run(args, options, out):
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpiexec", "--oversubscribe", "-n", str(args.ranks), args.mft, "forward"] + options + ["--output.file", out]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"synchronization.py: {' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")


def block(args, activation, beta, noise):
    return ["--model.L", str(args.L), "--model.H", "1", "--model.d", "3", "--model.k", "3", "--model.norm", "pre",
            "--model.beta", str(beta), "--init.q_gain", "0", "--init.k_gain", "0", "--init.v_gain", "0",
            "--init.q_mean", "1", "--init.k_mean", "1", "--init.v_mean", str(args.v), "--model.mlp_width", "4",
            "--model.mlp_activation", activation, "--model.mlp_depth_exponent", "0.5",
            "--model.mlp_width_exponent", "0.5", "--init.mlp_w_gain", str(noise), "--data.M", "4", "--data.N", "8",
            "--data.family", "gaussian", "--init.samples", str(args.samples), "--output.trajectory", "8"]


def figures(path):
    with h5py.File(path, "r") as f:
        a = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()}
        m, se = f["/output/energy_mean"][()], f["/output/energy_stderr"][()]
    row = dict(E0=m[0], E1=m[-1], E1_se=se[-1])
    for key in ("rate", "rate_lo", "rate_hi", "chi2", "p_value"):
        row[key] = float(a["energy_" + key])
    row["dof"], row["decided"] = int(a["energy_dof"]), int(a["energy_decided"] == "true")
    return row


def plot(rows, path):
    """lambda over (beta, noise), a panel an activation: a decided rate filled,
    a line that holds with too wide an interval hollow, a rejected line a
    grey cross with no rate (a rejected fit describes no convergence)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    acts = list(dict.fromkeys(r["activation"] for r in rows))
    fig, axes = plt.subplots(1, len(acts), figsize=(3.2 * len(acts) + 1.5, 3.6), squeeze=False, sharey=True)
    top = max(abs(r["rate"]) for r in rows if r["rate"] == r["rate"]) or 1
    for ax, act in zip(axes[0], acts):
        mine = [r for r in rows if r["activation"] == act and r["rate"] == r["rate"]]
        rejected = [r for r in mine if r["p_value"] < 0.05]
        for filled in (1, 0):
            pts = [r for r in mine if r["decided"] == filled and r["p_value"] >= 0.05]
            sc = ax.scatter([r["beta"] for r in pts], [r["noise"] for r in pts], c=[r["rate"] for r in pts],
                            cmap="coolwarm_r", vmin=-top, vmax=top, s=140, edgecolors="k",
                            linewidths=0 if filled else 1.5, marker="o")
            if not filled:
                sc.set_facecolor("none")
        ax.scatter([r["beta"] for r in rejected], [r["noise"] for r in rejected], marker="x", c="0.45", s=80)
        ax.set_title(act)
        ax.set_xlabel("beta (attention)")
    axes[0][0].set_ylabel("w gain (MLP noise)")
    fig.subplots_adjust(left=0.06, right=0.87, bottom=0.3, top=0.9, wspace=0.15)
    fig.colorbar(matplotlib.cm.ScalarMappable(matplotlib.colors.Normalize(-top, top), "coolwarm_r"),
                 cax=fig.add_axes([0.89, 0.3, 0.012, 0.6]), label="lambda: E ~ E0 e^(-lambda s)")
    keys = [Line2D([], [], marker="o", ls="", color="0.5", ms=9, label="decided"),
            Line2D([], [], marker="o", ls="", mfc="none", mec="k", ms=9, label="holds, not decided"),
            Line2D([], [], marker="x", ls="", color="0.45", ms=8, label="line rejected: no rate")]
    fig.legend(handles=keys, loc="lower center", ncol=3, frameon=False)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--beta", default="0 1 2 4 8")
    p.add_argument("--noise", default="0 0.5 1 2")
    p.add_argument("--activation", default="relu gelu tanh erf")
    p.add_argument("--v", type=float, default=-1.0)
    p.add_argument("--L", type=int, default=32)
    p.add_argument("--samples", type=int, default=400)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--plot")
    p.add_argument("--mft", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "mft"))
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for activation in args.activation.split():
            for beta in [float(b) for b in args.beta.split()]:
                for noise in [float(n) for n in args.noise.split()]:
                    out = f"{tmp}/p-{len(rows)}.h5"
                    run(args, block(args, activation, beta, noise), out)
                    rows.append(dict(activation=activation, beta=beta, noise=noise, v=args.v, L=args.L,
                                     samples=args.samples, **figures(out)))
                    print("synchronization.py: " + ", ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"synchronization.py: wrote {args.out}")
    if args.plot:
        plot(rows, args.plot)
        print(f"synchronization.py: drew {args.plot}")


if __name__ == "__main__":
    main()
