#!/usr/bin/env bash
# Scale in one `buzzload run` process (issue 16): many connected humans at
# the scenario defaults' rates, and a wide channel's fan-out.
#
#   scripts/scale-humans.sh humans  [RUNS] [HUMANS] [HOLD_SECS]   (defaults: 1 19000 60)
#   scripts/scale-humans.sh wide    [RUNS] [MEMBERS] [HOLD_SECS] [MSGS_PER_SEC]  (defaults: 1 5000 60 14)
#   scripts/scale-humans.sh presence [RUNS] [HUMANS] [HOLD_SECS]  (defaults: 1 100000 600)
#
# humans: HUMANS humans, each in 3 of HUMANS/10 channels, at the scenario
#   defaults (20 messages, 60 typing, 10 reactions an hour, presence every
#   30 s, 5 messages of history per channel).
# wide: MEMBERS humans all in one channel, publishing MSGS_PER_SEC messages a
#   second between them (no typing, presence hourly): MEMBERS × MSGS_PER_SEC
#   deliveries a second.
# presence: HUMANS connected, authenticated, subscribed humans, each in 3 of
#   HUMANS/10 channels, sending presence every PRESENCE_SECS (default 300)
#   and nothing else (issue 49 goal 1: two cores cannot carry five times
#   the defaults' messages). It ends with one line
#   `bench-scale: connected=N failed_sessions=F runner_kb_per_human=X relay_kb_per_conn=Y`
#   (all-in RSS of each process over the hold ÷ connected humans;
#   failed_sessions: humans whose session ended other than by the run's end).
# A `buzzload relay` runs in its own process on 127.0.0.1. The run has two
# steps: the ramp (connect_rate_per_sec CONNECT_RATE, default 500) and a steady hold; figures are
# of the hold: the runner's CPU in cores (from /proc, user + system; the
# relay's beside it: both share this machine's cores), its
# RSS (median sample), the deliveries a second it recorded, the p99 of
# deliver, connected humans and the error rate of the hold's operations.
# The run never aborts on its limits: those figures say how it went.
# The soft descriptor limit is raised to the hard one (the runner holds one
# socket per human, the relay one per connection).
# With PIN=1 (the default on 2 or more CPUs; PIN=0 turns it off) the relay
# runs on the last CPU and the runner on the others (taskset), as if the
# relay had a machine of its own: neither takes the other's cores, and the
# runner's cpu-cores says what it has to spare of its own.
# LOCAL_IPS (default 127.0.0.1-127.0.0.8; empty: the kernel's choice) is
# target.local_ips: the humans' connections come from those loopback
# addresses in turn, so connect() does not search one address's nearly
# full ephemeral port range (docs/scenario.md, local_ips).
# Each run also prints on stderr the connections the kernel dropped from a
# full accept queue meanwhile (machine-wide ListenOverflows).
# Output is in go test -bench format (scripts/benchreport reads it).
# Needs bin/buzzload (make build). Loopback only.
set -euo pipefail

mode=${1:?usage: scripts/scale-humans.sh humans|wide [RUNS] [N] [HOLD_SECS] [MSGS_PER_SEC]}
runs=${2:-1}
case $mode in
humans) n=${3:-19000} hold=${4:-60} ;;
wide) n=${3:-5000} hold=${4:-60} rate=${5:-14} ;;
presence) n=${3:-100000} hold=${4:-600} ;;
*) echo "scale-humans: mode is humans, wide or presence, not $mode" >&2; exit 2 ;;
esac
bin=${BUZZLOAD_BIN:-bin/buzzload}
# Descriptors: the runner holds one socket per human and the relay one per
# connection. Raise this script's limit (root may raise the hard one; the
# machine's own settings are left alone), else take the hard limit.
# Raising the hard limit needs CAP_SYS_RESOURCE, which containers often
# drop (then root too is held to the hard limit): the run is then cut to
# what the limit holds (both processes keep ~1,000 descriptors spare) and
# says so, rather than failing its connects part-way.
ulimit -n $((n + 5000)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt $((n + 1000)) ]; then
	fit=$(($(ulimit -n) - 1000))
	echo "scale-humans: $n humans need $((n + 1000)) descriptors in each process, but the hard limit is $(ulimit -Hn) and this process cannot raise it (that needs CAP_SYS_RESOURCE): running $fit humans" >&2
	[ "$fit" -ge 100 ] || exit 1
	n=$fit
fi
# CONNECT_RATE: connections a second in the ramp. At 500/s 19,000 humans
# saturated a one-core runner in the ramp (AUTH timeouts, reconnects) on
# 2026-12-02; at 250/s its hold was clean (one run).
rate_connect=${CONNECT_RATE:-500}
ramp=$((n / rate_connect + 5))
local_ips=${LOCAL_IPS-127.0.0.1-127.0.0.8}
# HUMANS_PER_VU: population.humans_per_vu (default 1; presence: 100). A VU
# is a JS runtime of ~30 KB: at 100,000 humans one runtime per human would
# be most of the runner's memory.
per_vu=${HUMANS_PER_VU:-$([ "$mode" = presence ] && echo 100 || echo 1)}
work=$(mktemp -d)
name=scale-humans
# shellcheck source=scripts/relay-process.sh
source "$(dirname "$0")/relay-process.sh"

