#!/usr/bin/env bash
# The cost of `buzzload plan` at internet scale (issue 17: 100,000 desktop
# people for one simulated hour in under a minute on 2 cores, memory linear
# and small): wall time, CPU and peak RSS of
#
#   bin/buzzload plan scenarios/plan-internet.toml --users U --duration 1h --mode M
#
# at SMALL and LARGE units of 1,000 people, RUNS times each. The memory per
# simulated client is the slope between the two sizes, which cancels what
# the process holds regardless of clients; the wall time of the large run
# is beside the time it simulates (the speed-up is their ratio).
#
#   scripts/plan-scale.sh [RUNS] [SMALL] [LARGE] [MODE]   (defaults: 3 10 100 current)
#
# Output is in go test -bench format, so scripts/benchreport reads it. No
# network: the plan opens no socket.
set -euo pipefail

runs=${1:-3}
small=${2:-10}
large=${3:-100}
mode=${4:-current}
bin=${BUZZLOAD_BIN:-bin/buzzload}

# measure U: prints "wall_s cpu_s peak_rss_kb" of one plan.
measure() {
	local u=$1 start end pid peak=0 s
	start=$(date +%s.%N)
	"$bin" plan scenarios/plan-internet.toml --users "$u" --duration 1h --mode "$mode" --json >/dev/null &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		s=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
		[ -n "$s" ] && peak=$s
		cpu=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo "${cpu:-0}")
		sleep 0.2
	done
	wait "$pid"
	end=$(date +%s.%N)
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f", b-a}') $(awk -v t="$cpu" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", t/hz}') $peak"
}

echo "pkg: scripts/plan-scale.sh"
echo "plan-scale: plan-internet.toml, $small and $large thousand people, mode $mode, 1h simulated, $runs runs"
for i in $(seq "$runs"); do
	read -r ws cs rs <<<"$(measure "$small")"
	read -r wl cl rl <<<"$(measure "$large")"
	echo "BenchmarkPlan/${large}k-people-1h 1 $wl wall-s $cl cpu-s $(awk -v w="$wl" 'BEGIN{printf "%.0f", 3600/w}') speedup-x $(awk -v k="$rl" 'BEGIN{printf "%.0f", k/1024}') rss-MB"
	echo "BenchmarkPlan/${small}k-people-1h 1 $ws wall-s $cs cpu-s $(awk -v k="$rs" 'BEGIN{printf "%.0f", k/1024}') rss-MB"
	echo "BenchmarkPlan/per-client 1 $(awk -v a="$rs" -v b="$rl" -v s="$small" -v l="$large" 'BEGIN{printf "%.0f", (b-a)*1024/((l-s)*1000)}') rss-B/client"
done
