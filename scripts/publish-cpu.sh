#!/usr/bin/env bash
# CPU per published and per delivered event in real runs (issue 16 targets:
# publish ≤ 1.5 × a signature, delivery ≤ 8 µs), beside a signature
# measured in the same round.
#
#   scripts/publish-cpu.sh [RUNS] [HUMANS] [HOLD_SECS]    (defaults: 5 500 30)
#
# A `buzzload relay` runs in its own process on 127.0.0.1 (its CPU is not
# counted). Each round runs `buzzload run` four times with HUMANS connected,
# subscribed humans, the fixture seeded beforehand (a warm-up run per
# shape): for two shapes, an idle run (no messages) and an active one (each
# human publishes once a second, kind 9 with a send-time tag):
#   wide:   20 channels, 3 per human (each message reaches ~15 % of humans)
#   narrow: HUMANS channels, 1 per human (each message reaches ~its sender)
# The runner's CPU (user + system, from the shell's `times`) of the active
# run minus its idle run is what the publishes P and deliveries D cost:
#   ΔCPU = P·x + D·y for each shape; the two shapes give x (per publish) and
# y (per delivery). P and D are the run's own counts (its report).
# Then BenchmarkSignEventCPU (modules/nostr) runs, so each round's publish
# cost stands beside a signature measured minutes apart, not days; and the
# active narrow run writes a CPU profile, whose nostr.(*Keys).Sign samples
# over its signatures (publishes + AUTHs) give the signature's CPU inside
# the run (sign-inrun-us): the same code with the relay busy on the other
# core and colder caches. publish/sign-inrun is the ratio to that one.
# Output is in go test -bench format, so scripts/benchreport reads it.
# Needs bin/buzzload (make build) and go. Loopback only; about 3 minutes a
# round at the defaults.
set -euo pipefail

runs=${1:-5}
humans=${2:-500}
hold=${3:-30}
bin=${BUZZLOAD_BIN:-bin/buzzload}
go=${GO:-go}
ramp=5
work=$(mktemp -d)
name=publish-cpu
# shellcheck source=scripts/relay-process.sh
source "$(dirname "$0")/relay-process.sh"

"$go" test -c -o "$work/nostr.test" ./modules/nostr/
"$go" test -c -o "$work/netpoll.test" ./modules/relayclient/netpoll/

start_relay 20000

# relay_cpu: the relay process's CPU so far (user + system), in seconds.
relay_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$relay_pid/stat"; }

# run SHAPE RATE NAME: one `buzzload run`; prints "cpu_seconds publishes
# deliveries auths subscribes relay_cpu_seconds" (the relay's CPU over the
# same run, for issue 49 goal 2: the runner's CPU per delivery beside the
# relay's, from one run).
run() {
	local shape=$1 rate=$2 name=$3 channels per
	case $shape in
	wide) channels=20 per=3 ;;
	narrow) channels=$humans per=1 ;;
	esac
	cat >"$work/$name.toml" <<TOML
run_id = "pubcpu-$shape-$humans"
$(relay_target)
[shape]
communities = 1
channels_per_community = $channels
history_messages_per_channel = 2
thread_roots_per_channel = 0
thread_depth = 0
[population]
humans = $humans
agents = 0
channels_per_member = $per
connect_rate_per_sec = 500
[human]
history_limit = 2
presence_interval_secs = 3600
typing_per_hour = 0
messages_per_hour = $rate
reactions_per_hour = 0
[[ramp]]
users = 1
ramp_secs = $ramp
hold_secs = $hold
TOML
	sed "s#\./local-smoke\.toml#./$name.toml#" scenarios/local-smoke.js >"$work/$name.js"
	# A missing report ends the script (timed_run: relay-process.sh).
	local cpu r0 r1
	r0=$(relay_cpu)
	cpu=$(timed_run "$name" env BUZZLOAD_OPERATOR_KEY="$key" "$bin" run -q ${PROFILE:+--cpuprofile "$work/$name.pprof"} \
		-e BUZZ_REPORT="$work/$name.json" "$work/$name.js")
	[ -s "$work/$name.json" ] || { echo "publish-cpu: $name wrote no report" >&2; tail -20 "$work/$name.log" >&2; return 1; }
	local counts
	counts=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = sum(s["ops"].get("publish", {}).get("count", 0) for s in d["steps"])
