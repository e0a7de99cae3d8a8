#!/usr/bin/env bash
# The relay's ingest on ONE core: BenchmarkPublishVerified (100 connections,
# signature verification on) with GOMAXPROCS=1 (-cpu 1). Its 100 clients run
# in the same process on that core, so the figure is a lower bound on what
# the relay alone does per core. Renamed .../gomaxprocs=1 so that the report
# keeps it apart from the 2-core run of the same benchmark.
#
#   scripts/relay-percore.sh [RUNS]    (default 5)
set -euo pipefail
runs=${1:-5}
"${GO:-go}" test -run '^$' -bench '^BenchmarkPublishVerified$' -benchmem -cpu 1 -count "$runs" -timeout 5m \
	./modules/relay/ | sed 's/^BenchmarkPublishVerified\([[:space:]]\)/BenchmarkPublishVerified\/gomaxprocs=1\1/'