ncpu=$(nproc)
runner_cpus=""
if [ "${PIN:-$([ "$ncpu" -ge 2 ] && echo 1 || echo 0)}" = 1 ] && [ "$ncpu" -ge 2 ]; then
	relay_cpus=$((ncpu - 1)) runner_cpus=0-$((ncpu - 2))
fi

if [ "$mode" = presence ]; then
	shape="channels_per_community = $((n / 10))
history_messages_per_channel = 0"
	pop="channels_per_member = 3"
	human="history_limit = 0
presence_interval_secs = ${PRESENCE_SECS:-300}
typing_per_hour = 0
messages_per_hour = 0
reactions_per_hour = 0"
elif [ "$mode" = humans ]; then
	shape="channels_per_community = $((n / 10))
history_messages_per_channel = 5"
	pop="channels_per_member = 3"
	human="history_limit = 5
presence_interval_secs = 30
typing_per_hour = 60
messages_per_hour = 20
reactions_per_hour = 10"
else
	shape="channels_per_community = 1
history_messages_per_channel = 5"
	pop="channels_per_member = 1"
	human="history_limit = 5
presence_interval_secs = 3600
typing_per_hour = 0
messages_per_hour = $(awk -v r="$rate" -v n="$n" 'BEGIN {printf "%.4f", r * 3600 / n}')
reactions_per_hour = 0"
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }
hz=$(getconf CLK_TCK)
# listen_overflows: the kernel's count of connections dropped because a
# listener's accept queue was full (TcpExt ListenOverflows, machine-wide).
# A dropped SYN is retried after 1, 3, 7 s: multi-second connects in a
# ramp with neither core busy would show here.
listen_overflows() { awk '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["ListenOverflows"] }' /proc/net/netstat; }

echo "pkg: scripts/scale-humans.sh"
echo "scale-humans: $mode, $n humans, connect ${rate_connect}/s, hold ${hold}s, ulimit -n $(ulimit -n), local IPs ${local_ips:-none}, $per_vu humans a VU, runner CPUs ${runner_cpus:-all}, relay CPUs ${relay_cpus:-all}"
for i in $(seq "$runs"); do
	name=$mode-$i
	# A fresh relay per run: a run that ended saturated leaves the relay
	# busy with its backlog, which the next run would otherwise inherit.
	start_relay $((n + 1000))
	lo0=$(listen_overflows)
	echo "scale-humans: run $i, relay at $addr" >&2
	cat >"$work/$name.toml" <<TOML
