#!/bin/sh
# merge-results.sh: the final step of a distributed buzzload run. It waits
# until INSTANCES result files are in RESULT_DIR (or WAIT_SECS passed), then
# runs `buzzload merge` on them. Result files appear by rename only when
# complete, so a file that exists is whole.
#
# Environment:
#   INSTANCES   number of run pods
#   RESULT_DIR  the shared volume directory (default /results)
#   WAIT_SECS   how long to wait for all results (default 7200)
#   BUZZLOAD    the binary (default: buzzload on PATH)
#
# After a timeout it merges what exists: merge then refuses, naming the
# segments that are missing. Exit code: merge's (0, 99 when a threshold
# fails on the merged data, 1 for missing or mismatched results, an
# instance's own code — 105 interrupted, 107 script error ... — when one
# did not complete).
set -eu

n=${INSTANCES:?INSTANCES must be set}
dir=${RESULT_DIR:-/results}
deadline=$(($(date +%s) + ${WAIT_SECS:-7200}))
while :; do
	count=$(find "$dir" -maxdepth 1 -name 'result-*.json' | wc -l)
	[ "$count" -ge "$n" ] && break
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "merge-results.sh: only $count of $n results in $dir after ${WAIT_SECS:-7200}s; merging what exists" >&2
		break
	fi
	sleep 10
done
# shellcheck disable=SC2046 # one argument per file; names have no spaces
exec "${BUZZLOAD:-buzzload}" merge --summary-export "$dir/summary.json" -o "$dir/merged.json" "$@" \
	$(find "$dir" -maxdepth 1 -name 'result-*.json' | sort)
