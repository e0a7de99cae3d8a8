#!/usr/bin/env bash
# The web dashboard's pictures in docs/ (issue 29): a screenshot of the live
# page during `make run`'s scenario and one of the exported page at the end,
# both taken by headless Chromium on loopback.
#   scripts/dashboard-screenshots.sh [OUT_DIR]   (default docs/img)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/img}
mkdir -p "$out"
make -s build
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
chrome=$(command -v chromium || command -v chromium-browser)
shot() { # url file height
  local sandbox=()
  [ "$(id -u)" = 0 ] && sandbox=(--no-sandbox)
  timeout 120 "$chrome" "${sandbox[@]}" --headless --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --no-first-run --user-data-dir="$tmp/profile" --window-size="1600,$3" --screenshot="$2" "$1" >/dev/null 2>&1
}
bin/buzzload run --out "web-dashboard=port=0&period=2s&export=$tmp/export.html" \
  scenarios/local-smoke.js >"$tmp/run.out" 2>&1 &
pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'web dashboard: http://127.0.0.1:[0-9]*' "$tmp/run.out" | cut -d' ' -f3 || true)
  [ -n "$url" ] && break
  sleep 0.2
done
[ -n "$url" ] || { cat "$tmp/run.out"; exit 1; }
sleep 30 # into the second step
shot "$url/" "$out/dashboard-live.png" 2200
wait "$pid"
shot "file://$tmp/export.html" "$out/dashboard-export.png" 3600
echo "wrote $out/dashboard-live.png and $out/dashboard-export.png"
