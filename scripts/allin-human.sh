#!/usr/bin/env bash
# All-in memory of a connected, subscribed human client (architecture
# budget: ≤ 100 KB): the VU, its connection and the client state, with the
# runner's metrics, measured as the RSS of a real `buzzload run` process.
#
#   scripts/allin-human.sh [RUNS] [SMALL] [LARGE]    (defaults: 5 100 1000)
#
# A `buzzload relay` runs in its own process on 127.0.0.1 (so its memory is
# not counted); the runner seeds it, connects SMALL or LARGE idle humans
# (each subscribed to 3 channels with history read, no messages, presence
# hourly) and holds them. The runner's RSS is sampled every 0.5 s once
# every human is connected; the median sample is the run's figure. The
# figure per human is the slope (RSS(LARGE) − RSS(SMALL)) / (LARGE − SMALL),
# which cancels what the process holds regardless of the clients. The live
# heap after the hold's last GC (GODEBUG=gctrace=1) is reported the same
# way: the gap between the two is the GC's headroom (GOGC) and runtime
# overhead, not client state.
# Output is in go test -bench format, so scripts/benchreport reads it.
# Needs bin/buzzload (make build). Loopback only; about 25 s per run.
set -euo pipefail

runs=${1:-5}
small=${2:-100}
large=${3:-1000}
bin=${BUZZLOAD_BIN:-bin/buzzload}
ramp=4
hold=10
work=$(mktemp -d)
name=allin-human
# shellcheck source=scripts/relay-process.sh
source "$(dirname "$0")/relay-process.sh"

start_relay 20000

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }

# measure N RUN_ID: prints the median RSS (KB) of one run with N humans.
measure() {
	local n=$1 run=$2
	cat >"$work/$run.toml" <<TOML
run_id = "$run"
$(relay_target)
[shape]
communities = 1
channels_per_community = 20
history_messages_per_channel = 5
thread_roots_per_channel = 1
thread_depth = 2
[population]
humans = $n
agents = 0
channels_per_member = 3
connect_rate_per_sec = 500
[human]
history_limit = 5
presence_interval_secs = 3600
typing_per_hour = 0
messages_per_hour = 0
reactions_per_hour = 0
[[ramp]]
users = 1
ramp_secs = $ramp
hold_secs = $hold
TOML
	sed "s#\./local-smoke\.toml#./$run.toml#" scenarios/local-smoke.js >"$work/$run.js"
	GODEBUG=gctrace=1 BUZZLOAD_OPERATOR_KEY=$key "$bin" run -e BUZZ_REPORT="$work/$run.json" "$work/$run.js" >"$work/$run.log" 2>&1 &
	local pid=$! start=$SECONDS samples=()
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((SECONDS - start)) -ge $((ramp + 3)) ] && [ $((SECONDS - start)) -le $((ramp + hold)) ]; then
			local s
			s=$(rss_kb "$pid")
			[ -n "$s" ] && samples+=("$s")
		fi
		sleep 0.5
	done
	if ! wait "$pid"; then
		echo "allin-human: the run with $n humans failed:" >&2
		tail -30 "$work/$run.log" >&2
		return 1
	fi
	if [ ${#samples[@]} -eq 0 ]; then
		echo "allin-human: no RSS sample for $n humans" >&2
		return 1
	fi
	local rss live stacks
	rss=$(printf '%s\n' "${samples[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
	# The live heap after the last GC of the hold (gctrace: "A->B->C MB")
	# and the goroutine stacks then ("S MB stacks").
	read -r live stacks < <(awk -v end=$((ramp + hold)) '/^gc [0-9]+ @/ {
		t = substr($3, 2) + 0
		if (t <= end && match($0, /[0-9]+->[0-9]+->[0-9]+ MB/)) {
			split(substr($0, RSTART, RLENGTH), p, "->"); c = p[3] + 0
			if (match($0, /[0-9]+ MB stacks/)) s = substr($0, RSTART, RLENGTH) + 0
		}
	} END {print c + 0, s + 0}' "$work/$run.log")
	echo "$rss $live $stacks"
}

echo "pkg: scripts/allin-human.sh"
echo "allin-human: $small and $large idle humans, $runs runs, relay at $addr"
for i in $(seq "$runs"); do
	read -r a la sa <<<"$(measure "$small" "allin-s$i")"
	read -r b lb sb <<<"$(measure "$large" "allin-l$i")"
	echo "BenchmarkAllInHuman/rss-${small}humans 1 $(awk -v k="$a" 'BEGIN{printf "%.1f", k/1024}') rss-MB"
	echo "BenchmarkAllInHuman/rss-${large}humans 1 $(awk -v k="$b" 'BEGIN{printf "%.1f", k/1024}') rss-MB"
	echo "BenchmarkAllInHuman/per-human 1 $(awk -v a="$a" -v b="$b" -v s="$small" -v l="$large" 'BEGIN{printf "%.0f", (b-a)*1024/(l-s)}') rss-B/human $(awk -v a="$la" -v b="$lb" -v s="$small" -v l="$large" 'BEGIN{printf "%.0f", (b-a)*1048576/(l-s)}') live-heap-B/human $(awk -v a="$sa" -v b="$sb" -v s="$small" -v l="$large" 'BEGIN{printf "%.0f", (b-a)*1048576/(l-s)}') stack-B/human"
done
