#!/usr/bin/env bash
# Every option of every command, given a malformed value: exit 2, exactly one
# line `mft: error: ...` naming the option, nothing else on stderr, no core
# dump, and no work started (nothing written). The options and their types
# come from each command's --help: numbers get 'abc' (and, for mft forward,
# 'nan' and '', and 'inf' where the default is not a whole number), booleans
# 'maybe', integer lists '1 x', each under the first command that reads the
# option (one parser reads every command's values) and every command at least
# once; every option with a range in its help, once, a value below it (zero
# or negative) and an integer beyond any machine's. Files: a folder where a
# file is expected, an output in a folder that does not exist or is a folder.
# Every row's message is checked in one process (PROBLEMS, the check mft runs
# before MPI starts); a row refused only later, the first row of every
# command and every 16th row run as mft processes, with the whole contract.
# Usage: fuzz.sh MFT PROBLEMS
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh" "$1"
problems="$2"
ulimit -c 0
export MFT_KEEP_BLAS=1 # no re-execution for the BLAS kernels: the options are all that is tested
# A singleton's MPI start-up without its own runtime daemon (Open MPI's
# isolated singleton): the half of each row's time that was the daemon's.
export OMPI_MCA_ess_singleton_isolated=1
mkdir -p afolder cases
: > table.txt
# add CMD KEY VALUE PATTERN: one row of the table.
add() { printf '%s\x1f%s\x1f%s\x1f%s\n' "$@" >> table.txt; }
# value CMD KEY VALUE: a malformed value, under the first command that reads
# the option (every command reads a value through the same parser:
# settings_parse.cpp), and under every command for its first option.
declare -A tried
value() {
  [ -n "${tried[$2 $3]:-}" ] && [ -n "${tried[$1]:-}" ] && return
  tried[$2 $3]=1 tried[$1]=1
  add "$1" "$2" "$3" "$2"
}
for cmd in forward train ntk lse limit study bench; do
  "$MFT" "$cmd" --help > help.txt 2>&1 || bad "mft $cmd --help failed"
  tr '\n' ' ' < help.txt | grep -oE -- '--[a-z_]+\.[A-Za-z_0-9]+ arg \(=[^)]*\)' |
    sed -E 's/^--([^ ]+) arg \(=(.*)\)$/\1\t\2/' > options.txt
  [ "$(wc -l < options.txt)" -gt 8 ] && ok || bad "mft $cmd --help lists too few options"
  # Out of the range its help states ([integer >= 1], [number > 0], ...): below
  # it, and an integer beyond any machine integer; each option once.
  /usr/bin/python3 - "$cmd" help.txt ranged.txt >> table.txt <<'PY'
import re, sys
cmd, helpfile, seenfile = sys.argv[1:]
try:
    seen = set(open(seenfile).read().split())
except OSError:
    seen = set()
text = " ".join(open(helpfile).read().split())
parts = re.split(r" --([a-z_]+\.[A-Za-z_0-9]+) arg(?: \(=[^)]*\))?", text)  # no (=...): an empty default
for key, body in zip(parts[1::2], parts[2::2]):
    m = re.search(r"\[(integers|integer|number) (>=|>) (-?[0-9.e+]+)\]", body)
    if not m or key in seen:
        continue
    seen.add(key)
    kind, op, lo = m.groups()
    if kind == "number":
        low = lo if op == ">" else repr(float(lo) - 1)
        values = [low]
    else:
        values = [str(int(lo) - 1), "99999999999999999999"]
    for v in values:
        print(f"{cmd}\x1f{key}\x1f{v}\x1f{key}")
open(seenfile, "w").write(" ".join(sorted(seen)))
PY
  while IFS=$'\t' read -r key def; do
    if [[ "$def" =~ ^-?[0-9]+$ ]]; then
      value "$cmd" "$key" abc
      [ "$cmd" = forward ] && for v in nan ""; do value "$cmd" "$key" "$v"; done
    elif [[ "$def" =~ ^-?[0-9.]+(e[-+]?[0-9]+)?$ ]]; then
      value "$cmd" "$key" abc
      [ "$cmd" = forward ] && for v in nan inf ""; do value "$cmd" "$key" "$v"; done
    elif [ "$def" = true ] || [ "$def" = false ]; then
      value "$cmd" "$key" maybe
    elif [[ "$def" =~ ^[0-9]+( [0-9]+)+$ ]]; then
      value "$cmd" "$key" "1 x"
    fi
  done < options.txt
  add "$cmd" config afolder "config file 'afolder' is not a file"
  add "$cmd" data.file afolder "cannot open 'afolder': not a file"
