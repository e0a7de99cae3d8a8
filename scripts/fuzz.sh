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
# Go minimises each new interesting input for up to 60 s by default, and
# those executions are not counted: with large seeds (whole scenario files,
# tars) a short run spent nearly all its time there and reported 1 exec/s.
# A bounded count keeps the time on fuzzing; a crasher is still minimised.
MINIMIZE=${FUZZMINIMIZE:-200x}
mkdir -p out
report=out/fuzz.txt
: > "$report"
echo "# make fuzz $(date -u +%FT%TZ) FUZZTIME=$FUZZTIME minimize=$MINIMIZE parallel=$PARALLEL $(git rev-parse --short HEAD 2>/dev/null)" | tee -a "$report"
failed=()
while IFS=: read -r file name; do
  dir=$(dirname "$file"); pkg=./${dir#./}
  log=$(mktemp)
  if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$MINIMIZE" -parallel "$PARALLEL" "$pkg" >"$log" 2>&1; then
    status=ok
  else
    status=FAIL
    failed+=("$pkg $name")
  fi
  # The run's average rate (Go's last line shows the rate of its last
  # interval, often 0/sec at the very end).
  last=$(grep -E 'elapsed: .*execs: [0-9]+' "$log" | tail -1 | awk '{
    e=$3; sub(/,$/, "", e); s=0
    if (match(e, /[0-9]+h/)) s+=3600*substr(e, RSTART, RLENGTH-1)
    if (match(e, /[0-9]+m/)) s+=60*substr(e, RSTART, RLENGTH-1)
    if (match(e, /[0-9.]+s/)) s+=substr(e, RSTART, RLENGTH-1)
    n=$5; printf "elapsed: %s execs: %d (%d/sec average)", e, n, (s > 0 ? n/s : 0) }')
  printf '%-5s %-45s %-28s %s\n' "$status" "$pkg" "$name" "$last" | tee -a "$report"
  if [ "$status" = FAIL ]; then sed -n '1,40p' "$log" | tee -a "$report"; fi
  rm -f "$log"
done < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . | grep -v '^./node_modules' | sed -E 's/func //' | sort)
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}" | tee -a "$report"
  exit 1
fi
echo "every target ran $FUZZTIME without a failure" | tee -a "$report"
