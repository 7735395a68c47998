#!/usr/bin/python3
"""The PyTorch peer of an MFT ensemble: S models trained together by
gradient descent, written as a PyTorch user vectorises over seeds, float64,
timed on the data and initial heads of an MFT ensemble file.

    /usr/bin/python3 tests/bench/ensemble_peer.py START.h5 END.h5 [--threads 1 2] [--repeats 3]

START.h5 is `mft train --train.seeds S --train.steps 0` (the initial heads
of every model, the data, the settings), END.h5 the same run after T steps.
Two ways a PyTorch user writes it, each timed at every thread count given:
  vmap:    the one-model loss, functorch.vmap(functorch.grad(loss)) over the
           stacked heads (torch.func's stack_module_state + vmap in 2.x);
  batched: the seeds as a leading axis of every einsum, one backward of the
           summed risks (the models are independent, so each gets its own
           gradient).
Both train T steps of theta <- theta - lr g, g = L^a H^c dR/dtheta, and
must end at END.h5's heads: the median model to 1e-12 relative, every one
to 1e-6 (gradient descent at the edge of stability amplifies round-off in a
few seeds: 1e-9 over 100 steps at lr 0.3, as much as mft's own run of such
a seed alone on 1 against 2 ranks). Prints
one line: ensemble-peer {...} with the seconds of the T steps at the best
way and thread count, and the models trained per second. Needs Debian's
python3-torch (1.13: functorch) and python3-h5py.
"""
import argparse
import json
import time

import functorch
import h5py
import torch


def attr(f, key):
    v = f.attrs[key]
    return v.decode() if isinstance(v, bytes) else str(v)


def load(path):
    with h5py.File(path, "r") as f:
        run = {k: float(attr(f, "model." + k)) for k in ("beta", "logit_exponent", "depth_exponent", "head_exponent")}
        run.update(kind=attr(f, "model.head_kind"), causal=attr(f, "model.causal") == "true", lr=float(attr(f, "train.lr")),
                   steps=int(attr(f, "step")), loss=attr(f, "loss.kind"))
        run["x0"] = torch.tensor(f["/data/tokens"][()])
        run["y"] = torch.tensor(f["/data/targets"][()])
        run["blocks"] = ["Q", "K", "V"] + (["O"] if run["kind"] == "qkvo" else [])
        run["params"] = {b: torch.tensor(f["/params/" + b][()]) for b in run["blocks"]}
    assert run["loss"] == "token", "the peer trains the token loss"
    return run


def model(run):
    """The risk of one model (heads {b: (L, H, ...)}) and, batched, of many ((S, L, H, ...))."""
    x0, y = run["x0"], run["y"]
    M, N, d = x0.shape
    L, H, k = run["params"]["Q"].shape[1:4]
    logit = run["beta"] * k ** -run["logit_exponent"]
    scale = L ** -run["depth_exponent"] * H ** -run["head_exponent"]
    mask = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1) if run["causal"] else None

    def layer(x, p, l, seeds):  # x: ([S,] M, N, d)
        s = "s" if seeds else ""
        q = torch.einsum(f"{s}mnd,{s}hkd->{s}mhnk", x, p["Q"][:, l] if seeds else p["Q"][l])
        kk = torch.einsum(f"{s}mnd,{s}hkd->{s}mhnk", x, p["K"][:, l] if seeds else p["K"][l])
        v = torch.einsum(f"{s}mnd,{s}hed->{s}mhne", x, p["V"][:, l] if seeds else p["V"][l])
        a = logit * (q @ kk.transpose(-1, -2))
        if mask is not None:
            a = a.masked_fill(mask, float("-inf"))
        yh = torch.softmax(a, dim=-1) @ v
        if run["kind"] == "qkvo":
            yh = torch.einsum(f"{s}mhne,{s}hde->{s}mhnd", yh, p["O"][:, l] if seeds else p["O"][l])
        return x + scale * yh.sum(dim=-3)

    def risk(p):
        x = x0
        for l in range(L):
            x = layer(x, p, l, False)
        return 0.5 * ((x - y) ** 2).sum() / (M * N)

    def risks(p):
        x = x0.expand((p["Q"].shape[0],) + tuple(x0.shape))
        for l in range(L):
            x = layer(x, p, l, True)
        return 0.5 * ((x - y) ** 2).sum(dim=(1, 2, 3)) / (M * N)

    return risk, risks, L ** run["depth_exponent"] * H ** run["head_exponent"]


def train(run, way, threads):
    torch.set_num_threads(threads)
    risk, risks, g_scale = model(run)
    p = {b: v.clone() for b, v in run["params"].items()}
    per_seed = functorch.vmap(functorch.grad(risk))
    t0 = time.perf_counter()
    for _ in range(run["steps"]):
        if way == "vmap":
            g = per_seed(p)
        else:
            for v in p.values():
                v.requires_grad_(True)
            g = dict(zip(p, torch.autograd.grad(risks(p).sum(), list(p.values()))))
        with torch.no_grad():
            p = {b: p[b].detach() - run["lr"] * g_scale * g[b] for b in p}
    return time.perf_counter() - t0, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("start")
    ap.add_argument("end")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    run, end = load(args.start), load(args.end)
    run["steps"] = end["steps"]
    S = run["params"]["Q"].shape[0]
    best, diff = None, {}
    for way in ("vmap", "batched"):
        for threads in args.threads:
            for _ in range(args.repeats):
                seconds, p = train(run, way, threads)
                per_model = torch.stack([(p[b] - end["params"][b]).flatten(1).abs().max(1).values /
                                         end["params"][b].flatten(1).abs().max(1).values for b in run["blocks"]]).max(0).values
                diff[way] = {"median": per_model.median().item(), "max": per_model.max().item()}
                if best is None or seconds < best[0]:
                    best = (seconds, way, threads)
    print("ensemble-peer " + json.dumps({
        "models": S, "steps": run["steps"], "seconds": best[0], "way": best[1], "threads": best[2],
        "models_per_second": S / best[0], "heads_rel_diff": diff,
        "same_computation": all(v["median"] < 1e-12 and v["max"] < 1e-6 for v in diff.values())}))


if __name__ == "__main__":
    main()
