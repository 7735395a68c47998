#!/usr/bin/env bash
# Aggregates a sweep directory into table.csv: one row per case, from the
# summary line each case printed last (mft-summary {...}). A case that did
# not finish is a row with its status and is named on stderr; exit 1 then,
# after the table is written.
set -uo pipefail
dir="$1"
key="$(cat "$dir/key.txt")"
table="$dir/table.csv"
missing=0
echo "case,$key,status,initial_risk,final_risk,reduction,steps,seconds" > "$table.tmp"
field() { sed -nE "s/.*\"$1\": \"?([^,\"}]*)\"?.*/\1/p" <<<"$2"; }
while read -r i value; do
  line=$(grep '^mft-summary ' "$dir/case-$i.log" 2>/dev/null | tail -n 1)
  status=$(field status "$line")
  if [ "$status" != done ]; then
    echo "sweep: case $i ($key = $value) did not finish (${status:-no summary}); see $dir/case-$i.log" >&2
    echo "$i,$value,${status:-missing},,,,," >> "$table.tmp"
    missing=$((missing + 1))
    continue
  fi
  echo "$i,$value,done,$(field initial_risk "$line"),$(field final_risk "$line"),$(field reduction "$line"),$(field steps "$line"),$(field seconds "$line")" >> "$table.tmp"
done < "$dir/cases.txt"
mv "$table.tmp" "$table"
echo "sweep: wrote $table ($missing of $(wc -l < "$dir/cases.txt") cases missing)"
[ "$missing" -eq 0 ]
