package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/modules/report"
)

// segScript is deterministic under execution segments: per-vu-iterations
// runs every VU's iterations whichever instance holds the VU, and the values
// depend on the VU's id in the test, not in the instance. So the three
// thirds together record exactly the samples of the whole run.
const segScript = `
import exec from 'k6/execution';
import { check } from 'k6';
import { Trend, Counter } from 'k6/metrics';
const work = new Trend('work_time', true);
const done = new Counter('work_done');
export const options = {
  scenarios: { s: { executor: 'per-vu-iterations', vus: 5, iterations: 2 } },
  thresholds: {
    work_done: ['count<' + (__ENV.LIMIT || '100')],
    checks: ['rate>0.4'],
  },
};
export default function () {
  const id = exec.vu.idInTest;
  check(id, { 'odd vu': (v) => v % 2 === 1 });
  work.add(id * 10 + __ITER);
  done.add(1);
}
`

var thirds = []string{"0:1/3", "1/3:2/3", "2/3:1"}

// runSegments writes the script and runs it whole and as three thirds, each
// with --result; it returns the whole run's result path and the thirds'.
func runSegments(t *testing.T, dir, limit string) (string, []string) {
	t.Helper()
	script := filepath.Join(dir, "seg.js")
	if err := os.WriteFile(script, []byte(segScript), 0o644); err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(dir, "whole-"+limit+".json")
	code, _, stderr := runCLI(t, "run", "-q", "-e", "LIMIT="+limit, "--result", whole, script)
	if code != 0 && code != 99 {
		t.Fatalf("whole run exit %d: %s", code, stderr)
	}
	var parts []string
	for i, seg := range thirds {
		p := filepath.Join(dir, "part"+string(rune('1'+i))+"-"+limit+".json")
		code, _, stderr := runCLI(t, "run", "-q", "-e", "LIMIT="+limit, "--execution-segment", seg,
			"--execution-segment-sequence", "0,1/3,2/3,1", "--tag", "instance_id=i"+string(rune('1'+i)), "--result", p, script)
		if code != 0 {
			t.Fatalf("segment %s exit %d (each third alone passes its thresholds): %s", seg, code, stderr)
		}
		parts = append(parts, p)
	}
	return whole, parts
}

