#!/bin/sh
# run-segment.sh: one instance of a distributed buzzload run, for a
# Kubernetes Indexed Job. It turns the pod's index into the execution
# segment k6-operator would give runner index+1 of INSTANCES:
#
#   --execution-segment          i/N:(i+1)/N   (first point 0, last point 1)
#   --execution-segment-sequence 0,1/N,2/N,...,1  (the same on every pod)
#   --tag instance_id=i+1
#   --start-at $START_AT         (all pods start setup and scenarios together)
#   --result $RESULT_DIR/result-i.json
#
# and then any further arguments (flags, then the script path).
#
# Environment:
#   JOB_COMPLETION_INDEX  0-based pod index (Kubernetes sets it in Indexed Jobs)
#   INSTANCES             number of pods: the Job's completions (= parallelism)
#   START_AT              shared start time, RFC 3339 or Unix seconds (optional)
#   RESULT_DIR            shared volume for the result files (default /results)
#   BUZZLOAD              the binary (default: buzzload on PATH)
#   DRY_RUN=1             print the command instead of running it (tests)
#
# Exit code: buzzload's, except 99 (thresholds failed on this pod's share)
# becomes 0: each pod sees only its share of the load, so the verdict is
# the merge's, and a "failed" pod would otherwise make the Job retry it.
set -eu

die() {
	echo "run-segment.sh: $*" >&2
	exit 2
}

is_count() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
	return 0
}

i=${JOB_COMPLETION_INDEX:-}
n=${INSTANCES:-}
is_count "$i" || die "JOB_COMPLETION_INDEX must be a non-negative integer, got '$i'"
is_count "$n" || die "INSTANCES must be a positive integer, got '$n'"
[ "$n" -ge 1 ] || die "INSTANCES must be at least 1, got $n"
[ "$i" -lt "$n" ] || die "JOB_COMPLETION_INDEX $i is not below INSTANCES $n"

# point k: k/N, written 0 and 1 at the ends as k6-operator does.
point() {
	if [ "$1" -eq 0 ]; then
		echo 0
	elif [ "$1" -eq "$n" ]; then
		echo 1
	else
		echo "$1/$n"
	fi
}

seq=$(point 0)
k=1
while [ "$k" -le "$n" ]; do
	seq="$seq,$(point "$k")"
	k=$((k + 1))
done
segment="$(point "$i"):$(point $((i + 1)))"
dir=${RESULT_DIR:-/results}

set -- run --execution-segment "$segment" --execution-segment-sequence "$seq" \
	--tag "instance_id=$((i + 1))" --result "$dir/result-$i.json" \
	${START_AT:+--start-at "$START_AT"} "$@"

if [ "${DRY_RUN:-}" = 1 ]; then
	printf '%s\n' "$@"
	exit 0
fi

code=0
"${BUZZLOAD:-buzzload}" "$@" || code=$?
if [ "$code" -eq 99 ]; then
	echo "run-segment.sh: thresholds failed on this instance's share; the merge judges the whole run" >&2
	code=0
fi
exit "$code"
