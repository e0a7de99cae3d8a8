#!/usr/bin/env bash
# What the delivery ledger and the drills cost a run at the scenario
# defaults (issue 49 goal 4: each at most 5 % of the runner's CPU),
# measured with and without them in the same round.
#
#   scripts/overhead-cpu.sh [RUNS] [USERS] [HOLD_SECS]    (defaults: 3 10 60)
#
# A `buzzload relay` runs in its own process on 127.0.0.1, pinned to the
# last CPU, the runner to the others (its CPU is not counted). Each round
# runs the same scenario three ways, in a rotating order: USERS units of
# the default population (100 humans and 10 agents each, every [human] and
# [agent] rate at its default) in USERS × 10 channels,
#   off:    [verify] ledger_sample = 0, visibility_every = 0, no drill;
#   ledger: the defaults (ledger_sample = 1, visibility_every = 100);
#   drill:  off plus a declared drill in the middle of the hold whose
#           command is `true` (the load is unchanged: what is measured is
#           the drills' bookkeeping, the detector and the drill's window,
#           10 s long, in which every operation's result is checked
#           against it).
# The runner's CPU (user + system, the shell's `times`) of each, and per
# round the ratios ledger/off and drill/off, in go test -bench format for
# scripts/benchreport. The last round's ledger run also writes a CPU
# profile: the share of its samples in the ledger's and the drills' code
# (pprof -focus) is printed beside, the same cost seen from inside.
# Needs bin/buzzload (make build) and go (for the profile's shares).
# Loopback only; ~4 minutes a round.
set -euo pipefail

runs=${1:-3}
users=${2:-10}
hold=${3:-60}
bin=${BUZZLOAD_BIN:-bin/buzzload}
work=$(mktemp -d)
name=overhead-cpu
ncpu=$(nproc)
runner_cpus=""
if [ "$ncpu" -ge 2 ]; then
	relay_cpus=$((ncpu - 1)) runner_cpus=0-$((ncpu - 2))
fi
# shellcheck source=scripts/relay-process.sh
source "$(dirname "$0")/relay-process.sh"
ulimit -n "$(ulimit -Hn)"
start_relay 20000

# run VARIANT NAME [FLAGS...]: prints "cpu_seconds deliveries".
run() {
	local variant=$1 name=$2 verify="" drill=""
	shift 2
	case $variant in
	off | drill) verify="ledger_sample = 0
visibility_every = 0" ;;
	esac
	if [ "$variant" = drill ]; then
		drill="[[drill]]
at_secs = $((10 + hold / 2))
kind = \"mark\"
command = [\"true\"]
duration_secs = 10"
	fi
	cat >"$work/$name.toml" <<TOML
run_id = "overhead-$users"
$(relay_target)
[shape]
communities = 1
channels_per_community = $((users * 10))
[[ramp]]
users = $users
ramp_secs = 10
hold_secs = $hold
[verify]
$verify
$drill
TOML
	sed "s#\./local-smoke\.toml#./$name.toml#" scenarios/local-smoke.js >"$work/$name.js"
	local cpu
	cpu=$(timed_run "$name" env BUZZLOAD_OPERATOR_KEY="$key" ${runner_cpus:+taskset -c "$runner_cpus"} "$bin" run -q "$@" -e BUZZ_REPORT="$work/$name.json" "$work/$name.js")
	[ -s "$work/$name.json" ] || { echo "overhead-cpu: $name wrote no report" >&2; tail -20 "$work/$name.log" >&2; return 1; }
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
q = sum(s["ops"].get("deliver", {}).get("count", 0) for s in d["steps"])
if sys.argv[3] == "drill" and not any(x.get("declared") for x in d.get("drills") or []):
    sys.exit("overhead-cpu: the drill run performed no drill")
print(sys.argv[2], q)' "$work/$name.json" "$cpu" "$variant"
}

# share PROFILE REGEX: the percentage of the profile's samples under REGEX.
share() {
	go tool pprof -top -focus "$2" "$bin" "$1" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for [^,]*, \([0-9.]*\)% of.*/\1/p' | head -1
}

echo "pkg: scripts/overhead-cpu.sh"
echo "overhead-cpu: $users units of the default population ($((users * 100)) humans, $((users * 10)) agents), hold ${hold}s, $runs rounds, relay at $addr, runner CPUs ${runner_cpus:-all}, relay CPUs ${relay_cpus:-all}"
run off warm >/dev/null
variants=(off ledger drill)
for i in $(seq "$runs"); do
	declare -A cpu=() del=()
	for j in 0 1 2; do
		v=${variants[$(((i + j) % 3))]}
		flags=()
		if [ "$i" = "$runs" ] && [ "$v" = ledger ]; then
			flags=(--cpuprofile "$work/ledger.pprof")
		fi
		read -r c d <<<"$(run "$v" "$v-$i" "${flags[@]}")"
		cpu[$v]=$c del[$v]=$d
	done
	awk -v off="${cpu[off]}" -v ledger="${cpu[ledger]}" -v drill="${cpu[drill]}" -v d="${del[off]}" 'BEGIN {
		printf "BenchmarkOverheadRealRun/cpu 1 %.2f cpu-s-off %.2f cpu-s-ledger %.2f cpu-s-drill %.3f ledger/off %.3f drill/off %d deliveries\n",
			off, ledger, drill, ledger / off, drill / off, d
	}'
done
if [ -s "$work/ledger.pprof" ]; then
	echo "overhead-cpu: in the last ledger run's profile: ledger $(share "$work/ledger.pprof" 'modules/ledger|audit.\(\*Visibility\)|extension.\(\*ledgerRun\)')% of the samples, drills and detector $(share "$work/ledger.pprof" 'modules/drill|extension.\(\*drillRun\)')%" >&2
fi
