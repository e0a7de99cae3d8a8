#!/usr/bin/env bash
# Empty iterations on constant-arrival-rate through a real `buzzload run`
# (runner, JS VUs, metrics and summary included): the iterations achieved
# per second, the share dropped (targets: none dropped at 5,000/s; < 1 %
# at 30,000/s) and the process CPU per iteration (start-up included, so it
# overstates the per-iteration cost). With two rates it also prints the
# marginal CPU per iteration, (cpu₂ − cpu₁) / (iterations₂ − iterations₁)
# within the same round, which cancels start-up and the idle per-second
# cost and is less sensitive to other load than either figure.
#
#   scripts/car-empty.sh [RUNS] [RATE...]    (defaults: 5 5000 30000)
#
# Each run lasts CAR_DURATION (default 5s) with CAR_VUS pre-allocated VUs
# (default 200). Output is in go test -bench format for scripts/benchreport.
# Needs bin/buzzload (make build). Sends no traffic at all.
set -euo pipefail

runs=${1:-5}
shift || true
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(5000 30000)
bin=${BUZZLOAD_BIN:-bin/buzzload}
dur=${CAR_DURATION:-5s}
vus=${CAR_VUS:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/car.js" <<'JS'
export const options = {
  scenarios: {
    car: {
      executor: "constant-arrival-rate", rate: Number(__ENV.RATE), timeUnit: "1s",
      duration: __ENV.DUR, preAllocatedVUs: Number(__ENV.VUS), maxVUs: Number(__ENV.VUS),
    },
  },
};
export default function () {}
export function handleSummary(data) {
  const count = (k) => (data.metrics[k] && data.metrics[k].values.count) || 0;
  return { stdout: "RESULT " + count("iterations") + " " + count("dropped_iterations") + "\n" };
}
JS

secs=$(awk -v d="$dur" 'BEGIN { n = d + 0; if (d ~ /ms$/) n /= 1000; else if (d ~ /m$/) n *= 60; print n }')
echo "pkg: scripts/car-empty.sh"
echo "car-empty: $dur per run, $vus VUs, rates ${rates[*]}"
for _ in $(seq "$runs"); do
	cpus=() its=()
	for rate in "${rates[@]}"; do
		TIMEFORMAT='%U %S'
		{ time "$bin" run -e RATE="$rate" -e DUR="$dur" -e VUS="$vus" "$work/car.js" >"$work/out" 2>"$work/err"; } 2>"$work/time" || {
			echo "car-empty: the run at $rate/s failed:" >&2
			tail -20 "$work/err" "$work/out" >&2
			exit 1
		}
		read -r iters dropped < <(awk '/^RESULT / {print $2, $3}' "$work/out")
		read -r user sys <"$work/time"
		awk -v r="$rate" -v i="$iters" -v d="$dropped" -v s="$secs" -v u="$user" -v y="$sys" 'BEGIN {
			printf "BenchmarkCAREmpty/rate=%d 1 %.0f iters/s %.3f %%dropped %.2f cpu-µs/iter\n", r, i / s, 100 * d / (i + d), (u + y) * 1e6 / i
		}'
		cpus+=("$(awk -v u="$user" -v y="$sys" 'BEGIN {print u + y}')") its+=("$iters")
	done
	if [ ${#rates[@]} -eq 2 ]; then
		awk -v c1="${cpus[0]}" -v c2="${cpus[1]}" -v i1="${its[0]}" -v i2="${its[1]}" 'BEGIN {
			if (i2 != i1) printf "BenchmarkCAREmpty/marginal 1 %.2f cpu-µs/iter\n", (c2 - c1) * 1e6 / (i2 - i1)
		}'
	fi
done
