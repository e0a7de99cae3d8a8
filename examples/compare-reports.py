#!/usr/bin/env python3
"""Compare two buzz reports (sc.report JSON): each step's p99 and error rate
per operation, side by side, with the change. Use it to compare a run before
and after a relay change, or two shards.

    examples/compare-reports.py before.json after.json
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def rows(report):
    out = {}
    sections = [(f"step {s['index']}", s["ops"]) for s in report["steps"]]
    sections.append(("shutdown", report["shutdown"]["ops"]))
    for name, ops in sections:
        for op, o in ops.items():
            out[(name, op)] = o
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = load(sys.argv[1]), load(sys.argv[2])
    ra, rb = rows(a), rows(b)
    print(f"{'section':10} {'op':24} {'p99 A':>9} {'p99 B':>9} {'change':>8} {'err% A':>7} {'err% B':>7}")
    for key in sorted(set(ra) | set(rb)):
        oa, ob = ra.get(key, {}), rb.get(key, {})
        pa, pb = oa.get("p99_ms"), ob.get("p99_ms")
        change = f"{(pb - pa) / pa * 100:+.0f}%" if pa and pb is not None else ""
        fmt = lambda v: "" if v is None else f"{v:.1f}"
        ea = "" if not oa else f"{100 * oa['error_rate']:.2f}"
        eb = "" if not ob else f"{100 * ob['error_rate']:.2f}"
        print(f"{key[0]:10} {key[1]:24} {fmt(pa):>9} {fmt(pb):>9} {change:>8} {ea:>7} {eb:>7}")
    for name, r in (("A", a), ("B", b)):
        print(f"{name}: {'ok' if r['ok'] else 'FAILED: ' + r.get('abort_reason', '')}")


if __name__ == "__main__":
    main()
