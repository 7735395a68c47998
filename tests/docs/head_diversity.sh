#!/usr/bin/env bash
# Every figure of docs/results.md's table in 'Heads that collapse?' is the
# logged diversity.csv's (mft's mean over seeds and its 95% interval), to
# the digits shown; and the intervals the text calls disjoint are.
# Usage: head_diversity.sh SOURCE_DIR
set -u
/usr/bin/python3 - "$1/docs/results.md" "$1/docs/bench/log.2026-12-07.amd-epyc-f26m2.head_diversity" <<'PY'
import csv, re, sys
text, log = open(sys.argv[1]).read(), open(sys.argv[2]).read().splitlines()
rows = list(csv.DictReader(l for l in log if not l.startswith("#")))
def cell(teacher, g, k, time):
    for r in rows:
        o = dict(kv.split("=", 1) for kv in r["overrides"].split())
        if (o["data.teacher_seed"], o["model.logit_exponent"], o["model.k"], r["time"]) == (teacher, g, k, time):
            return [float(r[c]) for c in ("diversity", "diversity_lo", "diversity_hi")]
    sys.exit("the log has no row %s %s %s %s" % (teacher, g, k, time))
section = text[text.index("## Heads that collapse?"):text.index("## The regime map")]
table = [l for l in section.splitlines() if re.match(r"\| (4|16|64|256) \|", l)]
bad = []
if len(table) != 4:
    bad.append("the table has %d rows of k, not 4" % len(table))
columns = [("2", "0.5", "0"), ("2", "0.5", "300"), ("1000", "0.5", "300"), ("2", "1", "0"), ("2", "1", "300"),
           ("1000", "1", "300")]
def shown(x, s):  # x rounded as the text shows s
    digits = len(s.split(".")[1]) if "." in s else 0
    return abs(x - float(s)) <= 0.5 * 10 ** -digits + 1e-12
for line in table:
    f = [c.strip() for c in line.strip("|").split("|")]
    k = f[0]
    for (teacher, g, time), c in zip(columns, f[1:]):
        m = re.fullmatch(r"([0-9.]+) \[([0-9.]+), ([0-9.]+)\]", c)
        if not m:
            bad.append("k = %s: '%s' is no figure with its interval" % (k, c)); continue
        if not all(shown(x, s) for x, s in zip(cell(teacher, g, k, time), m.groups())):
            bad.append("k = %s, teacher %s, g = %s, step %s: '%s' against the log's %s" %
                       (k, teacher, g, time, c, cell(teacher, g, k, time)))
def disjoint(teacher, g):
    a, b = cell(teacher, g, "4", "300"), cell(teacher, g, "256", "300")
    return a[1] > b[2]
for teacher, g, want in (("2", "1", True), ("1000", "1", True), ("2", "0.5", True), ("1000", "0.5", False)):
    if disjoint(teacher, g) != want:
        bad.append("teacher %s, g = %s: k = 4 and 256 %s disjoint" % (teacher, g, "are not" if want else "are"))
print("\n".join("FAIL: " + b for b in bad) or "ok: the diversity table is the log's")
sys.exit(1 if bad else 0)
PY
