#!/usr/bin/env bash
# Issue 49 goal 3: buzzload beside real k6 in the same rounds, with the
# measurements the repo already has, each run once per binary per round
# (the scripts take BUZZLOAD_BIN, and k6 runs the same plain scripts):
#   - idle VU: scripts/idle-vu.sh's RSS slope between SMALL and LARGE VUs;
#   - empty constant-arrival-rate at RATE iterations/s:
#     scripts/car-empty.sh's share dropped (CAR_VUS pre-allocated, 1000 here);
#   - 4,000,000 tagged samples (scripts/js/samples-4m.js, no output): the
#     process CPU (user + system).
# Each round prints every binary's figures, then the ratio buzzload ÷ k6 of
# that round.
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
here=$(dirname "$0")
bin=${BUZZLOAD_BIN:-bin/buzzload}
k6=${K6_BIN:?K6_BIN: the path of a k6 v2.2.0 binary}
export K6_NO_USAGE_REPORT=true

# samples_cpu BIN: user + system seconds of the 4M-sample run.
samples_cpu() {
	TIMEFORMAT='%U %S'
	{ time "$1" run -q --summary-mode=disabled "$here/js/samples-4m.js" >/dev/null 2>&1; } 2>&1 | awk '{printf "%.2f", $1 + $2}'
}

names=(buzzload k6)
bins=("$bin" "$k6")
if [ -n "${K6_BIN_V1:-}" ]; then names+=(k6v1); bins+=("$K6_BIN_V1"); fi

echo "pkg: scripts/k6-side-by-side.sh"
for i in $(seq "$runs"); do
	declare -A per_vu=() drop=() cpu=()
	for j in "${!bins[@]}"; do
		b=${bins[$j]} n=${names[$j]}
		per_vu[$n]=$(BUZZLOAD_BIN=$b "$here/idle-vu.sh" 1 "$small" "$large" 20 | awk '/^BenchmarkIdleVU\/per-vu / {print $3}')
		drop[$n]=$(BUZZLOAD_BIN=$b CAR_VUS=1000 "$here/car-empty.sh" 1 "$rate" | awk '/^BenchmarkCAREmpty\// {print $5}')
		cpu[$n]=$(samples_cpu "$b")
		echo "BenchmarkSideBySide/$n 1 ${per_vu[$n]} idle-B/VU ${drop[$n]} %car-dropped ${cpu[$n]} samples-cpu-s"
	done
	for n in "${names[@]:1}"; do
		awk -v a="${per_vu[buzzload]}" -v b="${per_vu[$n]}" -v c="${cpu[buzzload]}" -v d="${cpu[$n]}" -v n="$n" \
			'BEGIN {printf "BenchmarkSideBySide/ratio-to-%s 1 %.3f idle-ratio %.3f samples-cpu-ratio\n", n, a / b, c / d}'
	done
	echo "k6-side-by-side: round $i: buzzload drops ${drop[buzzload]} % at $rate/s, k6 ${drop[k6]} %" >&2
done
