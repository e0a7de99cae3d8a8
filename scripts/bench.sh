#!/usr/bin/env bash
# Runs Go benchmarks in a bounded, reproducible way and summarises them.
#
#   scripts/bench.sh OUT.txt [REPORT.md]   (settings from the environment)
#
# - one test binary at a time (-p 1): two packages benchmarking side by side
#   on 2 cores would each measure the other;
# - BENCH_COUNT runs of every benchmark (default 5) so the report can give
#   medians, min and max;
# - bounded: -timeout per package binary (BENCH_PKG_TIMEOUT) and a hard cap
#   on the whole run (BENCH_TOTAL_TIMEOUT, via coreutils timeout);
# - the machine (nproc, CPU model, Go version, commit, load average before
#   and after) is written into OUT.txt as "key: value" lines, which
#   benchstat and scripts/benchreport both read as configuration.
# - BENCH_EXTRA, if set, holds commands (separated by ";") run afterwards,
#   each under BENCH_EXTRA_TIMEOUT (default 10m), whose go-test-format
#   output is added to OUT.txt: measurements made through bin/buzzload or
#   with other settings (scripts/*.sh).
# The Markdown summary goes to REPORT.md (default: OUT-report.md). The exit
# status is non-zero if anything failed, but the report covers what ran.
set -uo pipefail

out=${1:?usage: scripts/bench.sh OUT.txt}
report=${2:-${out%.txt}-report.md}
mkdir -p "$(dirname "$out")" "$(dirname "$report")"
go=${GO:-go}
bench=${BENCH:-.}
count=${BENCH_COUNT:-5}
benchtime=${BENCH_TIME:-1s}
pkgs=${BENCH_PKGS:-./...}
pkg_timeout=${BENCH_PKG_TIMEOUT:-10m}
total_timeout=${BENCH_TOTAL_TIMEOUT:-25m}

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "nproc: $(nproc)"
	echo "cpu-model: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "go-version: $($go env GOVERSION)"
	echo "gomaxprocs: ${GOMAXPROCS:-default}"
	echo "ulimit-n: $(ulimit -n)"
	echo "load-before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: go test -p 1 -run '^\$' -bench '$bench' -benchmem -count $count -benchtime $benchtime -timeout $pkg_timeout $pkgs"
} >"$out"

# SIGINT first so go test prints what finished; SIGKILL 30 s later if not.
# shellcheck disable=SC2086 # $pkgs is a list of patterns
timeout --signal=INT --kill-after=30s "$total_timeout" \
	"$go" test -p 1 -run '^$' -bench "$bench" -benchmem -count "$count" -benchtime "$benchtime" \
	-timeout "$pkg_timeout" $pkgs 2>&1 | tee -a "$out"
status=${PIPESTATUS[0]}
if [ "$status" = 124 ]; then
	echo "bench: stopped after $total_timeout (BENCH_TOTAL_TIMEOUT); the report covers what finished" >&2
fi
# BENCH_EXTRA: commands separated by ";", run one after another.
IFS=';' read -r -a extras <<<"${BENCH_EXTRA:-}"
for cmd in "${extras[@]}"; do
	cmd=$(echo "$cmd" | sed 's/^ *//; s/ *$//')
	[ -n "$cmd" ] || continue
	echo "extra: $cmd" >>"$out"
	# shellcheck disable=SC2086 # each extra is a command line
	timeout --kill-after=30s "${BENCH_EXTRA_TIMEOUT:-10m}" $cmd | tee -a "$out"
	extra=${PIPESTATUS[0]}
	if [ "$extra" != 0 ]; then
		echo "bench: $cmd failed (status $extra)" >&2
		status=$extra
	fi
done
echo "load-after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"

if "$go" run ./scripts/benchreport "$out" >"$report"; then
	echo "bench: raw output in $out, medians in $report"
	cat "$report"
else
	status=1
fi
exit "$status"
