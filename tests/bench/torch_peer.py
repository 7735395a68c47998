#!/usr/bin/python3
"""The PyTorch peer of MFT: the same discrete model, written as a careful
PyTorch user would (float64, all heads of a layer batched, stable softmax,
autograd backward), timed on the data and heads of an MFT run file.

    /usr/bin/python3 tests/bench/torch_peer.py bench_S1.h5 [--threads 2] [--repeats 5]

The run file (from `mft bench --bench.write DIR`) gives the tokens, targets
and heads; the peer checks that its x(1) and gradient g = L H dR/dtheta agree
with the file's /output/tokens and /grad/* (relative 1e-10), then prints one
line: torch-summary {...} with the median step time. Debian's python3-torch
and python3-h5py; run it with LD_PRELOAD=libtcmalloc_minimal.so.4 as the
allocator (glibc's re-faults torch's large buffers every step).
"""
import argparse
import json
import statistics
import time

import h5py
import torch


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with h5py.File(args.run_file, "r") as f:
        x0 = torch.tensor(f["/data/tokens"][()], dtype=torch.float64)
        y = torch.tensor(f["/data/targets"][()], dtype=torch.float64)
        kind = text(f.attrs["head_kind"])
        beta = float(f.attrs["beta"])
        causal = text(f.attrs["causal"]) == "true"
        blocks = ["Q", "K", "V"] + (["O"] if kind == "qkvo" else [])
        params = {b: torch.tensor(f["/params/" + b][()], dtype=torch.float64, requires_grad=True) for b in blocks}
        out_ref = torch.tensor(f["/output/tokens"][()], dtype=torch.float64)
        grad_ref = {b: torch.tensor(f["/grad/" + b][()], dtype=torch.float64) for b in blocks}
    M, N, d = x0.shape
    L, H = params["Q"].shape[:2]
    mask = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1) if causal else None

    def forward():
        x = x0
        for l in range(L):
            q = torch.einsum("mnd,hkd->mhnk", x, params["Q"][l])
            k = torch.einsum("mnd,hkd->mhnk", x, params["K"][l])
            v = torch.einsum("mnd,hed->mhne", x, params["V"][l])
            a = beta * (q @ k.transpose(-1, -2))
            if mask is not None:
                a = a.masked_fill(mask, float("-inf"))
            y_h = torch.softmax(a, dim=-1) @ v  # stable: softmax subtracts the row maximum
            if kind == "qkvo":
                y_h = torch.einsum("mhne,hde->mhnd", y_h, params["O"][l])
            x = x + y_h.mean(dim=1) / L
        return x

    def step():
        for p in params.values():
            p.grad = None
        x1 = forward()
        risk = 0.5 * ((x1 - y) ** 2).sum() / (M * N)
        risk.backward()
        return x1

    x1 = step()  # warm-up, and the check that this is the same computation
    out_diff = ((x1 - out_ref).abs().max() / out_ref.abs().max()).item()
    grad_diff = max(((L * H * params[b].grad - grad_ref[b]).abs().max() / grad_ref[b].abs().max()).item() for b in blocks)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    print("torch-summary " + json.dumps({
        "file": args.run_file, "threads": args.threads, "step_seconds": statistics.median(times),
        "step_min": min(times), "step_max": max(times), "output_rel_diff": out_diff, "grad_rel_diff": grad_diff,
        "same_computation": out_diff < 1e-10 and grad_diff < 1e-10}))


if __name__ == "__main__":
    main()
