# Helpers for the command-line tests: run mft, check exit code and message.
# Usage: source lib.sh MFT_BINARY
set -u
MFT="$1"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
passed=0
failed=0
skipped=0

ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
# A check that cannot run here, said with its reason and counted in the last line.
skip() { echo "SKIP: $*"; skipped=$((skipped + 1)); }

# expect CODE PATTERN -- command...: exit code CODE, and exactly one line
# "mft: error: ..." on stderr matching PATTERN (skipped when CODE is 0).
expect() {
  local code="$1" pattern="$2"
  shift 3
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" -ne "$code" ]; then bad "'$*' exited $got, expected $code"; cat err.txt; return; fi
  if [ "$code" -ne 0 ]; then
    local lines
    lines=$(grep -c '^mft: error: ' err.txt)
    if [ "$lines" -ne 1 ]; then bad "'$*' printed $lines error lines"; cat err.txt; return; fi
    if ! grep '^mft: error: ' err.txt | grep -qE "$pattern"; then
      bad "'$*': message does not match /$pattern/: $(grep '^mft: error' err.txt)"; return
    fi
  fi
  ok
}

finish() {
  if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
  [ "$failed" -eq 0 ]
}
