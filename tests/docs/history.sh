#!/usr/bin/env bash
# The manual speaks of the project alone: what is, and why. No word of the
# sessions or issues the work came in, in the sources, the headers, the
# documents (the dated logs included) or the README; a log's date says when.
#   bash tests/docs/history.sh TOP
set -u
top="$1"
pattern='session|the issue'
probe="$(mktemp)"
trap 'rm -f "$probe"' EXIT
echo "measured in the third Session; the issue asked 2x" > "$probe"
[ "$(grep -ciE "$pattern" "$probe")" -eq 1 ] || { echo "history.sh: the check itself is broken"; exit 1; }
hits=$(grep -rnIiE "$pattern" "$top/src" "$top/include" "$top/docs" "$top/README.md")
if [ -n "$hits" ]; then
  echo "$hits"
  echo "history.sh: the lines above tell the work's history: say what is and why (a dated log keeps when)"
  exit 1
fi
echo "history.sh: src, include, docs and README.md speak of the project alone"
