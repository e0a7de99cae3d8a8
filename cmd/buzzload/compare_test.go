package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/result"
)

// opsScript records buzz_op_* samples the way the Buzz module does (op tag,
// duration of successes, failed rate, throttled counter). MODE=legacy makes
// three roster reads per iteration, one of them failing and one throttled;
// current makes one and a replay instead.
const opsScript = `
import { Trend, Rate, Counter } from 'k6/metrics';
const dur = new Trend('buzz_op_duration', true);
const failed = new Rate('buzz_op_failed');
const throttled = new Counter('buzz_op_throttled');
export const options = { scenarios: { s: { executor: 'shared-iterations', vus: 2, iterations: 4 } } };
const legacy = __ENV.MODE === 'legacy';
function ok(op, ms) { dur.add(ms, { op }); failed.add(0, { op }); }
export default function () {
  ok('publish', 10);
  for (let i = 0; i < (legacy ? 3 : 1); i++) ok('desktop_roster', 20 + i);
  if (legacy) {
    failed.add(1, { op: 'desktop_roster' });
    throttled.add(1, { op: 'desktop_roster' });
  } else {
    ok('desktop_replay_eose', 5);
  }
}
`

func runModes(t *testing.T, dir string) (current, legacy string) {
	t.Helper()
	script := filepath.Join(dir, "ops.js")
	if err := os.WriteFile(script, []byte(opsScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"current", "legacy"} {
		p := filepath.Join(dir, mode+".json")
		if code, _, stderr := runCLI(t, "run", "-q", "--summary-mode=disabled", "-e", "MODE="+mode, "--result", p, script); code != 0 {
			t.Fatalf("%s run exit %d: %s", mode, code, stderr)
		}
	}
	return filepath.Join(dir, "current.json"), filepath.Join(dir, "legacy.json")
}

func TestCompareResultsJSON(t *testing.T) {
	cur, leg := runModes(t, t.TempDir())
	code, stdout, stderr := runCLI(t, "compare", "--json", cur, leg)
	if code != 0 {
		t.Fatalf("compare exit %d: %s", code, stderr)
	}
	var c struct {
		Ops   []compareRow `json:"ops"`
		Total compareRow   `json:"total"`
	}
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	rows := map[string]compareRow{}
	var order []string
	for _, r := range c.Ops {
		rows[r.Op] = r
		order = append(order, r.Op)
	}
	if strings.Join(order, ",") != "desktop_replay_eose,desktop_roster,publish" {
		t.Fatalf("ops %v", order)
	}
	ratio := func(r compareRow) float64 {
		if r.CountRatio == nil {
			return -1
		}
		return *r.CountRatio
	}
	pub, roster, replay := rows["publish"], rows["desktop_roster"], rows["desktop_replay_eose"]
	if pub.A.Count != 4 || pub.B.Count != 4 || ratio(pub) != 1 {
		t.Errorf("publish: %+v %+v", pub.A, pub.B)
	}
	// legacy roster: 12 ok + 4 errors + 4 throttled = 20 against 4.
	if roster.A.Count != 4 || roster.B.Count != 20 || roster.B.OK != 12 || roster.B.Errors != 4 || roster.B.Throttled != 4 || ratio(roster) != 5 {
		t.Errorf("roster: A %+v B %+v ratio %v", roster.A, roster.B, ratio(roster))
	}
	if roster.B.ErrorRate != 0.25 || roster.A.ErrorRate != 0 || roster.B.P50Ms != 21 || roster.B.P99Ms < 21.9 || roster.B.P99Ms > 22 || roster.A.P95Ms != 20 {
		t.Errorf("roster latency/error rate: A %+v B %+v", roster.A, roster.B)
	}
	if replay.A.Count != 4 || replay.B.Count != 0 || ratio(replay) != 0 {
		t.Errorf("replay: %+v %+v", replay.A, replay.B)
	}
	if c.Total.A.Count != 12 || c.Total.B.Count != 24 || ratio(c.Total) != 2 {
		t.Errorf("total: %+v %+v", c.Total.A, c.Total.B)
	}
	// Reversed, an op that A lacks has no ratio.
	_, stdout, _ = runCLI(t, "compare", "--json", leg, cur)
	if !strings.Contains(stdout, `"op": "desktop_replay_eose"`) || !strings.Contains(stdout, `"count_ratio": null`) {
		t.Errorf("reversed comparison lacks a null ratio:\n%s", stdout)
	}
}

func TestCompareTableAndReports(t *testing.T) {
	dir := t.TempDir()
	cur, leg := runModes(t, dir)
	code, stdout, stderr := runCLI(t, "compare", cur, leg)
	if code != 0 {
		t.Fatalf("compare exit %d: %s", code, stderr)
	}
	var roster string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "desktop_roster ") {
			roster = l
		}
	}
	if f := strings.Fields(roster); len(f) != 14 || f[1] != "4" || f[2] != "20" || f[3] != "5.00" || f[11] != "25.00%" || f[13] != "4" {
		t.Errorf("roster line %q\n%s", roster, stdout)
	}

	// A Buzz JSON report as B: counts add up the steps and the shutdown.
	report := `{"run_id":"r","scenario":"local-desktop","ok":true,"limits":{"max_p99_ms":1,"max_error_rate":0},
	  "steps":[{"index":0,"ops":{"publish":{"count":3,"ok":3,"p50_ms":9,"p95_ms":10,"p99_ms":11}}},
	           {"index":1,"ops":{"publish":{"count":5,"ok":4,"errors":1,"p50_ms":12,"p95_ms":13,"p99_ms":14}}}],
	  "shutdown":{"ops":{"publish":{"count":0}}},"client_exits":[]}`
	rp := filepath.Join(dir, "report.json")
	if err := os.WriteFile(rp, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "compare", "--json", cur, rp)
	if code != 0 {
		t.Fatalf("compare with a report: exit %d: %s", code, stderr)
	}
	var c comparison
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Ops {
		if r.Op == "publish" && (r.B.Count != 8 || r.B.Errors != 1 || r.B.P99Ms != 14 || *r.CountRatio != 2) {
			t.Errorf("report publish: %+v ratio %v", r.B, *r.CountRatio)
		}
	}
	if c.B.Format != "buzz-report" || !strings.Contains(c.B.Note, "worst step") {
		t.Errorf("report side: %+v", c.B)
	}

	for _, bad := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare", cur}, exitUsage, "exactly two"},
		{[]string{"compare", cur, filepath.Join(dir, "ops.js")}, exitBadInput, "ops.js"},
		{[]string{"compare", cur, filepath.Join(dir, "none.json")}, exitBadInput, "none.json"},
	} {
		code, _, stderr := runCLI(t, bad.args...)
		if code != bad.code || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d %q", bad.args, code, stderr)
		}
	}
	// A result with no Buzz operation and no Trend metric has nothing to
	// compare (a plain k6 run's trends are compared: TestPlainK6RunsInReportAndCompare).
	plain := filepath.Join(dir, "plain.json")
	f, err := result.Read(cur)
	if err != nil {
		t.Fatal(err)
	}
	f.Metrics = &metrics.Snapshot{}
	if err := result.Write(plain, f); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "compare", plain, cur); code != exitBadInput || !strings.Contains(stderr, "plain.json") || !strings.Contains(stderr, "nothing to compare") {
		t.Errorf("no buzz ops: exit %d %q", code, stderr)
	}
	other := filepath.Join(dir, "other.json")
	_ = os.WriteFile(other, []byte(`{"hello":1}`), 0o644)
	if code, _, stderr := runCLI(t, "compare", cur, other); code != exitBadInput || !strings.Contains(stderr, "neither a buzzload result file") {
		t.Errorf("foreign JSON: exit %d %q", code, stderr)
	}
}

