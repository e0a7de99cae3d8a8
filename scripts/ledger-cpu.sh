#!/usr/bin/env bash
# What the delivery ledger costs a real run (issue 40: at most 5 % CPU at
# the scenario defaults), measured with and without it in the same round.
#
#   scripts/ledger-cpu.sh [RUNS] [HUMANS] [HOLD_SECS]    (defaults: 3 300 30)
#
# A `buzzload relay` runs in its own process on 127.0.0.1 (its CPU is not
# counted). Each round runs the same scenario twice, in alternating order:
# HUMANS humans in 20 channels, 3 each, each publishing once a second (each
# message reaches ~15 % of them), the scenario defaults otherwise, once
# with [verify] ledger_sample = 1 (and the visibility probe's default) and
# once with the ledger off. The runner's CPU (user + system, from the
# shell's `times`) per delivered event of each, and the ratio on/off of
# the round, in go test -bench format for scripts/benchreport.
# Needs bin/buzzload (make build). Loopback only; ~2 minutes a round.
set -euo pipefail

runs=${1:-3}
humans=${2:-300}
hold=${3:-30}
bin=${BUZZLOAD_BIN:-bin/buzzload}
work=$(mktemp -d)
name=ledger-cpu
# shellcheck source=scripts/relay-process.sh
source "$(dirname "$0")/relay-process.sh"
start_relay 20000

# run SAMPLE NAME: prints "cpu_seconds deliveries expected".
run() {
	local sample=$1 name=$2
	cat >"$work/$name.toml" <<TOML
run_id = "ledgercpu-$humans"
$(relay_target)
[shape]
communities = 1
channels_per_community = 20
history_messages_per_channel = 2
thread_roots_per_channel = 0
thread_depth = 0
[population]
humans = $humans
agents = 0
channels_per_member = 3
connect_rate_per_sec = 500
[human]
messages_per_hour = 3600
[[ramp]]
users = 1
ramp_secs = 5
hold_secs = $hold
[verify]
ledger_sample = $sample
TOML
	sed "s#\./local-smoke\.toml#./$name.toml#" scenarios/local-smoke.js >"$work/$name.js"
	local cpu
	cpu=$(timed_run "$name" env BUZZLOAD_OPERATOR_KEY="$key" "$bin" run -q -e BUZZ_REPORT="$work/$name.json" "$work/$name.js")
	[ -s "$work/$name.json" ] || { echo "ledger-cpu: $name wrote no report" >&2; tail -20 "$work/$name.log" >&2; return 1; }
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
q = sum(s["ops"].get("deliver", {}).get("count", 0) for s in d["steps"])
e = (d.get("ledger") or {}).get("expected", 0)
print(sys.argv[2], q, e)' "$work/$name.json" "$cpu"
}

echo "pkg: scripts/ledger-cpu.sh"
echo "ledger-cpu: $humans humans publishing 1/s for ${hold}s, $runs rounds, relay at $addr"
run 0 warm >/dev/null
for i in $(seq "$runs"); do
	if [ $((i % 2)) = 1 ]; then
		read -r con don eon <<<"$(run 1 on-$i)"
		read -r coff doff _ <<<"$(run 0 off-$i)"
	else
		read -r coff doff _ <<<"$(run 0 off-$i)"
		read -r con don eon <<<"$(run 1 on-$i)"
	fi
	awk -v con="$con" -v don="$don" -v eon="$eon" -v coff="$coff" -v doff="$doff" 'BEGIN {
		a = con * 1e6 / don; b = coff * 1e6 / doff
		printf "BenchmarkLedgerRealRun/cpu 1 %.2f us/delivery-ledger %.2f us/delivery-off %.3f on/off %d deliveries %d expected-pairs\n", a, b, a / b, don, eon
	}'
done
