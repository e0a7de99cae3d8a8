#!/usr/bin/env bash
# What `--out cloud` adds to a real run's CPU (issue 28: at most 5 % on a
# run of 4 million tagged samples): the same `buzzload run` with and
# without `--out cloud`, alternating, against a capture sink on 127.0.0.1
# that accepts every request (python3's http.server; its CPU is not
# counted). Each round prints both runs' process CPU (user + system) and
# their ratio, taken in the same round. On a shared VM that ratio swings
# by ±15 % between rounds (GC timing, neighbours), so each round also
# profiles the cloud run (--cpuprofile) and prints the share of its CPU
# spent in stacks of the cloud output (engine/output/cloud: aggregation,
# encoding, snappy, the pushes): the figure docs/benchmarks.md quotes.
#
#   scripts/cloud-cpu.sh [RUNS]    (default 5)
#
# Output is in go test -bench format for scripts/benchreport. Needs
# bin/buzzload (make build), go (pprof) and python3. Sends traffic to
# loopback only.
set -euo pipefail

runs=${1:-5}
bin=${BUZZLOAD_BIN:-bin/buzzload}
work=$(mktemp -d)
sink_pid=""
trap '[ -n "$sink_pid" ] && kill "$sink_pid" 2>/dev/null; rm -rf "$work"' EXIT

cp "$(dirname "$0")/js/samples-4m.js" "$work/samples.js"
cat >"$work/sink.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        b = b'{"reference_id":"1"}' if self.path == "/v1/tests" else b""
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$work/sink.py" >"$work/port" &
sink_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

cpu() { # run args... → user+sys seconds
	TIMEFORMAT='%U %S'
	{ time "$@" >"$work/out" 2>"$work/err"; } 2>"$work/time" || {
		echo "cloud-cpu: the run failed:" >&2
		tail -20 "$work/err" >&2
		exit 1
	}
	awk '{print $1 + $2}' "$work/time"
}

echo "pkg: scripts/cloud-cpu.sh"
echo "cloud-cpu: 4,000,000 tagged samples, with and without --out cloud, $runs rounds"
for _ in $(seq "$runs"); do
	# Both runs profile, so the profiler's own cost is on both sides.
	plain=$(cpu "$bin" run -q --cpuprofile "$work/plain.prof" "$work/samples.js")
	cloud=$(K6_CLOUD_HOST="http://127.0.0.1:$port" K6_CLOUD_TOKEN=bench cpu "$bin" run -q --cpuprofile "$work/cpu.prof" --out cloud "$work/samples.js")
	grep -q "cloud:" "$work/err" && { echo "cloud-cpu: the cloud output warned:" >&2; cat "$work/err" >&2; exit 1; }
	awk -v p="$plain" -v c="$cloud" 'BEGIN {
		printf "BenchmarkCloudOutputCPU/plain 1 %.2f cpu-s\nBenchmarkCloudOutputCPU/cloud 1 %.2f cpu-s\nBenchmarkCloudOutputCPU/added 1 %.1f %%cpu\n", p, c, 100 * (c - p) / p
	}'
	# "Showing nodes accounting for 0.45s, 3.64% of 12.37s total": with
	# -focus, the CPU of every stack through the output.
	share=$(${GO:-go} tool pprof -top -focus='engine/output/cloud' "$bin" "$work/cpu.prof" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for [^,]*, \([0-9.]*\)% of.*/\1/p')
	echo "BenchmarkCloudOutputCPU/share 1 ${share:-0} %cpu"
done