run_id = "scale-$mode-$n-$i"
$(relay_target)
local_ips = "$local_ips"
[shape]
communities = 1
$shape
thread_roots_per_channel = 0
thread_depth = 0
[population]
humans = $n
agents = 0
$pop
connect_rate_per_sec = $rate_connect
humans_per_vu = $per_vu
[human]
$human
[abort]
# Never abort: the figures below say how the hold went (p99, errors).
max_p99_ms = 3600000
max_error_rate = 1
[[ramp]]
users = 1
ramp_secs = $ramp
hold_secs = 5
[[ramp]]
users = 1
ramp_secs = 1
hold_secs = $hold
TOML
	sed "s#\./local-smoke\.toml#./$name.toml#" scenarios/local-smoke.js >"$work/$name.js"
	BUZZLOAD_OPERATOR_KEY=$key ${runner_cpus:+taskset -c "$runner_cpus"} "$bin" run -q -e BUZZ_REPORT="$work/$name.json" "$work/$name.js" >"$work/$name.log" 2>&1 &
	pid=$!
	# Setup (the seed) comes first and takes its own time: the ramp starts
	# when the runner opens its sockets, the hold ramp + 6 s after it began
	# (half the humans' sockets: the seed's own connections are far fewer).
	until [ "$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)" -ge $((n / 2)) ] || ! kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
	sleep $((ramp / 2 + 6))
	kill -0 "$pid" 2>/dev/null || { echo "scale-humans: the run ended before its hold" >&2; }
	c0=$(cpu_ticks "$pid") r0=$(cpu_ticks "$relay_pid") t0=$(date +%s.%N) samples=() rsamples=()
	for _ in $(seq $(((hold - 10) * 2))); do
		s=$(rss_kb "$pid")
		[ -n "$s" ] && samples+=("$s")
		s=$(rss_kb "$relay_pid")
		[ -n "$s" ] && rsamples+=("$s")
		sleep 0.5
	done
	c1=$(cpu_ticks "$pid") r1=$(cpu_ticks "$relay_pid") t1=$(date +%s.%N)
	st=0
	wait "$pid" || st=$?
	if [ "$st" != 0 ]; then
		echo "scale-humans: run $i exited $st:" >&2
		grep -E 'result:|crossed|abort' "$work/$name.log" | tail -8 >&2
	fi
	[ -s "$work/$name.json" ] || { echo "scale-humans: no report" >&2; tail -30 "$work/$name.log" >&2; exit 1; }
	rss=$(printf '%s\n' "${samples[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] + 0}')
	relay_rss=$(printf '%s\n' "${rsamples[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] + 0}')
	python3 - "$work/$name.json" "$mode" "$n" "$c0" "$c1" "$t0" "$t1" "$hz" "$rss" "$r0" "$r1" "$relay_rss" <<'PY'
import json, sys
path, mode, n, c0, c1, t0, t1, hz, rss, r0, r1, relay_rss = sys.argv[1:]
d = json.load(open(path))
hold = d["steps"][-1]
secs = hold["end_s"] - hold["start_s"]
ops = hold["ops"]
deliv = ops.get("deliver", {})
total = sum(o["count"] for o in ops.values())
errors = sum(o["errors"] for o in ops.values())
first = d["steps"][0]["ops"].get("connect", {})
connected = first.get("ok", 0) + ops.get("connect", {}).get("ok", 0)
# A run that ended before the last sample has no CPU figure (nan).
cores = (int(c1) - int(c0)) / int(hz) / (float(t1) - float(t0)) if int(c1) > int(c0) > 0 else float("nan")
relay = (int(r1) - int(r0)) / int(hz) / (float(t1) - float(t0)) if int(r1) > int(r0) > 0 else float("nan")
name = {"humans": "BenchmarkScaleHumans/humans=%s", "wide": "BenchmarkWideChannel/members=%s",
        "presence": "BenchmarkScalePresence/humans=%s"}[mode] % n
print("%s 1 %d connected %.2f cpu-cores %.2f relay-cpu-cores %.0f rss-MB %.0f deliveries/s %.1f deliver-p99-ms %.3f %%errors %.0f publishes/s" % (
    name, connected, cores, relay, int(rss) / 1024, deliv.get("count", 0) / secs, deliv.get("p99_ms", 0),
    100 * errors / max(total, 1), ops.get("publish", {}).get("count", 0) / secs))
print("scale-humans: hold %.0fs, result ok=%s, errors %d of %d operations" % (secs, d.get("ok"), errors, total), file=sys.stderr)
# The delivery ledger over the whole run (on at the defaults).
lg = d.get("ledger")
if lg:
    reach = lg.get("reach")
    print("scale-humans: ledger reach %s, expected %d, lost %d, unjudged %d, leaks %d" % (
        "%.4f" % reach if reach is not None else "n/a", lg.get("expected", 0), lg.get("lost", 0), lg.get("unjudged", 0), lg.get("leaks", 0)), file=sys.stderr)
if mode == "presence":
    # Sessions that ended before the run's end: the report's client exits
    # (the run's own stop is not one).
    failed = sum(e["count"] for e in d.get("client_exits") or [])
    print("BenchmarkScalePresence/humans=%s 1 %d runner-B/human %d relay-B/conn" % (
        n, int(rss) * 1024 / max(connected, 1), int(relay_rss) * 1024 / max(connected, 1)))
    print("bench-scale: connected=%d failed_sessions=%d runner_kb_per_human=%.1f relay_kb_per_conn=%.1f" % (
        connected, failed, int(rss) / max(connected, 1), int(relay_rss) / max(connected, 1)))
# The ramp (step 0) in a line: connect and AUTH p99, its errors, and
# whether the generator was saturated (its scheduling lag).
ramp = d["steps"][0]
rops, gen = ramp["ops"], ramp.get("generator") or {}
rerr = sum(o["errors"] for o in rops.values())
print("scale-humans: ramp %.0fs: connect p99 %.0f ms, auth p99 %.0f ms, errors %d of %d operations, generator %s (lag p99 %.0f ms)" % (
    ramp["end_s"] - ramp["start_s"], rops.get("connect", {}).get("p99_ms", 0), rops.get("auth", {}).get("p99_ms", 0),
    rerr, sum(o["count"] for o in rops.values()), "saturated" if gen.get("saturated") else "not saturated", gen.get("lag_p99_ms", 0)), file=sys.stderr)
# A run that did not hold says why: the failing operations' commonest error
# texts, and the clients that exited.
if d.get("abort_reason"):
    print("scale-humans:   aborted: %s" % d["abort_reason"], file=sys.stderr)
if errors > total / 100:
    for name, o in sorted(ops.items(), key=lambda kv: -kv[1]["errors"]):
        if o["errors"]:
            texts = "; ".join("%s ×%d" % (e.get("text", "?"), e.get("count", 0)) for e in o.get("error_texts", [])[:3])
            print("scale-humans:   %s: %d errors of %d: %s" % (name, o["errors"], o["count"], texts), file=sys.stderr)
    for e in d.get("client_exits") or []:
        print("scale-humans:   client exits: %s %s ×%d" % (e["kind"], e["reason"], e["count"]), file=sys.stderr)
PY
	echo "scale-humans: run $i: $(($(listen_overflows) - lo0)) connections dropped by a full accept queue (ListenOverflows)" >&2
	stop_relay
done
