#!/usr/bin/python3
"""The PyTorch peer of MFT: the same discrete model, written as a careful
PyTorch user would (float64, all heads of a layer batched, stable softmax,
autograd backward), timed on the data and heads of an MFT run file. A run
file with MLP sublayers (/params/mlp) gets its own MLP blocks after each
layer's attention: x + L^-a' m^-c' sigma(x U^T + b) W, torch's activations.

    /usr/bin/python3 tests/bench/torch_peer.py bench_S1.h5 [--threads 2] [--repeats 5] [--streams 1]

The run file (from `mft bench --bench.write DIR`) gives the tokens, targets
and heads; the peer checks that its x(1) and gradient g = L H dR/dtheta agree
with the file's /output/tokens and /grad/* (relative 1e-10), then prints one
line: torch-summary {...} with the median step time. With --streams S it runs
as S data-parallel processes would (as DDP does on one node): each on its own
M/S sequences with --threads threads, their gradients summed through shared
memory every step, a step timed from the barrier that starts it to the one
after the sum. Debian's python3-torch
and python3-h5py; run it with LD_PRELOAD=libtcmalloc_minimal.so.4 as the
allocator (glibc's re-faults torch's large buffers every step).
"""
import argparse
import json
import multiprocessing as mp
import statistics
import time

import h5py
import torch


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load(path):
    with h5py.File(path, "r") as f:
        run = {"x0": f["/data/tokens"][()], "y": f["/data/targets"][()], "out": f["/output/tokens"][()],
               "kind": text(f.attrs["head_kind"]), "beta": float(f.attrs["beta"]),
               "causal": text(f.attrs["causal"]) == "true"}
        run["blocks"] = ["Q", "K", "V"] + (["O"] if run["kind"] == "qkvo" else [])
        run["params"] = {b: f["/params/" + b][()] for b in run["blocks"]}
        run["grad"] = {b: f["/grad/" + b][()] for b in run["blocks"]}
        if "/params/mlp/U" in f:  # MLP sublayers: their parameters, scales and gradients
            run["blocks"] += ["mlp/U", "mlp/b", "mlp/W"]
            for b in ("mlp/U", "mlp/b", "mlp/W"):
                run["params"][b], run["grad"][b] = f["/params/" + b][()], f["/grad/" + b][()]
            L, m = run["params"]["mlp/U"].shape[:2]
            a, c = (float(f.attrs["model.mlp_depth_exponent"]), float(f.attrs["model.mlp_width_exponent"]))
            run["mlp"] = {"activation": text(f.attrs["model.mlp_activation"]), "scale": L ** -a * m ** -c,
                          "grad_scale": L ** a * m ** c}
    return run


ACTIVATIONS = {"identity": lambda z: z, "relu": torch.relu, "gelu": torch.nn.functional.gelu, "tanh": torch.tanh,
               "erf": torch.erf}


def stream(run, part, parts, threads, repeats, shared, barrier, result):
    """One data-parallel stream: sequences [part M / parts, (part + 1) M / parts)."""
    torch.set_num_threads(threads)
    M_all = run["x0"].shape[0]
    lo, hi = part * M_all // parts, (part + 1) * M_all // parts
    x0 = torch.tensor(run["x0"][lo:hi], dtype=torch.float64)
    y = torch.tensor(run["y"][lo:hi], dtype=torch.float64)
    beta, kind, blocks = run["beta"], run["kind"], run["blocks"]
    params = {b: torch.tensor(run["params"][b], dtype=torch.float64, requires_grad=True) for b in blocks}
    _, N, d = x0.shape
    L, H = params["Q"].shape[:2]
    mask = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1) if run["causal"] else None
    mlp = run.get("mlp")
    act = ACTIVATIONS[mlp["activation"]] if mlp else None

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
            if mlp:
                z = torch.addmm(params["mlp/b"][l], x.reshape(-1, d), params["mlp/U"][l].T)
                x = x + mlp["scale"] * (act(z) @ params["mlp/W"][l]).reshape(x.shape)
        return x

    def step():
        for p in params.values():
            p.grad = None
        x1 = forward()
        risk = 0.5 * ((x1 - y) ** 2).sum() / (M_all * N)
        risk.backward()
        if parts > 1:  # the all-reduce of data-parallel training, through shared memory
            for b in blocks:
                shared[b][part].copy_(params[b].grad)
            barrier.wait()
            if part == 0:
                for b in blocks:
                    torch.sum(shared[b], dim=0, out=params[b].grad)
            barrier.wait()
        return x1

    x1 = step()  # warm-up, and the check that this is the same computation
    out = torch.tensor(run["out"][lo:hi])
    result["out_diff_%d" % part] = ((x1 - out).abs().max() / torch.tensor(run["out"]).abs().max()).item()
    if part == 0:
        grad = {b: torch.tensor(run["grad"][b]) for b in blocks}
        scale = {b: mlp["grad_scale"] if b.startswith("mlp/") else L * H for b in blocks}
        result["grad_diff"] = max(((scale[b] * params[b].grad - grad[b]).abs().max() / grad[b].abs().max()).item()
                                  for b in blocks)
    times = []
    for _ in range(repeats):
        if barrier:
            barrier.wait()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    if part == 0:
        result["times"] = times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--streams", type=int, default=1)
    args = ap.parse_args()
    run = load(args.run_file)
    S = args.streams
    if S == 1:
        result = {}
        stream(run, 0, 1, args.threads, args.repeats, None, None, result)
    else:
        ctx = mp.get_context("fork")
        shared = {b: torch.zeros((S,) + run["params"][b].shape, dtype=torch.float64).share_memory_()
                  for b in run["blocks"]}
        barrier, result = ctx.Barrier(S), ctx.Manager().dict()
        procs = [ctx.Process(target=stream, args=(run, i, S, args.threads, args.repeats, shared, barrier, result))
                 for i in range(S)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        assert all(p.exitcode == 0 for p in procs), "a stream failed"
    times = result["times"]
    out_diff = max(v for k, v in result.items() if k.startswith("out_diff_"))
    grad_diff = result["grad_diff"]
    print("torch-summary " + json.dumps({
        "file": args.run_file, "threads": args.threads, "streams": S, "step_seconds": statistics.median(times),
        "step_min": min(times), "step_max": max(times), "output_rel_diff": out_diff, "grad_rel_diff": grad_diff,
        "same_computation": out_diff < 1e-10 and grad_diff < 1e-10}))


if __name__ == "__main__":
    main()
