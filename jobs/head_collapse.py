#!/usr/bin/python3
"""Heads that collapse: one teacher-student problem trained with AdamW at
logit exponents g = 1/2 and g = 1 over the head dimension k, with muP's
per-block rates (train.block_lr_exponents: Q and K at lr k^-1/2 when g = 1/2,
at lr when g = 1; V at lr; O at lr / k), and the heads' diversity before and
after training:

    diversity = mean over layers l and probe sequences of
                (1/H) sum_h |A_lh - mean_h' A_lh'|_F^2,

A_lh the N x N attention matrix of head h of layer l at the tokens that enter
layer l (from the run's trajectory). The problem (docs/results.md, 'Heads
that collapse'): d = 4, N = 8, 64 training sequences (data.family default),
the targets x(1) of a teacher of 2 x 8 qkvo heads at k = 4, g = 1/2, beta = 2,
gains 2; students 2 x 8 qkvo heads, beta = 2, centred, the mean-field
exponents, AdamW lr 0.01 for 300 steps; the probes are the first 8 sequences.

    /usr/bin/python3 jobs/head_collapse.py MFT OUT_DIR [--k 4 8 16 ...] [--ranks 2]

Writes OUT_DIR/head_collapse.csv (g, k, diversity at initialisation and
trained, their ratio, the final risk) and OUT_DIR/head_collapse.png. Needs
python3-h5py, python3-matplotlib, mpiexec.
"""
import argparse
import csv
import os
import subprocess
import sys

import h5py
import numpy as np

MODEL = ["--model.L", "2", "--model.H", "8", "--model.d", "4", "--model.head_kind", "qkvo", "--model.beta", "2",
         "--data.N", "8"]
RATES = {0.5: "0.5 0.5 0 1", 1.0: "0 0 0 1"}


def run(cmd, ranks):
    """mft under mpiexec; stops the script with mft's last line on failure."""
    full = ["mpiexec", "-n", str(ranks)] + cmd if ranks > 1 else cmd
    r = subprocess.run(full, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("head_collapse.py: %s failed: %s" % (" ".join(cmd[:2]), (r.stderr or r.stdout).strip()[-300:]))
    return r.stdout


def teacher_data(mft, out, ranks):
    """The teacher's targets beside its inputs, as an mft data file."""
    path = os.path.join(out, "teacher_data.h5")
    t = os.path.join(out, "teacher.h5")
    run([mft, "forward"] + MODEL + ["--model.k", "4", "--model.logit_exponent", "0.5", "--data.M", "64",
                                    "--init.seed", "777", "--init.q_gain", "2", "--init.k_gain", "2",
                                    "--init.v_gain", "2", "--init.v_mean", "0", "--output.file", t], ranks)
    with h5py.File(t, "r") as f, h5py.File(path, "w") as g:
        x0, x1 = np.asarray(f["data/tokens"]), np.asarray(f["output/tokens"])
        g["data/tokens"], g["data/targets"] = x0, x1
        for key, v in (("M", x0.shape[0]), ("N", x0.shape[1]), ("d", x0.shape[2])):
            g.attrs[key] = v
    return path


def diversity(run_file, g, beta=2.0):
    """The heads' diversity (module docstring) from a run file with /trajectory."""
    with h5py.File(run_file, "r") as f:
        Q, K = np.asarray(f["params/Q"]), np.asarray(f["params/K"])  # (L, H, k, d)
        xs = np.asarray(f["trajectory/tokens"])                      # (S + 1, M, N, d), S = L
    L, H, k, _ = Q.shape
    scale = beta * k ** -g
    total = 0.0
    for l in range(L):
        x = xs[l]                                                    # (M, N, d)
        q = np.einsum("hrd,mnd->mhnr", Q[l], x)
        kk = np.einsum("hrd,mnd->mhnr", K[l], x)
        a = scale * np.einsum("mhir,mhjr->mhij", q, kk)
        a = np.exp(a - a.max(axis=-1, keepdims=True))
        a /= a.sum(axis=-1, keepdims=True)                            # (M, H, N, N)
        total += np.mean(np.sum((a - a.mean(axis=1, keepdims=True)) ** 2, axis=(2, 3)))
    return total / L


def student(mft, data, out, g, k, ranks):
    """Trains one student; its diversity at initialisation and trained, and its final risk."""
    name = os.path.join(out, "g%s-k%d" % (g, k))
    model = MODEL + ["--model.k", str(k), "--model.logit_exponent", str(g), "--init.v_mean", "0"]
    text = run([mft, "train"] + model + ["--data.file", data, "--train.optimizer", "adamw", "--train.lr", "0.01",
                                         "--train.steps", "300", "--train.log_every", "300",
                                         "--train.block_lr_exponents", RATES[g], "--output.file", name + ".h5"], ranks)
    probes = ["--data.file", data, "--data.M", "8", "--output.trajectory", "2"]
    run([mft, "forward"] + model + probes + ["--output.file", name + "-init.h5"], ranks)
    run([mft, "forward"] + model + probes + ["--params.file", name + ".h5", "--output.file", name + "-trained.h5"],
        ranks)
    with h5py.File(name + ".h5", "r") as f:
        risk = float(np.asarray(f["history/loss"])[-1])
    return diversity(name + "-init.h5", g), diversity(name + "-trained.h5", g), risk


def main():
    ap = argparse.ArgumentParser(description="the heads' diversity after AdamW at g = 1/2 and 1, against k")
    ap.add_argument("mft")
    ap.add_argument("out")
    ap.add_argument("--k", type=int, nargs="+", default=[4, 8, 16, 32, 64, 128, 256])
    ap.add_argument("--ranks", type=int, default=2)
    o = ap.parse_args()
    os.makedirs(o.out, exist_ok=True)
    data = teacher_data(o.mft, o.out, o.ranks)
    rows = []
    for g in (0.5, 1.0):
        for k in o.k:
            d0, d1, risk = student(o.mft, data, o.out, g, k, o.ranks)
            rows.append((g, k, d0, d1, d1 / d0, risk))
            print("g = %-3s k = %4d: diversity %.4g at initialisation, %.4g trained (ratio %.3g), risk %.4g"
                  % (g, k, d0, d1, d1 / d0, risk), flush=True)
    with open(os.path.join(o.out, "head_collapse.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["g", "k", "diversity_init", "diversity_trained", "ratio", "risk"])
        w.writerows(rows)
    for g in (0.5, 1.0):
        ks = np.array([r[1] for r in rows if r[0] == g], float)
        d1 = np.array([r[3] for r in rows if r[0] == g])
        if len(ks) > 1 and np.all(d1 > 0):
            slope = np.polyfit(np.log(ks), np.log(d1), 1)[0]
            print("g = %s: trained diversity ~ k^%.3f over k = %d .. %d" % (g, slope, ks[0], ks[-1]))
    plot(rows, os.path.join(o.out, "head_collapse.png"))


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for g, color in ((0.5, "C0"), (1.0, "C3")):
        r = [x for x in rows if x[0] == g]
        ks = [x[1] for x in r]
        ax.loglog(ks, [x[2] for x in r], "o--", color=color, mfc="none", label="g = %s, initialisation" % g)
        ax.loglog(ks, [x[3] for x in r], "o-", color=color, label="g = %s, trained" % g)
    ax.set_xlabel("head dimension k")
    ax.set_ylabel("diversity of the heads' attention")
    ax.set_title("AdamW with muP per-block rates, 2 x 8 qkvo heads")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
