#!/bin/sh
# CI gate: run the smoke scenario against the embedded relay and fail the job
# when any step breaks the scenario's [abort] limits (exit 99), the seed fails
# (107) or anything else goes wrong. The JSON report is kept as an artifact;
# its abort_reason names the step and the operation.
#
#   examples/ci-smoke.sh [scenario.js] [report.json]
set -eu
script=${1:-scenarios/local-smoke.js}
report=${2:-buzz-report.json}
make build
status=0
./bin/buzzload run -e BUZZ_REPORT="$report" "$script" || status=$?
if [ "$status" -ne 0 ]; then
  echo "buzzload run failed with exit $status; see $report (abort_reason)" >&2
fi
exit "$status"