q = sum(s["ops"].get("deliver", {}).get("count", 0) for s in d["steps"])
a = sum(s["ops"].get("auth", {}).get("count", 0) for s in d["steps"])
r = sum(s["ops"].get("subscribe_eose", {}).get("count", 0) for s in d["steps"])
print(p, q, a, r)' "$work/$name.json")
	r1=$(relay_cpu)
	echo "$cpu $counts $(awk -v a="$r0" -v b="$r1" 'BEGIN {printf "%.2f", b - a}')"
}

# inrun_us NAME FUNCS N [FOCUS]: the cumulative CPU in that run's profile of
# the first of FUNCS (exact names, "|" between them) it has, restricted to
# stacks through FOCUS if given, over N calls, in µs.
inrun_us() {
	"$go" tool pprof -top -cum ${4:+-focus="$4"} "$work/$1.pprof" 2>/dev/null |
		awk -v n="$3" -v f="$2" 'BEGIN { split(f, names, "|"); for (i in names) want[names[i]] = 1 } want[$NF] {
			v = $4; u = 1
			if (v ~ /ms$/) { u = 1e-3 } else if (v ~ /us$/ || v ~ /µs$/) { u = 1e-6 } else if (v ~ /min$/) { u = 60 }
			gsub(/[a-zµ]+$/, "", v); printf "%.1f", v * u * 1e6 / n; exit }'
}

# sign_inrun_us NAME SIGNATURES: the CPU a signature took inside that run:
# nostr.(*Keys).Sign's samples over the signatures it made. The benchmark's
# signature runs with hot caches on an otherwise idle core; in a run the
# relay works on the other core and the caches hold everything else, so the
# same code costs more there, and "its signature" in the issue's sense is
# this one.
sign_inrun_us() { inrun_us "$1" 'github.com/buzzload/buzzload/modules/nostr.(*Keys).Sign' "$2"; }

# write_inrun_us NAME FRAMES: the CPU of one WebSocket write syscall inside
# that run: syscall.write's samples under relayclient's (*Conn).write over
# the frames it wrote (publishes, AUTHs, REQs): Go's syscall.write, or
# x/sys/unix's for a socket the epoll reader detached from Go's poller
# (modules/relayclient/netpoll). On loopback the kernel does
# the relay's TCP receive and its wake-up inside the writer's syscall, so a
# publish can cost no less than its signature plus this: the floor under
# the issue's "publish ≤ 1.5 × a signature" on this machine.
write_inrun_us() { inrun_us "$1" 'syscall.write|golang.org/x/sys/unix.write|golang.org/x/sys/unix.Write' "$2" 'relayclient\.\(\*Conn\)\.write$'; }

# The signature in CPU time, as the runs are measured (BenchmarkSignEventCPU:
# wall time on a shared machine includes waiting for a core); median of 3.
sign_us() {
	"$work/nostr.test" -test.run '^$' -test.bench '^BenchmarkSignEventCPU$' -test.benchtime 3000x -test.count 3 |
		awk '/^BenchmarkSignEventCPU/ {for (i = 1; i < NF; i++) if ($(i+1) == "cpu-ns/op") print $i/1000}' | sort -n | sed -n 2p
}

