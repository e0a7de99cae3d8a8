#!/usr/bin/env bash
# The desktop app before and after its request-volume fixes, side by side:
# runs scenarios/local-desktop.js (embedded relay, about a minute plus the
# seed) once with DESKTOP_MODE=legacy and once with DESKTOP_MODE=current,
# keeping each run's result file, Buzz JSON report and console output, then
# prints `buzzload compare legacy current`: one row per operation, with the
# current/legacy count ratio in B/A.
#
#   scripts/desktop-compare.sh                   # into out/desktop-compare/
#   scripts/desktop-compare.sh /tmp/cmp          # elsewhere
#   SCRIPT=my-desktop.js scripts/desktop-compare.sh   # another script reading DESKTOP_MODE
#   scripts/desktop-compare.sh --wide 0.45 out/wide   # 45 % of the members in 12 channels
#
# Files in the output directory: legacy.json and current.json (run --result),
# legacy-report.json and current-report.json (the Buzz report),
# legacy.log and current.log (the console), compare.txt (the table).
#
# Exit status: 0 when both runs held their limits and the table was printed;
# 1 when a run exited non-zero (its limits broke: the table is still printed,
# read its log) or a report does not name the mode it was asked for; 2 on
# bad usage.
set -euo pipefail

cd "$(dirname "$0")/.."
wide=""
if [ "${1:-}" = "--wide" ]; then
	wide=${2:-}
	if ! [[ "$wide" =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]]; then
		echo "usage: $0 [--wide FRACTION] [output-dir]: FRACTION is the share of members in 12 channels, 0..1" >&2
		exit 2
	fi
	shift 2
fi
out=${1:-out/desktop-compare}
buzzload=${BUZZLOAD:-bin/buzzload}
script=${SCRIPT:-scenarios/local-desktop.js}
if [ $# -gt 1 ]; then
	echo "usage: $0 [--wide FRACTION] [output-dir]" >&2
	exit 2
fi
if [ -n "$wide" ]; then
	# The same scenario with another share of members in more than 10
	# channels (the one knob window recovery follows in current mode).
	mkdir -p "$out/scenario"
	cp scenarios/local-desktop.js "$out/scenario/"
	sed -E "s/^tiers = \[\{ fraction = [0-9.]+/tiers = [{ fraction = $wide/" scenarios/local-desktop.toml >"$out/scenario/local-desktop.toml"
	script=$out/scenario/local-desktop.js
fi

if [ -z "${BUZZLOAD:-}" ]; then
	make --no-print-directory build >&2
fi
mkdir -p "$out"

status=0
for mode in legacy current; do
	echo "desktop-compare: $mode run of $script ($out/$mode.log)" >&2
	rm -f "$out/$mode.json" "$out/$mode-report.json" # never compare a previous run's files
	rc=0
	"$buzzload" run -q -e DESKTOP_MODE="$mode" -e BUZZ_REPORT="$out/$mode-report.json" \
		--result "$out/$mode.json" "$script" >"$out/$mode.log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "desktop-compare: the $mode run exited $rc (see $out/$mode.log)" >&2
		status=1
		if [ ! -s "$out/$mode.json" ]; then
			exit 1
		fi
	fi
	# The report says which mode ran (buzz.load's desktopMode over the TOML's
	# mode): a script that ignores DESKTOP_MODE would compare a mode with itself.
	if ! grep -Eq "\"desktop_mode\": *\"$mode\"" "$out/$mode-report.json" 2>/dev/null; then
		echo "desktop-compare: $out/$mode-report.json does not say desktop_mode \"$mode\": does $script pass desktopMode: __ENV.DESKTOP_MODE to buzz.load?" >&2
		status=1
	fi
done

"$buzzload" compare "$out/legacy.json" "$out/current.json" | tee "$out/compare.txt"

# The desktop PR's smoke ratios (current/legacy), and which were fitted by
# the scenario's knobs (docs/guide.md, "the desktop app"): each ratio of
# this run beside the PR's, within 10 % or not.
python3 - "$out/compare.txt" <<'PY'
import sys
pr = {"desktop_roster": (0.25, "fitted"), "desktop_read_state": (0.25, "fitted"),
      "desktop_profiles": (0.25, "fitted"), "desktop_nip11": (0.25, "fitted"),
      "desktop_unread": (0.34, "independent"), "desktop_live_eose": (0.55, "independent"),
      "desktop_window": (0.62, "independent")}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[0] in pr:
        try:
            a, b = float(f[1]), float(f[2])
        except ValueError:
            continue
        want, kind = pr[f[0]]
        got = b / a if a else 0
        ok = abs(got - want) <= 0.1 * want
        why = "" if ok else ("  (docs/guide.md: a rule of the app's Rust that could not be read; not the tier share)" if f[0] == "desktop_window" else "")
        print("desktop-compare: %-20s PR %.2f  here %.2f  %s  %s%s" % (f[0], want, got, "within 10 %" if ok else "NOT within 10 %", kind, why))
PY

exit "$status"
