#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 60s) and
# records, per target, the executions and their rate (out/fuzz.txt). A
# crasher stops nothing else: the failing targets are listed at the end and
# the exit is non-zero; the failing input is kept under the package's
# testdata/fuzz/ as Go does. Deep run: FUZZTIME=10m make fuzz.
set -u
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
PARALLEL=${FUZZ_PARALLEL:-2}
mkdir -p out
report=out/fuzz.txt
: > "$report"
echo "# make fuzz $(date -u +%FT%TZ) FUZZTIME=$FUZZTIME parallel=$PARALLEL $(git rev-parse --short HEAD 2>/dev/null)" | tee -a "$report"
failed=()
while IFS=: read -r file name; do
  dir=$(dirname "$file"); pkg=./${dir#./}
  log=$(mktemp)
  if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel "$PARALLEL" "$pkg" >"$log" 2>&1; then
    status=ok
  else
    status=FAIL
    failed+=("$pkg $name")
  fi
  last=$(grep -E 'execs: [0-9]+' "$log" | tail -1 | sed -E 's/.*(elapsed: [^,]+), (execs: [0-9]+ \([0-9]+\/sec\)).*/\1 \2/')
  printf '%-5s %-45s %-28s %s\n' "$status" "$pkg" "$name" "$last" | tee -a "$report"
  if [ "$status" = FAIL ]; then sed -n '1,40p' "$log" | tee -a "$report"; fi
  rm -f "$log"
done < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . | grep -v '^./node_modules' | sed -E 's/func //' | sort)
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}" | tee -a "$report"
  exit 1
fi
echo "every target ran $FUZZTIME without a failure" | tee -a "$report"
