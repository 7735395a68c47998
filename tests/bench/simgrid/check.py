#!/usr/bin/env python3
"""The cost model's network between nodes (src/flow/cost.cpp) against SimGrid's
SMPI, on the exchange that bounds the long-context shape at scale: one share
of a cut sequence's rows as tokens (share.c replays it: rank (a, b) sends
share a of its token group's rows to rank (a, b') of every other group, all
posted at once). Nodes of `per` ranks, each node's card 25 GB/s each way
(SPLITDUPLEX), 1.25 us a link (2.5 us a message between nodes, the model's
remote latency), 12 GB/s and 1.5 us between ranks of a node. The model's
time is the formula of cost.hpp on the same messages:
  t_r = m_local lat + b_local / bw + m_remote rlat + max(b_remote / rbw, node's b_remote / card)
and the step's time is the slowest rank's.

  python3 tests/bench/simgrid/check.py [N d]   (needs Debian's libsimgrid-dev: smpicc, smpirun)
N, d: the sequence's tokens and their dimension (default 65536 and 64, the
long-context shape LC, whose messages are bandwidth-bound; small ones make
them latency-bound).
"""
import os, re, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
N, d = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (65536, 64)  # default: bench size LC


def part(n, parts, i):
    return n // parts + (1 if i < n % parts else 0)


def model(nodes, per, Ph, lat=1.5e-6, bw=12e9, rlat=2.5e-6, rbw=25e9, card=25e9):
    P = nodes * per
    Pt = P // Ph
    off = [0.0] * nodes
    ranks = []
    for r in range(P):
        a, b = r % Ph, r // Ph
        mine = part(part(N, Pt, b), Ph, a) * d * 8
        ml = mr = bl = br = 0
        for g in range(Pt):
            if g == b:
                continue
            if (g * Ph + a) // per != r // per:
                mr, br = mr + 1, br + mine
            else:
                ml, bl = ml + 1, bl + mine
        off[r // per] += br
        ranks.append((r, ml, mr, bl, br))
    return max(ml * lat + bl / bw + mr * rlat + max(br / rbw, off[r // per] / card if br else 0)
               for r, ml, mr, bl, br in ranks)


def platform(nodes, per):
    return """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-%d" speed="1Gf" core="%d"
           bw="25GBps" lat="1.25us" bb_bw="100TBps" bb_lat="0us" sharing_policy="SPLITDUPLEX"
           loopback_bw="12GBps" loopback_lat="1.5us"/>
</platform>
""" % (nodes - 1, per)


def simulate(work, nodes, per, Ph, ideal):
    with open(os.path.join(work, "p.xml"), "w") as f:
        f.write(platform(nodes, per))
    with open(os.path.join(work, "h.txt"), "w") as f:
        f.write("".join("node-%d\n" % i for i in range(nodes) for _ in range(per)))
    cfg = ["--cfg=smpi/bw-factor:0:1", "--cfg=smpi/lat-factor:0:1"] if ideal else []
    out = subprocess.run(["smpirun", "-np", str(nodes * per), "-platform", "p.xml", "-hostfile", "h.txt",
                          "-no-privatize", "--cfg=smpi/simulate-computation:no"] + cfg +
                         ["./share", str(N), str(d), str(Ph), str(per)], cwd=work, capture_output=True, text=True)
    m = re.search(r"simulated ([0-9.e+-]+) s", out.stdout)
    if not m:
        sys.exit("check.py: smpirun failed:\n" + out.stdout[-2000:] + out.stderr[-2000:])
    return float(m.group(1))


def main():
    work = tempfile.mkdtemp()
    subprocess.run(["smpicc", "-O2", os.path.join(here, "share.c"), "-o", os.path.join(work, "share")], check=True)
    print("| nodes x ranks a node | Ph x Pt | model s | SimGrid, ideal factors | ratio | SimGrid, SMPI's default factors | ratio |")
    print("|---|---|---|---|---|---|---|")
    for nodes, per, Ph in [(4, 8, 2), (8, 8, 2), (16, 8, 2), (32, 8, 2), (64, 8, 2), (16, 4, 4), (16, 16, 2), (64, 8, 8)]:
        m = model(nodes, per, Ph)
        si, sd = simulate(work, nodes, per, Ph, True), simulate(work, nodes, per, Ph, False)
        print("| %d x %d | %d x %d | %.4g | %.4g | %.3f | %.4g | %.3f |"
              % (nodes, per, Ph, nodes * per // Ph, m, si, si / m, sd, sd / m), flush=True)


if __name__ == "__main__":
    main()
