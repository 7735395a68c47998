#!/usr/bin/python3
"""The PyTorch peer of `mft forward --init.samples`: S independent
initialisations of the L x H qkv model at depth and head exponents a, c,
batched over the samples as a careful PyTorch user would (float64, every
sample's heads of a layer drawn in one randn and applied in batched einsums,
stable softmax), timed at several batch sizes and two formulations; the best
is reported.

    /usr/bin/python3 tests/bench/samples_peer.py run.h5 --samples 4096 [--threads 2] [--streams 1]

run.h5 is an `mft forward` run file of the same model (one initialisation):
the peer first applies its forward to that file's /params and checks x(1)
against /output/tokens (relative 1e-12), so that both compute the same
function; then it draws its own heads (torch's generator) and times them.
With --streams P it runs as P processes of --threads threads each would (the
samples are independent: data parallel), each on S/P samples, timed from the
barrier that starts them to the last one's end. Prints one line:
samples-peer {...}, samples a second of the best variant.
"""
import argparse
import json
import multiprocessing as mp
import time

import h5py
import torch


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def layer_einsum(x, Q, K, V, beta, scale):
    """x (S, N, d); Q, K (S, H, k, d); V (S, H, d, d): x + scale sum_h V_h softmax(beta Qx.Kx) x."""
    q = torch.einsum("snd,shkd->shnk", x, Q)
    k = torch.einsum("snd,shkd->shnk", x, K)
    P = torch.softmax(beta * q @ k.transpose(-1, -2), dim=-1)  # (S, H, N, N)
    m = P @ x.unsqueeze(1)  # (S, H, N, d)
    return x + scale * torch.einsum("shnd,shed->sne", m, V)


def layer_bilinear(x, Q, K, V, beta, scale):
    """The same with B = Q^T K formed first (d x d a head) and V applied before the mean."""
    B = Q.transpose(-1, -2) @ K  # (S, H, d, d)
    a = torch.einsum("snd,shde,sme->shnm", x, B, x)
    P = torch.softmax(beta * a, dim=-1)
    vx = torch.einsum("shed,smd->shme", V, x)  # V x_j, (S, H, N, d)
    return x + scale * (P @ vx).sum(1)


def check(path, layer):
    with h5py.File(path, "r") as f:
        x0 = torch.tensor(f["/data/tokens"][()], dtype=torch.float64)
        out = torch.tensor(f["/output/tokens"][()], dtype=torch.float64)
        P = {b: torch.tensor(f["/params/" + b][()], dtype=torch.float64) for b in "QKV"}
        beta = float(f.attrs["beta"])
        a = float(text(f.attrs["model.depth_exponent"])); c = float(text(f.attrs["model.head_exponent"]))
    L, H = P["Q"].shape[:2]
    scale = L ** -a * H ** -c
    x = x0  # the M sequences as the batch: the heads are shared
    for l in range(L):
        x = layer(x, *(P[b][l].unsqueeze(0).expand(x.shape[0], *P[b][l].shape) for b in "QKV"), beta, scale)
    err = ((x - out).norm() / out.norm()).item()
    assert err < 1e-12, f"the peer's x(1) differs from the run file's by {err:.3g}"
    return L, H, x0.shape[1], x0.shape[2], P["Q"].shape[2], beta, scale, x0[0]


def sample(layer, x0, S, L, H, k, d, beta, scale, batch, gen):
    """S samples in batches: every layer's heads drawn for the whole batch at once."""
    outs = []
    for s0 in range(0, S, batch):
        b = min(batch, S - s0)
        x = x0.expand(b, *x0.shape).clone()
        for _ in range(L):
            Q = torch.randn(b, H, k, d, generator=gen, dtype=torch.float64) / d ** 0.5
            K = torch.randn(b, H, k, d, generator=gen, dtype=torch.float64) / d ** 0.5
            V = torch.randn(b, H, d, d, generator=gen, dtype=torch.float64) / d ** 0.5
            x = layer(x, Q, K, V, beta, scale)
        outs.append(x)
    return torch.cat(outs)


def stream(args, layer, run, S, batch, seed, threads, barrier):
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(seed)
    sample(layer, run[7], min(batch, S), *run[:2], run[4], run[3], run[5], run[6], batch, gen)  # warm
    barrier.wait()
    sample(layer, run[7], S, *run[:2], run[4], run[3], run[5], run[6], batch, gen)


def timed(args, layer, run, batch):
    """Seconds for args.samples samples on args.streams processes."""
    if args.streams == 1:
        L, H, N, d, k, beta, scale, x0 = run
        gen = torch.Generator().manual_seed(1)
        sample(layer, x0, min(batch, args.samples), L, H, k, d, beta, scale, batch, gen)  # warm
        t0 = time.perf_counter()
        sample(layer, x0, args.samples, L, H, k, d, beta, scale, batch, gen)
        return time.perf_counter() - t0
    barrier = mp.Barrier(args.streams + 1)
    procs = [mp.get_context("fork").Process(target=stream, args=(args, layer, run, args.samples // args.streams, batch,
                                                                 1 + p, args.threads, barrier))
             for p in range(args.streams)]
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    for p in procs:
        p.join()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="256 1024 4096")
    ap.add_argument("--streams", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    results = []
    for name, layer in (("einsum", layer_einsum), ("bilinear", layer_bilinear)):
        run = check(args.run, layer)
        for batch in map(int, args.batches.split()):
            t = timed(args, layer, run, batch)
            results.append({"variant": name, "batch": batch, "seconds": t, "samples_per_second": args.samples / t})
            print(f"torch {name:8s} batch {batch:5d}, {args.streams} x {args.threads} threads: "
                  f"{args.samples / t:9.1f} samples/s", flush=True)
    best = max(results, key=lambda r: r["samples_per_second"])
    best.update({"threads": args.threads, "streams": args.streams, "samples": args.samples,
                 "torch": torch.__version__})
    print("samples-peer " + json.dumps(best))


if __name__ == "__main__":
    main()
