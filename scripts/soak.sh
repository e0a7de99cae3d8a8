#!/usr/bin/env bash
# A soak of scenarios/local-wide.toml with the delivery ledger on (issue 43):
# the runner's resident memory must stay flat at constant load.
#
#   scripts/soak.sh [DURATION] [OUT_DIR]      (defaults: 30m out/soak)
#
# A `buzzload relay` runs in its own process on 127.0.0.1, so the runner's
# memory is its own (the relay's store grows with what it keeps, by
# design). local-wide's population runs at 2x users, held for DURATION
# after a 20 s ramp, with everything a watched run has on: the delivery
# ledger and its visibility probe, the web dashboard (on a free port,
# exported at the end), the remote-write output into a real Prometheus
# on loopback (when `prometheus` is installed; PROMETHEUS names another),
# the JSON and HTML reports and the report windows every 60 s. Every 10 s the runner's and the relay's VmRSS and the
# runner's Go heap are sampled (OUT_DIR/soak.csv); the runner writes heap
# profiles after the warm-up and near the end (OUT_DIR/heap.pb.gz.1, .2:
# `go tool pprof -diff_base heap.pb.gz.1 heap.pb.gz.2` shows what grew).
# Growth is the median RSS of the last tenth of the run over the median of
# the tenth after the warm-up (a fifth of the run, at least 5 minutes); more
# than 10 % fails (exit 1). Output in go test -bench format; the picture is
# OUT_DIR/soak-rss.svg (scripts/soakplot.py). Needs bin/buzzload.
set -euo pipefail

dur=${1:-30m}
out=${2:-out/soak}
bin=${BUZZLOAD_BIN:-bin/buzzload}
work=$(mktemp -d)
name=soak
mkdir -p "$out"
# shellcheck source=scripts/relay-process.sh
source "$(dirname "$0")/relay-process.sh"

secs=$(python3 -c 'import re,sys
s=sys.argv[1]; t=0
for n,u in re.findall(r"(\d+(?:\.\d+)?)([hms])", s): t += float(n)*{"h":3600,"m":60,"s":1}[u]
print(int(t))' "$dur")
[ "$secs" -ge 120 ] || { echo "soak: DURATION $dur: want at least 2m" >&2; exit 2; }
warm=$(( secs / 5 > 300 ? secs / 5 : 300 ))
[ "$warm" -lt "$secs" ] || warm=$(( secs / 5 ))
total=$(( secs + 20 ))

start_relay 5000
prom_pid=""
outs=(--out "web-dashboard=port=0&export=$out/dashboard.html")
if command -v "${PROMETHEUS:-prometheus}" >/dev/null; then
	pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	printf 'global:\n  scrape_interval: 1m\n' >"$work/prom.yml"
	"${PROMETHEUS:-prometheus}" --config.file="$work/prom.yml" --storage.tsdb.path="$work/prom" \
		--web.listen-address="127.0.0.1:$pport" --web.enable-remote-write-receiver \
		--enable-feature=native-histograms --log.level=warn >"$out/prometheus.log" 2>&1 &
	prom_pid=$!
	trap 'kill $prom_pid 2>/dev/null || true; cleanup' EXIT
	outs+=(--out experimental-prometheus-rw)
	export K6_PROMETHEUS_RW_SERVER_URL="http://127.0.0.1:$pport/api/v1/write"
	for _ in $(seq 100); do
		curl -fs "http://127.0.0.1:$pport/-/ready" >/dev/null 2>&1 && break
		sleep 0.2
	done
fi
# local-wide, aimed at the relay process, one step at 2x held for DURATION.
python3 - "$work/soak.toml" "$secs" "$(relay_target)" <<'PY'
import re, sys
path, hold, target = sys.argv[1], sys.argv[2], sys.argv[3]
src = open("scenarios/local-wide.toml").read()
src = src.replace('run_id = "local-wide"', 'run_id = "soak-wide"')
src = re.sub(r"\[target\]\nconnect_timeout_secs = 5\n", target + "\nconnect_timeout_secs = 5\n", src)
src = re.sub(r"(\[\[ramp\]\][^\[]*)+", "", src, flags=re.S)
src += "\n[[ramp]]\nusers = 2\nramp_secs = 20\nhold_secs = %s\n" % hold
open(path, "w").write(src)
PY
sed 's#\./local-wide\.toml#./soak.toml#' scenarios/local-wide.js >"$work/soak.js"

echo "pkg: scripts/soak.sh"
echo "soak: local-wide at 2x users for $dur against the relay at $addr; samples in $out/soak.csv"
BUZZLOAD_OPERATOR_KEY=$key BUZZLOAD_MEMPROFILE_AT="${warm}s,$(( total - 30 ))s" BUZZLOAD_MEMPROFILE_RATE=${MEMPROFILE_RATE:-65536} \
	"$bin" run -q --address "" --memprofile "$out/heap.pb.gz" --report-interval 60s -e BUZZ_REPORT="$out/report.json" \
	--report-html "$out/report.html" "${outs[@]}" "$work/soak.js" \
	>"$out/run.log" 2>&1 &
run_pid=$!
echo "t_s,runner_rss_kb,relay_rss_kb" >"$out/soak.csv"
t0=$(date +%s)
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
while kill -0 "$run_pid" 2>/dev/null; do
	echo "$(( $(date +%s) - t0 )),$(rss "$run_pid"),$(rss "$relay_pid")" >>"$out/soak.csv"
	sleep 10
done
st=0
wait "$run_pid" || st=$?
tail -3 "$out/run.log"
python3 "$(dirname "$0")/soakplot.py" "$out/soak.csv" "$out/soak-rss.svg" "$warm" "$secs" "$st" "$out/report.json"