done
for cmd in forward train ntk lse limit; do
  add "$cmd" output.file afolder "output.file cannot be written: 'afolder' is a folder"
  add "$cmd" output.file no/such/out.h5 "output.file cannot be written: no such folder"
done
for cmd in forward train ntk; do add "$cmd" params.file afolder "cannot open 'afolder': not a file"; done
add train restart afolder "afolder"
touch afile
add train checkpoint.dir afile "checkpoint.dir cannot be written"
add study study.dir afile "study.dir cannot be written"

# Each row in its own folder, as many at a time as there are cores (three
# on two cores overloaded them); a row prints FAIL or nothing.
export MFT
one() {
  local n="$1" cmd key value pattern
  IFS=$'\x1f' read -r cmd key value pattern <<<"$2"
  mkdir -p "cases/$n" && cd "cases/$n" && ln -s ../../afolder afolder && ln -s ../../afile afile
  "$MFT" "$cmd" "--$key" "$value" >out.txt 2>err.txt
  local got=$? lines others
  # Open MPI's runtime (a singleton starts its own) can fail to start on a
  # loaded machine, with its own lines on stderr and no mft line: that is the
  # machine, not the option; such a row runs once more, and says so.
  if [ "$got" -ne 2 ] && ! grep -q '^mft: ' err.txt && grep -qiE 'pmix|orte|opal|orted|mpi_init|mca' err.txt; then
    echo "RETRY: mft $cmd --$key '$value': the MPI runtime did not start: $(head -c 200 err.txt | tr '\n' ' ')"
    "$MFT" "$cmd" "--$key" "$value" >out.txt 2>err.txt
    got=$?
  fi
  lines=$(grep -c '^mft: error: ' err.txt)
  others=$(grep -vc '^mft: error: ' err.txt)
  if [ "$got" -ne 2 ] || [ "$lines" -ne 1 ] || [ "$others" -ne 0 ] || ! grep -q -- "$pattern" err.txt; then
    echo "FAIL: mft $cmd --$key '$value': exit $got, $lines error lines, $others other lines: $(head -c 300 err.txt)"
  fi
  # Nothing but the outputs of this check (and the links) is left: no work started.
  local extra
  extra=$(ls | grep -v '^out.txt$\|^err.txt$\|^afolder$\|^afile$')
  [ -z "$extra" ] || echo "FAIL: mft $cmd --$key '$value' wrote $extra"
}
export -f one
rows=$(wc -l < table.txt)
# In one process: each row's message, its pattern in it (a message is one
# line by construction of the output: a row a line is checked below).
"$problems" < table.txt > early.txt || bad "settings_problems failed"
[ "$(wc -l < early.txt)" -eq "$rows" ] && ok || bad "settings_problems gave $(wc -l < early.txt) rows of $rows"
paste -d $'\x1f' table.txt early.txt | nl -ba -w1 -s$'\t' |
  while IFS=$'\t' read -r n row; do
    IFS=$'\x1f' read -r cmd key value pattern message <<<"$row"
    if [ -z "$message" ]; then
      echo "PROCESS $n" # refused after MPI starts: a process checks it
    elif [[ "$message" != *"$pattern"* ]]; then
      echo "FAIL: mft $cmd --$key '$value': the message does not name '$pattern': $message"
    elif [ $((n % 16)) -eq 1 ] || ! grep -qx "$cmd" seen.txt 2>/dev/null; then
      echo "PROCESS $n" # the exit-code contract on a sample
    fi
    echo "$cmd" >> seen.txt
  done > early_results.txt
grep '^FAIL' early_results.txt
sed -n 's/^PROCESS //p' early_results.txt > processes.txt
early_fails=$(grep -c '^FAIL' early_results.txt)
# As processes: each such row in its own folder, as many at a time as there
# are cores (three on two cores overloaded them); a row prints FAIL or nothing.
awk -F'\t' 'NR == FNR { keep[$1] = 1; next } (FNR in keep) { print FNR "\t" $0 }' processes.txt table.txt |
  while IFS=$'\t' read -r n row; do printf '%s\0%s\0' "$n" "$row"; done |
  xargs -0 -n 2 -P "$(nproc)" bash -c 'one "$1" "$2"' _ > results.txt
fails=$(( $(grep -c '^FAIL' results.txt) + early_fails ))
echo "fuzz: $(wc -l < processes.txt) rows run as processes (refused after MPI starts, or the sample)"
cat results.txt
echo "fuzz: $(grep -c '^RETRY' results.txt) rows run again because the MPI runtime did not start"
passed=$((passed + rows - fails))
failed=$((failed + fails))
echo "fuzz: $rows malformed values over every option of every command"
finish