# floor_us: this machine's floors in the same CPU time (BenchmarkSyscallFloor,
# medians of 3): "null-syscall-us loopback-write-wake-us", a system call at
# all and one 512-byte loopback write whose reader, in another process,
# sleeps until it arrives (the relay, for a publish). On the VM of
# docs/benchmarks.md ("The machine's floors") such a write costs about what a
# signature does, so a publish cannot reach 1.5x its signature there.
floor_us() {
	local out
	out=$("$work/netpoll.test" -test.run '^$' -test.bench '^BenchmarkSyscallFloor$' -test.benchtime 3000x -test.count 3)
	# med SUBBENCH: the median cpu-ns/op of its 3 runs, in µs.
	med() {
		echo "$out" | awk -v b="BenchmarkSyscallFloor/$1" 'index($1, b) == 1 {for (i = 1; i < NF; i++) if ($(i+1) == "cpu-ns/op") print $i/1000}' |
			sort -n | sed -n 2p
	}
	echo "$(med null) $(med loopback-write-wake)"
}

echo "pkg: scripts/publish-cpu.sh"
echo "publish-cpu: $humans humans publishing 1/s for ${hold}s, $runs rounds, relay at $addr"
run wide 0 warm-wide >/dev/null
run narrow 0 warm-narrow >/dev/null
for i in $(seq "$runs"); do
	read -r ciw _ _ _ _ riw <<<"$(run wide 0 idle-wide-$i)"
	read -r caw pw dw _ _ raw <<<"$(run wide 3600 active-wide-$i)"
	read -r cin _ _ _ _ rin <<<"$(run narrow 0 idle-narrow-$i)"
	read -r can pn dn an rn ran <<<"$(PROFILE=1 run narrow 3600 active-narrow-$i)"
	r=$(sign_inrun_us active-narrow-$i $((pn + an)))
	w=$(write_inrun_us active-narrow-$i $((pn + an + rn)))
	s=$(sign_us)
	read -r fn fw <<<"$(floor_us)"
	awk -v ciw="$ciw" -v caw="$caw" -v pw="$pw" -v dw="$dw" -v cin="$cin" -v can="$can" -v pn="$pn" -v dn="$dn" -v s="$s" -v r="$r" -v w="$w" -v fn="$fn" -v fw="$fw" \
		-v riw="$riw" -v raw="$raw" -v rin="$rin" -v ran="$ran" 'BEGIN {
		a = (caw - ciw) * 1e6; b = (can - cin) * 1e6   # µs
		det = pw * dn - pn * dw
		x = (a * dn - b * dw) / det; y = (pw * b - pn * a) / det
		printf "BenchmarkRealRunCPU/publish 1 %.1f us/publish %.1f sign-cpu-us %.2f publish/sign %.1f sign-inrun-us %.2f publish/sign-inrun %d publishes\n", x, s, x / s, r, (r > 0 ? x / r : 0), pw + pn
		printf "BenchmarkRealRunCPU/write-floor 1 %.1f write-inrun-us %.2f sign+write/sign-inrun\n", w, (r > 0 ? (r + w) / r : 0)
		printf "BenchmarkRealRunCPU/machine-floor 1 %.2f null-syscall-us %.1f loopback-write-wake-us %.2f sign+write-wake/sign\n", fn, fw, (s > 0 ? (s + fw) / s : 0)
		printf "BenchmarkRealRunCPU/delivery 1 %.2f us/delivery %d deliveries %.1f deliveries/publish-wide\n", y, dw + dn, dw / pw
		# The relay over the same runs, decomposed the same way: its CPU per
		# publish received and per delivery sent.
		ra = (raw - riw) * 1e6; rb = (ran - rin) * 1e6
		xr = (ra * dn - rb * dw) / det; yr = (pw * rb - pn * ra) / det
		printf "BenchmarkRealRunCPU/relay 1 %.2f relay-us/delivery %.1f relay-us/publish %.2f runner/relay-delivery\n", yr, xr, (yr > 0 ? y / yr : 0)
		printf "BenchmarkRealRunCPU/wide-all-in 1 %.1f us/publish-incl-deliveries\n", a / pw
		printf "BenchmarkRealRunCPU/narrow-all-in 1 %.1f us/publish-incl-deliveries %.2f deliveries/publish-narrow\n", b / pn, dn / pn
	}'
done