// Op names and scripts of a result file print escaped in the table: a
// script's op name cannot retitle or clear the terminal (reliability.md F4).
// Fails without termtext.Clean in writeComparison.
func TestCompareTableEscapesControlCharacters(t *testing.T) {
	op := "\x1b[2J\x1b]0;PWNED\a"
	a := &runOps{File: "a.json", Script: "s\x1bc.js", Ops: map[string]*opStats{op: {Count: 1, OK: 1}}}
	b := &runOps{File: "b.json", Script: "s.js", Ops: map[string]*opStats{op: {Count: 2, OK: 2}}}
	var out strings.Builder
	if err := writeComparison(&out, compareRuns(a, b)); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\a") {
		t.Fatalf("table holds control characters: %q", out.String())
	}
	if !strings.Contains(out.String(), `\x1b[2J\x1b]0;PWNED\a`) || !strings.Contains(out.String(), `s\x1bc.js`) {
		t.Fatalf("escaped names missing:\n%s", out.String())
	}
}

// report and compare take runs of plain k6 scripts (issue 29 item 3): a
// --result file and a --summary-export, their Trend metrics as rows
// (count = samples), the page drawn in Chromium with no console line.
func TestPlainK6RunsInReportAndCompare(t *testing.T) {
	dir := t.TempDir()
	script := `import { sleep } from "k6";
import { Trend } from "k6/metrics";
const think = new Trend("think_ms", true);
export const options = { vus: 2, iterations: 20, summaryTrendStats: ["avg", "min", "med", "max", "p(95)"],
  thresholds: { think_ms: ["p(95)<60000"] } };
export default function () { const t = Date.now(); sleep(0.01); think.add(Date.now() - t); }
`
	if err := os.WriteFile(filepath.Join(dir, "plain.js"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runBin(t, dir, nil, "run", "-q", "--result", "res.json", "--summary-export", "sum.json", "plain.js"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := runBin(t, dir, nil, "compare", "--json", "res.json", "sum.json")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s", code, errs)
	}
	var c struct {
		Ops []struct {
			Op   string
			A, B *struct{ Count int64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, out)
	}
	rows := map[string]bool{}
	for _, r := range c.Ops {
		rows[r.Op] = true
		if r.Op == "iteration_duration" && (r.A == nil || r.B == nil || r.A.Count != 20 || r.B.Count != 20) {
			t.Errorf("iteration_duration counts: %+v %+v", r.A, r.B)
		}
	}
	if !rows["iteration_duration"] || !rows["think_ms"] {
		t.Errorf("rows %v, want the run's trends", rows)
	}
	if code, _, errs := runBin(t, dir, nil, "report", "-o", "plain.html", "res.json"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errs)
	}
	if code, _, errs := runBin(t, dir, nil, "report", "-o", "sum.html", "sum.json"); code != 0 {
		t.Fatalf("report of the summary export: exit %d\n%s", code, errs)
	}
	chromiumPath(t)
	// A plain run's page (issue 47 item 5): its k6 metrics under their own
	// heading, not the seed's; its thresholds and verdict; no line drawn
	// across unrelated metrics; statistics the source did not keep absent.
	checkPage(t, filepath.Join(dir, "plain.html"), nil, nil)
	dom := loadPage(t, filepath.Join(dir, "plain.html"), "", 1600, 14000).dom
	for _, want := range []string{"<h2>k6 metrics (whole run)</h2>", "<h2>Thresholds</h2>", "<td>p(95)&lt;60000</td>", "✓ held", "  result: ok</span>"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the plain run's page lacks %q", want)
		}
	}
	if strings.Contains(dom, "<h2>Setup (the seed") {
		t.Error("the plain run's page calls its metrics the seed")
	}
	if strings.Contains(dom, `id="plot-ops-summary"`) {
		t.Error("the plain run's page draws a line across unrelated metrics")
	}
	sum := loadPage(t, filepath.Join(dir, "sum.html"), "", 1600, 14000).dom
	// The export kept no p(99) and no count for think_ms: "–", not 0.
	if !regexp.MustCompile(`<td>think_ms</td><td>–</td><td>0</td><td>0</td><td>[0-9.]+</td><td>[0-9.]+</td><td>–</td>`).MatchString(sum) {
		t.Errorf("the summary export's think_ms row shows absent statistics as numbers:\n%.3000s", sum[strings.Index(sum, "Overview"):])
	}
}
