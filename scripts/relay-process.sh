# shellcheck shell=bash
# Sourced by the real-run measurement scripts (allin-human.sh,
# publish-cpu.sh, scale-humans.sh): a `buzzload relay` in its own process
# on 127.0.0.1, so the runner's figures never count it.
#
#   work=$(mktemp -d); bin=bin/buzzload; name=my-script
#   source scripts/relay-process.sh
#   start_relay MAX_CONNECTIONS     # sets key, relay_pid and addr; exits on failure
#
# The EXIT trap it sets stops the relay and removes $work. key is a fresh
# operator key for this run only: in the environment of the two processes,
# never written to a file or printed.

relay_pid=""
cleanup() {
	if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

start_relay() {
	key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	# relay_cpus (optional, e.g. "1") pins the relay to those CPUs;
	# RELAY_FLAGS (optional) are more relay flags, e.g. "--cpuprofile FILE";
	# RELAY_BIN (optional) another buzzload binary for the relay only (to
	# compare two relays under the same runner).
	BUZZ_OPERATOR_SECRET=$key BUZZ_RATE_LIMIT=false ${relay_cpus:+taskset -c "$relay_cpus"} "${RELAY_BIN:-$bin}" relay --listen 127.0.0.1:0 \
		--max-connections "$1" ${RELAY_FLAGS:-} >"$work/relay.log" 2>&1 &
	relay_pid=$!
	addr=""
	for _ in $(seq 50); do
		addr=$(sed -n 's/^buzzload relay listening on \(127\.0\.0\.1:[0-9]*\)$/\1/p' "$work/relay.log")
		[ -n "$addr" ] && return 0
		sleep 0.1
	done
	echo "$name: the relay did not start:" >&2
	cat "$work/relay.log" >&2
	exit 1
}

# stop_relay stops the relay start_relay started and waits for it.
stop_relay() {
	if [ -n "$relay_pid" ]; then
		kill "$relay_pid" 2>/dev/null || true
		wait "$relay_pid" 2>/dev/null || true
		relay_pid=""
	fi
}

# relay_target prints the [target] table of a scenario TOML for that relay.
relay_target() {
	cat <<TOML
[target]
ws_url = "ws://$addr"
http_url = "http://$addr"
community_host_template = "c{n}.{run}.localhost"
connect_addr = "$addr"
TOML
}

# timed_run NAME CMD...: runs CMD with its output in $work/NAME.log and
# prints the CPU seconds (user + system) it took, from the shell's
# `times`. A failed threshold (exit 99) under load still measures the CPU;
# another exit is said on stderr with the log's last verdict lines (the
# caller checks the report it needs).
timed_run() {
	local name=$1 t
	shift
	t=$( (
		st=0
		"$@" >"$work/$name.log" 2>&1 || st=$?
		if [ "$st" != 0 ] && [ "$st" != 99 ]; then
			echo "${0##*/}: $name exited $st:" >&2
			grep -E 'result:|threshold|error|✗' "$work/$name.log" | tail -5 >&2
		fi
		times
	) | tail -1)
	# times' second line: children's user and system time, "XmY.YYYs XmY.YYYs".
	echo "$t" | awk '{n=0; for (i=1;i<=2;i++) {split($i,p,"m"); n += p[1]*60 + p[2]} printf "%.3f", n}'
}
