#!/usr/bin/env python3
"""A study's predicted case costs against its measured ones, and the cost
model's overheads fitted to them (docs/design.md, 'Studies on groups of ranks').

  jobs/study_costs.py [--fit [--least SECONDS]] [--mft PROGRAM] CONFIG LOG [CONFIG LOG ...] [-- MFT_OPTIONS]

Each LOG is the output of `mft study --config CONFIG` (any schedule): its
lines "case <i> (...) done in <s> s on <g> rank(s)" are the measured times.
The predictions are `mft study --list --study.plan_cores g --study.schedule
serial` (every case on g ranks). Prints, per study, the median and largest
relative error and every case over 1 s; with --fit, first fits
parallel.unit_overhead, causal_overhead, layer_overhead and case_overhead by
least squares on the relative errors of every case (of every case measured
at least SECONDS with --least), prints them as options, and predicts with
them.
"""
import re
import subprocess
import sys

import numpy as np

PROBES = {"unit": ("parallel.unit_overhead", 1e-6), "causal": ("parallel.causal_overhead", 1e-6),
          "layer": ("parallel.layer_overhead", 1e-6), "case": ("parallel.case_overhead", 1.0)}
OVERHEADS = [key for key, _ in PROBES.values()]


def measured(log):
    """{(case, ranks): seconds} from a study's output."""
    out = {}
    for line in open(log):
        m = re.match(r"case (\d+) \(.*\) done in ([\d.]+) s on (\d+) rank", line)
        if m:
            out[(int(m.group(1)), int(m.group(3)))] = float(m.group(2))
    return out


def predicted(mft, config, ranks, options):
    """{case: seconds} on `ranks` ranks, from mft study --list."""
    cmd = [mft, "study", "--config", config, "--list", "--study.plan_cores", str(ranks), "--study.schedule",
           "serial"] + options
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    out = {}
    for line in text.splitlines():
        m = re.match(r"case (\d+) \(.*\): [\d.e+-]+ core-seconds; on \d+ ranks? ([\d.e+-]+) s", line)
        if m:
            out[int(m.group(1))] = float(m.group(2))
    return out


def features(mft, config, ranks, options):
    """Per case: the operations' seconds and the three overheads' counts (each overhead's price at a probe value)."""
    zero = [x for key in OVERHEADS for x in ("--" + key, "0")]
    base = predicted(mft, config, ranks, options + zero)
    cols = {}
    for name, (key, probe) in PROBES.items():
        one = [x for k in OVERHEADS for x in ("--" + k, str(probe) if k == key else "0")]
        p = predicted(mft, config, ranks, options + one)
        cols[name] = {i: (p[i] - base[i]) / probe for i in base}
    return {i: [base[i]] + [cols[n][i] for n in PROBES] for i in base}


def main(argv):
    fit = "--fit" in argv
    argv = [a for a in argv if a != "--fit"]
    least = 0.0
    if "--least" in argv:
        k = argv.index("--least")
        least = float(argv[k + 1])
        del argv[k:k + 2]
    mft = "build/mft"
    if "--mft" in argv:
        k = argv.index("--mft")
        mft = argv[k + 1]
        del argv[k:k + 2]
    options = []
    if "--" in argv:
        options = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if len(argv) < 2 or len(argv) % 2:
        sys.exit(__doc__)
    studies = list(zip(argv[0::2], argv[1::2]))
    rows = []  # (study, case, ranks, measured, features, predicted)
    for config, log in studies:
        times = measured(log)
        if not times:
            sys.exit("%s: no 'case ... done in ... s on ... rank' lines" % log)
        for g in sorted({g for _, g in times}):
            f = features(mft, config, g, options) if fit else {}
            p = predicted(mft, config, g, options)
            rows += [((config, log), i, r, t, f.get(i), p[i]) for (i, r), t in times.items() if r == g]
    y = np.array([r[3] for r in rows])
    p = np.array([r[5] for r in rows])
    if fit:
        A = np.array([r[4] for r in rows])
        w = 1 / y
        big = y >= least  # the cases the fit is held to
        c, *_ = np.linalg.lstsq(A[big, 1:] * w[big, None], (y[big] - A[big, 0]) * w[big], rcond=None)
        p = A @ np.r_[1.0, c]
        print("fitted: " + " ".join("--%s %.3g" % (k, v) for k, v in zip(OVERHEADS, c)))
    for config, log in studies:
        idx = [k for k, r in enumerate(rows) if r[0] == (config, log)]
        err = p[idx] / y[idx] - 1
        print("%s (%s): %d cases, relative error median %.2f, largest %.2f" % (
            config, log, len(idx), np.median(np.abs(err)), np.max(np.abs(err))))
        for k, e in zip(idx, err):
            if y[k] > 1:
                print("  case %d on %d rank(s): measured %.3g s, predicted %.3g s (%+.0f%%)" % (rows[k][1], rows[k][2],
                                                                                           y[k], p[k], 100 * e))

if __name__ == "__main__":
    main(sys.argv[1:])
