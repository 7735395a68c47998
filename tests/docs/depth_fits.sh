#!/usr/bin/env bash
# The depth order's fits that docs/results.md states ('The depth order'),
# made by mft's expansion fits (build/tests/levels fit) from the logged
# D_L: from L = 8 the free order 1.044 [0.978, 1.106], decided; from L = 4
# the same expansion rejected; one power law rejected over every range.
# Usage: depth_fits.sh LEVELS SOURCE_DIR
set -u
"$1" fit "$2/docs/bench/log.2026-12-06.amd-epyc-f26m2.levels_orders" > fits.txt 2>&1 ||
  { echo "FAIL: levels fit: $(tail -n 3 fits.txt)"; exit 1; }
cat fits.txt
/usr/bin/python3 - fits.txt <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ranges = dict(re.findall(r"fits over L >= (\d+):\n((?:  .*\n)+)", text))
def free(r):
    m = re.search(r"a L\^-p \+ b L\^-\(p\+1\): p = ([0-9.]+) \[([0-9.]+), ([0-9.]+)\].*\), (.*)", ranges[r])
    return [float(v) for v in m.groups()[:3]], m.group(4)
bad = []
(p, lo, hi), verdict = free("8")
if max(abs(p - 1.044), abs(lo - 0.978), abs(hi - 1.106)) > 0.002 or verdict != "decided":
    bad.append(f"L >= 8: {p} [{lo}, {hi}] {verdict}")
(p, lo, hi), verdict = free("4")
if max(abs(p - 0.958), abs(lo - 0.921), abs(hi - 0.995)) > 0.002 or verdict != "rejected":
    bad.append(f"L >= 4: {p} [{lo}, {hi}] {verdict}")
for r in ("1", "4", "8"):
    if not re.search(r"a L\^-p: .*rejected", ranges[r]):
        bad.append(f"L >= {r}: one power law not rejected")
print("\n".join("FAIL: " + b for b in bad) or "ok: the depth fits are results.md's")
sys.exit(1 if bad else 0)
PY
