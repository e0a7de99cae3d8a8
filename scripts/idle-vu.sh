#!/usr/bin/env bash
# RSS per idle VU of a small script, measured in the whole `buzzload run`
# process (issue 16 target: ≤ 60 KB between 1,000 and 4,000 VUs).
#
#   scripts/idle-vu.sh [RUNS] [SMALL] [LARGE] [SECS]    (defaults: 5 1000 4000 20)
#
# The script imports k6/http and k6's check, and each iteration sleeps 1 s
# (an idle VU between requests). SMALL, then LARGE VUs run for SECS; the
# process's RSS is sampled every 0.5 s over the second half of the run and
# the median sample is the run's figure. The figure per VU is the slope
# (RSS(LARGE) − RSS(SMALL)) / (LARGE − SMALL), which cancels what the process
# holds regardless of VUs. Output is in go test -bench format.
# Needs bin/buzzload (make build). No network.
set -euo pipefail

runs=${1:-5}
small=${2:-1000}
large=${3:-4000}
secs=${4:-20}
bin=${BUZZLOAD_BIN:-bin/buzzload}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/idle.js" <<'JS'
import http from "k6/http";
import { check, sleep } from "k6";

export default function () {
  check(http, { "module loaded": (h) => typeof h.get === "function" });
  sleep(1);
}
JS

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }

measure() {
	local vus=$1 samples=() start=$SECONDS
	"$bin" run -q --vus "$vus" --duration "${secs}s" "$work/idle.js" >"$work/run.log" 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((SECONDS - start)) -ge $((secs / 2)) ] && [ $((SECONDS - start)) -lt "$secs" ]; then
			local s
			s=$(rss_kb "$pid")
			[ -n "$s" ] && samples+=("$s")
		fi
		sleep 0.5
	done
	wait "$pid" || { echo "idle-vu: the run with $vus VUs failed:" >&2; tail -20 "$work/run.log" >&2; return 1; }
	printf '%s\n' "${samples[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

echo "pkg: scripts/idle-vu.sh"
echo "idle-vu: $small and $large VUs, ${secs}s each, $runs runs"
for _ in $(seq "$runs"); do
	a=$(measure "$small")
	b=$(measure "$large")
	echo "BenchmarkIdleVU/rss-${small}vus 1 $(awk -v k="$a" 'BEGIN{printf "%.1f", k/1024}') rss-MB"
	echo "BenchmarkIdleVU/rss-${large}vus 1 $(awk -v k="$b" 'BEGIN{printf "%.1f", k/1024}') rss-MB"
	echo "BenchmarkIdleVU/per-vu 1 $(awk -v a="$a" -v b="$b" -v s="$small" -v l="$large" 'BEGIN{printf "%.0f", (b-a)*1024/(l-s)}') rss-B/vu"
done
