#!/usr/bin/python3
"""An independent float64 implementation of the transformer block that mft
runs (docs/model.md, 'The MLP sublayer'): qkv heads at a = c = 1, g = 0,
attention then MLP sublayers, pre-LN or not, causal or not, the token loss;
its forward by NumPy and its gradient by a backward pass written out by hand
(no autograd). Reads an mft run file (forward --gradient) and exits 0 when
x(1), the heads' g = L H dR/dtheta and the neurons' L^a' m^c' dR/d(u, b, w)
agree with the file's within `tol` relative to each array's largest entry.

    /usr/bin/python3 tests/cli/mlp_reference.py RUN.h5 [tol]
"""
import sys

import h5py
import numpy as np
from math import erf as scalar_erf, pi, sqrt

erf = np.vectorize(scalar_erf)


def activation(name, z):
    """sigma(z) and sigma'(z)."""
    if name == "identity":
        return z, np.ones_like(z)
    if name == "relu":
        return np.maximum(z, 0), (z > 0).astype(float)
    if name == "tanh":
        t = np.tanh(z)
        return t, 1 - t * t
    if name == "erf":
        return erf(z), 2 / sqrt(pi) * np.exp(-z * z)
    phi = 0.5 * (1 + erf(z / sqrt(2)))  # gelu
    return z * phi, phi + z * np.exp(-z * z / 2) / sqrt(2 * pi)


def read(x, pre):
    """What a sublayer reads: x, or sqrt(d) x / |x| (pre-LN)."""
    return np.sqrt(x.shape[-1]) * x / np.linalg.norm(x, axis=-1, keepdims=True) if pre else x


def read_transpose(x, g, pre):
    if not pre:
        return g
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.sqrt(x.shape[-1]) / n * (g - (x * g).sum(-1, keepdims=True) * x / n ** 2)


def main():
    path, tol = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 1e-12
    with h5py.File(path, "r") as f:
        A = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        x0, target, out = f["/data/tokens"][()], f["/data/targets"][()], f["/output/tokens"][()]
        Q, K, V = (f["/params/" + b][()] for b in "QKV")
        U, b, W = (f["/params/mlp/" + n][()] for n in "UbW")
        grads = {n: f["/grad/" + n][()] for n in ("Q", "K", "V", "mlp/U", "mlp/b", "mlp/W")}
    L, H = Q.shape[:2]
    M, N, d = x0.shape
    m = U.shape[1]
    beta, pre, causal = float(A["model.beta"]), A["model.norm"] == "pre", str(A["model.causal"]) == "true"
    act, a2, c2 = A["model.mlp_activation"], float(A["model.mlp_depth_exponent"]), float(A["model.mlp_width_exponent"])
    scale = L ** -a2 * m ** -c2
    mask = np.triu(np.ones((N, N), bool), 1)
    # Forward, keeping what the backward reads.
    x, keep = x0.copy(), []
    for l in range(L):
        r = read(x, pre)
        f_att, P_all = np.zeros_like(x), []
        for h in range(H):
            B = Q[l, h].T @ K[l, h]
            S = beta * np.einsum("mic,cd,mjd->mij", r, B, r)
            if causal:
                S = np.where(mask, -np.inf, S)
            P = np.exp(S - S.max(-1, keepdims=True))
            P /= P.sum(-1, keepdims=True)
            P_all.append(P)
            f_att += np.einsum("ec,mic->mie", V[l, h], P @ r) / H
        y = x + f_att / L
        ry = read(y, pre)
        z = ry @ U[l].T + b[l]
        s, ds = activation(act, z)
        keep.append((x, r, P_all, y, ry, s, ds))
        x = y + scale * s @ W[l]
    g = (x - target) / (M * N)
    mine = {n: np.zeros_like(v) for n, v in grads.items()}
    for l in reversed(range(L)):
        xl, r, P_all, y, ry, s, ds = keep[l]
        mine["mlp/W"][l] = scale * np.einsum("mij,mic->jc", s, g)
        gz = scale * (g @ W[l].T) * ds
        mine["mlp/U"][l] = np.einsum("mij,mic->jc", gz, ry)
        mine["mlp/b"][l] = gz.sum((0, 1))
        gy = g + read_transpose(y, gz @ U[l], pre)
        gf, gr = gy / L, np.zeros_like(r)
        for h in range(H):
            P, B = P_all[h], Q[l, h].T @ K[l, h]
            pr = P @ r
            mine["V"][l, h] = np.einsum("mie,mic->ec", gf, pr) / H
            gm = gf @ V[l, h] / H
            gP = np.einsum("mic,mjc->mij", gm, r)
            gr += np.einsum("mij,mic->mjc", P, gm)
            gS = P * (gP - (P * gP).sum(-1, keepdims=True))
            gr += beta * (np.einsum("mij,cd,mjd->mic", gS, B, r) + np.einsum("mij,dc,mid->mjc", gS, B, r))
            gB = beta * np.einsum("mij,mic,mjd->cd", gS, r, r)
            mine["Q"][l, h], mine["K"][l, h] = K[l, h] @ gB.T, Q[l, h] @ gB
        g = gy + read_transpose(xl, gr, pre)
    for n in ("Q", "K", "V"):
        mine[n] *= L * H
    for n in ("mlp/U", "mlp/b", "mlp/W"):
        mine[n] *= L ** a2 * m ** c2
    worst = [("x(1)", np.abs(x - out).max() / np.abs(out).max())]
    worst += [(n, np.abs(mine[n] - grads[n]).max() / np.abs(grads[n]).max()) for n in grads]
    print("mlp_reference: " + ", ".join("%s %.2g" % w for w in worst))
    sys.exit(0 if max(w for _, w in worst) < tol else 1)


if __name__ == "__main__":
    main()