func readResult(t *testing.T, p string) *result.File {
	t.Helper()
	f, err := result.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func trendOf(t *testing.T, s *metrics.Snapshot, key string) *metrics.TrendSink {
	t.Helper()
	sink, _ := s.Lookup(key)
	tr, ok := sink.(*metrics.TrendSink)
	if !ok {
		t.Fatalf("%s: no trend sink", key)
	}
	return tr
}

func TestMergeSegmentsEqualsWholeRun(t *testing.T) {
	dir := t.TempDir()
	whole, parts := runSegments(t, dir, "100")
	merged := filepath.Join(dir, "merged.json")
	export := filepath.Join(dir, "export.json")
	code, stdout, stderr := runCLI(t, append([]string{"merge", "-o", merged, "--summary-export", export}, parts...)...)
	if code != 0 {
		t.Fatalf("merge exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "TOTAL RESULTS") || !strings.Contains(stdout, "✓ 'count<100'") {
		t.Fatalf("merge printed no summary with the threshold:\n%s", stdout)
	}
	w, m := readResult(t, whole), readResult(t, merged)

	// Per-instance counts really differ (VUs 2/2/1 → 4/4/2 iterations), so
	// equality below is the merge's doing.
	var perPart []float64
	for _, p := range parts {
		s, _ := readResult(t, p).Metrics.Lookup("iterations")
		perPart = append(perPart, s.(*metrics.CounterSink).Sum())
	}
	if perPart[0] != 4 || perPart[1] != 4 || perPart[2] != 2 {
		t.Fatalf("per-segment iterations %v, want 4 4 2", perPart)
	}
	for _, key := range []string{"iterations", "work_done"} {
		ws, _ := w.Metrics.Lookup(key)
		ms, _ := m.Metrics.Lookup(key)
		if ws.(*metrics.CounterSink).Sum() != 10 || ms.(*metrics.CounterSink).Sum() != 10 {
			t.Errorf("%s: whole %v merged %v, want 10", key, ws.(*metrics.CounterSink).Sum(), ms.(*metrics.CounterSink).Sum())
		}
	}
	wc, _ := w.Metrics.Lookup("checks")
	mc, _ := m.Metrics.Lookup("checks")
	if a, b := wc.(*metrics.RateSink), mc.(*metrics.RateSink); a.Total() != 10 || a.Passes() != 6 || b.Total() != a.Total() || b.Passes() != a.Passes() {
		t.Errorf("checks: whole %d/%d merged %d/%d", a.Passes(), a.Total(), b.Passes(), b.Total())
	}
	for _, key := range []string{"work_time", "iteration_duration"} {
		a, b := trendOf(t, w.Metrics, key), trendOf(t, m.Metrics, key)
		if a.Count() != 10 || b.Count() != a.Count() {
			t.Errorf("%s count: whole %d merged %d", key, a.Count(), b.Count())
		}
	}
	// work_time's values are the same multiset: every statistic agrees.
	a, b := trendOf(t, w.Metrics, "work_time"), trendOf(t, m.Metrics, "work_time")
	if a.Min() != b.Min() || a.Max() != b.Max() || a.Sum() != b.Sum() || a.Percentile(95) != b.Percentile(95) || a.Min() != 10 || a.Max() != 51 {
		t.Errorf("work_time whole min %g max %g sum %g p95 %g, merged %g %g %g %g",
			a.Min(), a.Max(), a.Sum(), a.Percentile(95), b.Min(), b.Max(), b.Sum(), b.Percentile(95))
	}
	// The checks tree is rebuilt from the merged groups.
	if !strings.Contains(stdout, "✓ odd vu") && !strings.Contains(stdout, "✗ odd vu") {
		t.Errorf("merged summary lacks the check:\n%s", stdout)
	}
	var exp map[string]any
	b2, err := os.ReadFile(export)
	if err != nil || json.Unmarshal(b2, &exp) != nil {
		t.Fatalf("summary export: %v", err)
	}
	if it := exp["metrics"].(map[string]any)["iterations"].(map[string]any)["count"]; it != 10.0 {
		t.Errorf("exported iterations %v, want 10", it)
	}
	if m.Run.ExecutionSegment != "0:1" || len(m.Run.Merged) != 3 || !strings.Contains(strings.Join(m.Run.Merged, ","), "1/3:2/3=i2") {
		t.Errorf("merged run metadata: %+v", m.Run)
	}
}

func TestMergeRejudgesThresholdsOnMergedData(t *testing.T) {
	dir := t.TempDir()
	// count<8: each third does at most 4 iterations and passes; together 10.
	whole, parts := runSegments(t, dir, "8")
	if w := readResult(t, whole); w.Run.ExitCode != 99 {
		t.Fatalf("whole run with count<8 exit %d, want 99 (and its result still written)", w.Run.ExitCode)
	}
	for _, p := range parts {
		for _, th := range readResult(t, p).Thresholds {
			if !th.OK {
				t.Fatalf("%s: %s %s failed on the instance", p, th.Key, th.Source)
			}
		}
	}
	code, stdout, stderr := runCLI(t, append([]string{"merge"}, parts...)...)
	if code != 99 {
		t.Fatalf("merge exit %d, want 99: %s", code, stderr)
	}
	if !strings.Contains(stdout, "✗ 'count<8'") || !strings.Contains(stderr, "work_done") {
		t.Errorf("failure not shown:\nstdout %s\nstderr %s", stdout, stderr)
	}
	// --no-thresholds judges nothing.
	if code, _, stderr := runCLI(t, append([]string{"merge", "--no-thresholds", "--no-summary"}, parts...)...); code != 0 {
		t.Errorf("merge --no-thresholds exit %d: %s", code, stderr)
	}
}

// An instance that was interrupted (a runner pod killed mid-run: its
// partial result written on SIGTERM, exit 105) fails the merge with its
// exit code even when the merged thresholds pass (issue 31; without
// unfinished() the merge exited 0).
func TestMergeFailsWhenAnInstanceDidNotComplete(t *testing.T) {
	dir := t.TempDir()
	_, parts := runSegments(t, dir, "100")
	killed := filepath.Join(dir, "killed.json")
	f := readResult(t, parts[1])
	f.Run.ExitCode, f.Run.Error = engine.ExitExternalAbort, "interrupted by signal"
	if err := result.Write(killed, f); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "merge", "--no-summary", parts[0], parts[1], parts[2]); code != 0 {
		t.Fatalf("complete instances: exit %d: %s", code, stderr)
	}
	code, _, stderr := runCLI(t, "merge", "--no-summary", parts[0], killed, parts[2])
	if code != engine.ExitExternalAbort || !strings.Contains(stderr, "segment 1/3:2/3") || !strings.Contains(stderr, "interrupted by signal") {
		t.Fatalf("an interrupted instance: exit %d, want %d naming it:\n%s", code, engine.ExitExternalAbort, stderr)
	}
}

func TestMergeRefusesBadSets(t *testing.T) {
	dir := t.TempDir()
	whole, parts := runSegments(t, dir, "100")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing", []string{parts[0], parts[2]}, "segment 1/3:2/3 is missing"},
		{"missing end", []string{parts[0], parts[1]}, "segment 2/3:1 is missing"},
		{"overlap", []string{parts[0], parts[1], parts[1], parts[2]}, "segment 1/3:2/3 overlaps"},
		{"whole and part", []string{whole, parts[0]}, "execution segment sequence"},
		{"not json", []string{filepath.Join(dir, "seg.js")}, "seg.js"},
		{"absent", []string{filepath.Join(dir, "nope.json")}, "nope.json"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, append([]string{"merge"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want %d and %q", c.name, code, stderr, exitBadInput, c.want)
		}
	}
	// Results of different options are refused, naming the option.
	other := filepath.Join(dir, "other.json")
	f := readResult(t, parts[1])
	var opts map[string]any
	_ = json.Unmarshal(f.Options.Test, &opts)
	opts["thresholds"] = map[string]any{"work_done": []any{"count<5"}}
	f.Options.Test, _ = json.Marshal(opts)
	if err := result.Write(other, f); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "merge", parts[0], other, parts[2])
	if code != exitBadInput || !strings.Contains(stderr, `"thresholds"`) {
		t.Errorf("different options: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "merge"); code != exitUsage {
		t.Errorf("no files: exit %d", code)
	}
	if code, _, _ := runCLI(t, "merge", "--summary-mode", "full", whole); code != exitUsage {
		t.Errorf("full summary from compact instances: exit %d", code)
	}
	// A single whole run merges to itself.
	if code, _, stderr := runCLI(t, "merge", whole); code != 0 {
		t.Errorf("single whole result: exit %d: %s", code, stderr)
	}
}

// stageScript has windowed thresholds over two short stages. Run as two
// halves, VU 1 (first half) fails every check and records slow work, VU 2
// passes and records fast work.
const stageScript = `
import exec from 'k6/execution';
import { check, sleep } from 'k6';
import { Trend } from 'k6/metrics';
const work = new Trend('work_time', true);
export const options = {
  scenarios: { s: { executor: 'ramping-vus', startVUs: 2, gracefulRampDown: '0s',
    stages: [{ duration: '400ms', target: 2 }, { duration: '400ms', target: 2 }] } },
  thresholds: {
    checks: [{ threshold: 'rate>0.2', window: 'stage', scenario: 's' }],
    work_time: [{ threshold: 'p(99)<50', window: 'stage', scenario: 's' }],
  },
};
export default function () {
  const id = exec.vu.idInTest;
  check(id, { 'vu 2': (v) => v === 2 });
  work.add(id === 1 ? 100 : 1);
  sleep(0.05);
}
`

func TestMergeStageThresholds(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "stages.js")
	if err := os.WriteFile(script, []byte(stageScript), 0o644); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for i, seg := range []string{"0:1/2", "1/2:1"} {
		p := filepath.Join(dir, "half"+string(rune('1'+i))+".json")
		code, _, stderr := runCLI(t, "run", "-q", "--execution-segment", seg, "--execution-segment-sequence", "0,1/2,1",
			"--tag", "instance_id=h"+string(rune('1'+i)), "--result", p, script)
		// The first half fails both of its stage thresholds on its own.
		if want := []int{99, 0}[i]; code != want {
			t.Fatalf("half %s: exit %d, want %d: %s", seg, code, want, stderr)
		}
		parts = append(parts, p)
	}
	merged := filepath.Join(dir, "merged.json")
	code, _, stderr := runCLI(t, append([]string{"merge", "--no-summary", "-o", merged}, parts...)...)
	if code != 99 {
		t.Fatalf("merge exit %d, want 99 (p99 stage verdict is conservative): %s", code, stderr)
	}
	if !strings.Contains(stderr, "stage threshold 'p(99)<50' on work_time failed in scenario s stage 0") ||
		!strings.Contains(stderr, "conservative: failed on h1") || strings.Contains(stderr, "'rate>0.2'") {
		t.Errorf("stage verdicts on stderr:\n%s", stderr)
	}
	m := readResult(t, merged)
	stages := map[int]bool{}
	for _, v := range m.StageVerdicts {
		stages[v.Stage] = true
		switch v.Key {
		case "checks":
			// Exact: passes and totals of both halves, about half passing.
			if !v.OK || !*v.Exact || v.Value <= 0.2 || v.Value >= 0.8 || v.Samples < 4 {
				t.Errorf("checks stage %d: %+v", v.Stage, v)
			}
		case "work_time":
			if v.OK || *v.Exact || v.Value != 100 {
				t.Errorf("work_time stage %d: %+v", v.Stage, v)
			}
		}
	}
	if !stages[0] || !stages[1] {
		t.Errorf("stage verdicts %+v", m.StageVerdicts)
	}
	for _, th := range m.Thresholds {
		if th.Key == "checks" && !th.OK || th.Key == "work_time" && th.OK {
			t.Errorf("merged status %+v", th)
		}
	}
}

// The merged result of a distributed Buzz run keeps its Buzz report (issue
// 29 item 2: the merged page had an empty Steps section, no windows and
// no verdict): steps with the instances' counts added, windows merged when
// the instances started together, the verdict and the checks; `report`
// of the merged file draws them. Fails without report.MergeReports:
// the merged file has no "buzz".
func TestMergeKeepsTheBuzzReport(t *testing.T) {
	t.Parallel() // subprocesses that mostly wait on their timelines
	dir := copyTestdata(t, "ops-tiny.toml")
	// Long enough for both to initialise on a busy 2-core machine: one that
	// starts late ("--start-at ... is already past") has windows of its own.
	at := time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errs := make([]string, 2)
	for i, seg := range []string{"0:1/2", "1/2:1"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = runBin(t, dir, nil, "run", "-q", "--execution-segment", seg, "--execution-segment-sequence", "0,1/2,1",
				"--start-at", at, "--report-interval", "1s",
				"--result", fmt.Sprintf("r%d.json", i), "ops-tiny.toml")
		}()
	}
	wg.Wait()
	for i := range codes {
		if codes[i] != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, codes[i], errs[i])
		}
	}
	code, out, stderr := runBin(t, dir, nil, "merge", "-o", "merged.json", "r0.json", "r1.json")
	if code != 0 || !strings.Contains(out, "result: ok") || !strings.Contains(out, "step 1") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, stderr)
	}
	var parts [2]report.Report
	for i := range parts {
		if err := json.Unmarshal(readResult(t, filepath.Join(dir, fmt.Sprintf("r%d.json", i))).Buzz, &parts[i]); err != nil {
			t.Fatal(err)
		}
	}
	var m report.Report
	if err := json.Unmarshal(readResult(t, filepath.Join(dir, "merged.json")).Buzz, &m); err != nil {
		t.Fatalf("merged Buzz report: %v", err)
	}
	if !m.OK || len(m.Steps) != len(parts[0].Steps) || len(m.Checks) == 0 {
		t.Fatalf("merged: ok %v, %d steps, %d checks", m.OK, len(m.Steps), len(m.Checks))
	}
	for s := range m.Steps {
		for op, o := range m.Steps[s].Ops {
			var want int64
			for _, p := range parts {
				if po := p.Steps[s].Ops[op]; po != nil {
					want += po.Count
				}
			}
			if o.Count != want {
				t.Errorf("step %d %s: %d, want %d (the instances' sum)", s, op, o.Count, want)
			}
		}
	}
	if len(m.Windows) == 0 || len(m.Windows) != max(len(parts[0].Windows), len(parts[1].Windows)) {
		t.Errorf("merged windows: %d, instances %d and %d (started together)", len(m.Windows), len(parts[0].Windows), len(parts[1].Windows))
	}
	if code, _, stderr := runBin(t, dir, nil, "report", "-o", "merged.html", "merged.json"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	chromiumPath(t)
	checkPage(t, filepath.Join(dir, "merged.html"), []string{"clients", "op-publish-latency", "op-publish-rate"}, nil)
	page := loadPage(t, filepath.Join(dir, "merged.html"), "", 1600, 4000)
	if !strings.Contains(page.dom, "<h2>Steps</h2>") || !strings.Contains(page.dom, "result: ok") {
		t.Error("the merged page has no steps or no verdict")
	}
}
