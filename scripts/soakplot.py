#!/usr/bin/env python3
"""The soak's verdict and picture (scripts/soak.sh): growth of the runner's
resident memory after the warm-up, in go test -bench format, and an SVG of
both processes' RSS over the run. Exit 1 when the runner grew more than
10 % or the run failed.

    soakplot.py SOAK.csv OUT.svg WARM_SECS HOLD_SECS RUN_EXIT REPORT.json
"""
import json
import statistics
import sys


def main():
    csv, svg, warm, hold, run_exit, report = sys.argv[1:7]
    warm, hold, run_exit = int(warm), int(hold), int(run_exit)
    rows = []
    for line in open(csv).read().splitlines()[1:]:
        t, a, b = (int(x) for x in line.split(","))
        if a > 0:
            rows.append((t, a / 1024, b / 1024))
    if len(rows) < 6:
        print("soak: too few samples", file=sys.stderr)
        return 1
    end = rows[-1][0]
    tenth = max(hold // 10, 60)
    early = [r[1] for r in rows if warm <= r[0] < warm + tenth]
    late = [r[1] for r in rows if r[0] >= end - tenth]
    e, l = statistics.median(early or [rows[0][1]]), statistics.median(late)
    growth = (l - e) / e * 100
    relay_e = statistics.median([r[2] for r in rows if warm <= r[0] < warm + tenth] or [rows[0][2]])
    relay_l = statistics.median([r[2] for r in rows if r[0] >= end - tenth])
    rep = {}
    try:
        rep = json.load(open(report))
    except (OSError, ValueError):
        pass
    lg = rep.get("ledger") or {}
    print("BenchmarkSoak/runner-rss 1 %.1f MB-after-warmup %.1f MB-at-end %.2f growth-%% %d hold-s" % (e, l, growth, hold))
    print("BenchmarkSoak/relay-rss 1 %.1f MB-after-warmup %.1f MB-at-end" % (relay_e, relay_l))
    print("BenchmarkSoak/ledger 1 %d expected %d lost %d unjudged %d leaks" % (lg.get("expected", 0), lg.get("lost", 0), lg.get("unjudged", 0), lg.get("leaks", 0)))
    plot(svg, rows, warm, tenth, end, growth)
    ok = growth <= 10 and run_exit == 0
    if not ok:
        print("soak: FAILED: runner RSS grew %.1f %% after the warm-up (at most 10 %%), run exit %d" % (growth, run_exit), file=sys.stderr)
    return 0 if ok else 1


def plot(path, rows, warm, tenth, end, growth):
    w, h, ml, mr, mt, mb = 800, 360, 60, 20, 30, 40
    ymax = max(max(r[1] for r in rows), max(r[2] for r in rows)) * 1.1
    xs = lambda t: ml + (w - ml - mr) * t / max(end, 1)
    ys = lambda v: h - mb - (h - mt - mb) * v / ymax
    def line(i, color):
        pts = " ".join("%.1f,%.1f" % (xs(r[0]), ys(r[i])) for r in rows)
        return '<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (color, pts)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18">buzzload soak: resident memory (MB) over %.0f min; runner growth after the warm-up %.1f %%</text>' % (ml, end / 60, growth)]
    for k in range(6):
        v = ymax * k / 5
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (ml, w - mr, ys(v), ys(v)))
        out.append('<text x="5" y="%.1f">%.0f</text>' % (ys(v) + 4, v))
    for k in range(7):
        t = end * k / 6
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f min</text>' % (xs(t), h - 15, t / 60))
    for a, b in ((warm, warm + tenth), (end - tenth, end)):
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#eef"/>' % (xs(a), mt, xs(b) - xs(a), h - mt - mb))
    out.append(line(1, "#1f77b4"))
    out.append(line(2, "#ff7f0e"))
    out.append('<text x="%d" y="%d" fill="#1f77b4">runner (buzzload run)</text>' % (w - 330, mt + 15))
    out.append('<text x="%d" y="%d" fill="#ff7f0e">relay (buzzload relay, its store grows by design)</text>' % (w - 330, mt + 30))
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    sys.exit(main())
