#!/usr/bin/env bash
# Issue 49 goal 3: buzzload beside real k6 in the same rounds, on three
# plain k6 scripts (no Buzz module, so k6 runs them too):
#   - idle VU: RSS per VU of a k6/http + check script sleeping 1 s, the
#     slope between SMALL and LARGE VUs (median RSS over the run's second
#     half), as scripts/idle-vu.sh measures it;
#   - empty constant-arrival-rate at RATE iterations/s for 5 s
#     (CAR_VUS pre-allocated, default 1000): the share dropped;
#   - 4,000,000 tagged samples (scripts/cloud-cpu.sh's script, no output):
#     the process CPU (user + system).
# Each round runs every measurement for buzzload then for each k6 and prints
# the ratio buzzload ÷ k6 of that round.
#
#   K6_BIN=/path/k6-v2.2.0 [K6_BIN_V1=/path/k6-v1.8.1] scripts/k6-side-by-side.sh [RUNS] [SMALL] [LARGE] [RATE]
#   (defaults: 3 1000 4000 100000)
#
# Output is in go test -bench format for scripts/benchreport. Needs
# bin/buzzload and k6 binaries built outside the repo (docs/k6-compat.md).
# Sends no traffic.
set -euo pipefail

runs=${1:-3}
small=${2:-1000}
large=${3:-4000}
rate=${4:-100000}
bin=${BUZZLOAD_BIN:-bin/buzzload}
k6=${K6_BIN:?K6_BIN: the path of a k6 v2.2.0 binary}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export K6_NO_USAGE_REPORT=true

cat >"$work/idle.js" <<'JS'
import http from "k6/http";
import { check, sleep } from "k6";
export default function () {
  check(http, { "module loaded": (h) => typeof h.get === "function" });
  sleep(1);
}
JS
cat >"$work/car.js" <<JS
export const options = { scenarios: { car: { executor: 'constant-arrival-rate', rate: $rate, timeUnit: '1s',
  duration: '5s', preAllocatedVUs: ${CAR_VUS:-1000}, maxVUs: ${CAR_VUS:-1000} } } };
export default function () {}
export function handleSummary(d) {
  const it = d.metrics.iterations ? d.metrics.iterations.values.count : 0;
  const dr = d.metrics.dropped_iterations ? d.metrics.dropped_iterations.values.count : 0;
  return { stdout: 'car ' + it + ' ' + dr + '\n' };
}
JS
cat >"$work/samples.js" <<'JS'
import { Trend, Counter } from 'k6/metrics';
const t = new Trend('bench_trend');
const c = new Counter('bench_count');
const tags = [...Array(40)].map((_, i) => ({ op: 'op' + i, community: 'c' + (i % 2) }));
export const options = { scenarios: { s: { executor: 'shared-iterations', vus: 4, iterations: 20000, maxDuration: '10m' } } };
export default function () {
  for (let i = 0; i < 100; i++) {
    t.add(i, tags[i % 40]);
    c.add(1, tags[i % 40]);
  }
}
JS

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }

# idle_rss BIN VUS: median RSS (KB) over the second half of a 20 s run.
idle_rss() {
	local samples=() start=$SECONDS
	"$1" run -q --vus "$2" --duration 20s "$work/idle.js" >/dev/null 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((SECONDS - start)) -ge 10 ] && [ $((SECONDS - start)) -lt 20 ]; then
			s=$(rss_kb "$pid")
			[ -n "$s" ] && samples+=("$s")
		fi
		sleep 0.5
	done
	wait "$pid" || true
	printf '%s\n' "${samples[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] + 0}'
}

# car_drop BIN: the percentage of iterations dropped.
car_drop() {
	"$1" run -q "$work/car.js" 2>/dev/null | awk '/^car / {t = $2 + $3; printf "%.3f", t ? 100 * $3 / t : 100}'
}

# samples_cpu BIN: user + system seconds of the 4M-sample run.
samples_cpu() {
	local t0 t1
	TIMEFORMAT='%U %S'
	{ time "$1" run -q --summary-mode=disabled "$work/samples.js" >/dev/null 2>&1; } 2>"$work/time"
	awk '{printf "%.2f", $1 + $2}' "$work/time"
}

names=(buzzload k6)
bins=("$bin" "$k6")
if [ -n "${K6_BIN_V1:-}" ]; then names+=(k6v1); bins+=("$K6_BIN_V1"); fi

echo "pkg: scripts/k6-side-by-side.sh"
for i in $(seq "$runs"); do
	declare -A per_vu=() drop=() cpu=()
	for j in "${!bins[@]}"; do
		b=${bins[$j]} n=${names[$j]}
		r1=$(idle_rss "$b" "$small") r2=$(idle_rss "$b" "$large")
		per_vu[$n]=$(awk -v a="$r1" -v b="$r2" -v s="$small" -v l="$large" 'BEGIN {printf "%.0f", (b - a) * 1024 / (l - s)}')
		drop[$n]=$(car_drop "$b")
		cpu[$n]=$(samples_cpu "$b")
		echo "BenchmarkSideBySide/$n 1 ${per_vu[$n]} idle-B/VU ${drop[$n]} %car-dropped ${cpu[$n]} samples-cpu-s"
	done
	for n in "${names[@]:1}"; do
		awk -v a="${per_vu[buzzload]}" -v b="${per_vu[$n]}" -v c="${cpu[buzzload]}" -v d="${cpu[$n]}" -v n="$n" \
			'BEGIN {printf "BenchmarkSideBySide/ratio-to-%s 1 %.3f idle-ratio %.3f samples-cpu-ratio\n", n, a / b, c / d}'
	done
	echo "k6-side-by-side: round $i: buzzload drops ${drop[buzzload]} % at $rate/s, k6 ${drop[k6]} %" >&2
done
