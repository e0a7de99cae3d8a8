package result

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// snap records n values of a Counter "reqs" and a Trend "lat" (values
// base..base+n-1), plus a Rate "fail" with `fails` non-zero values out of n.
func snap(t *testing.T, n, base, fails int) *metrics.Snapshot {
	t.Helper()
	reg := metrics.NewRegistry()
	c := metrics.NewCollector(reg, metrics.CollectorOptions{})
	reqs, err := reg.New("reqs", metrics.Counter, metrics.Default)
	if err != nil {
		t.Fatal(err)
	}
	lat, _ := reg.New("lat", metrics.Trend, metrics.Time)
	fail, _ := reg.New("fail", metrics.Rate, metrics.Default)
	now := time.Unix(1000, 0)
	for i := 0; i < n; i++ {
		c.Add(metrics.Sample{Metric: reqs, Time: now, Value: 1})
		c.Add(metrics.Sample{Metric: lat, Time: now, Value: float64(base + i)})
		v := 0.0
		if i < fails {
			v = 1
		}
		c.Add(metrics.Sample{Metric: fail, Time: now, Value: v})
	}
	return c.Snapshot(10 * time.Second)
}

func file(t *testing.T, seg, seq string, s *metrics.Snapshot, thr map[string]json.RawMessage) *File {
	t.Helper()
	return &File{Kind: Kind, Version: Version,
		Run: Run{Script: "/a/test.js", InstanceID: seg, ExecutionSegment: seg, ExecutionSegmentSequence: seq,
			Start: time.Unix(1000, 0), End: time.Unix(1010, 0)},
		Options: Options{Thresholds: thr, SummaryMode: "compact", Test: json.RawMessage(`{"vus":3,"iterations":9,"executionSegment":"` + seg + `","tags":{"instance_id":"` + seg + `"}}`)},
		Metrics: s,
	}
}

func TestRoundTripAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	f := file(t, "0:1", "0,1", snap(t, 5, 1, 1), map[string]json.RawMessage{"reqs": json.RawMessage(`["count<10"]`)})
	if err := Write(p, f); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	sink, _ := got.Metrics.Lookup("lat")
	if tr := sink.(*metrics.TrendSink); tr.Count() != 5 || tr.Max() != 5 {
		t.Fatalf("trend after round trip: count %d max %g", tr.Count(), tr.Max())
	}
	if got.Run.ExecutionSegment != "0:1" || strings.Join(strings.Fields(string(got.Options.Thresholds["reqs"])), "") != `["count<10"]` {
		t.Fatalf("round trip lost fields: %+v", got.Run)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}

	b, _ := os.ReadFile(p)
	cases := map[string]struct {
		content string
		want    []string
	}{
		"version": {strings.Replace(string(b), `"version": 1`, `"version": 7`, 1), []string{"bad.json", "version 7", "reads version 1"}},
		"corrupt": {string(b[:len(b)/2]), []string{"bad.json", "corrupt"}},
		"syntax":  {"{\n\"kind\": \"buzzload-result\",\n  x\n}", []string{"bad.json", "line 3"}},
		"kind":    {`{"kind":"other","version":1}`, []string{"bad.json", `kind "other"`}},
		"nokind":  {`{"metrics":{}}`, []string{"bad.json", "not a buzzload result file"}},
		"nosnap":  {`{"kind":"buzzload-result","version":1,"run":{"execution_segment":"0:1"}}`, []string{"bad.json", `no "metrics"`}},
	}
	for name, c := range cases {
		bad := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(bad, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(bad)
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", name, err, w)
			}
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v", err)
	}
}

func inputs(fs ...*File) []Input {
	out := make([]Input, len(fs))
	for i, f := range fs {
		out[i] = Input{Name: f.Run.ExecutionSegment + ".json", File: f}
	}
	return out
}

func TestCoverage(t *testing.T) {
	seq := "0,1/3,2/3,1"
	s := snap(t, 1, 1, 0)
	a, b, c := file(t, "0:1/3", seq, s, nil), file(t, "1/3:2/3", seq, s, nil), file(t, "2/3:1", seq, s, nil)
	if err := CheckCoverage(inputs(c, a, b)); err != nil {
		t.Fatalf("full cover refused: %v", err)
	}
	for name, tc := range map[string]struct {
		in   []Input
		want []string
	}{
		"missing middle": {inputs(a, c), []string{"segment 1/3:2/3 is missing"}},
		"missing end":    {inputs(a, b), []string{"segment 2/3:1 is missing"}},
		"missing start":  {inputs(b, c), []string{"segment 0:1/3 is missing"}},
		"duplicate":      {inputs(a, b, b, c), []string{"segment 1/3:2/3 overlaps", "1/3:2/3.json"}},
	} {
		err := CheckCoverage(tc.in)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", name, err, w)
			}
		}
	}
	// Overlap between segments of different sequences is caught as a
	// sequence mismatch first, which is the real mistake.
	half := file(t, "0:1/2", "0,1/2,1", s, nil)
	if err := CheckCoverage(inputs(half, b, c)); err == nil || !strings.Contains(err.Error(), "same full --execution-segment-sequence") {
		t.Fatalf("mixed sequences: %v", err)
	}
	// Overlap within a consistent set of points: 0:1/2 and 1/3:1 of a
	// hand-written sequence field.
	x, y := file(t, "0:1/2", "z", s, nil), file(t, "1/3:1", "z", s, nil)
	if err := CheckCoverage(inputs(x, y)); err == nil || !strings.Contains(err.Error(), "segment 1/3:1/2 overlaps") {
		t.Fatalf("partial overlap: %v", err)
	}
}

func TestSameTest(t *testing.T) {
	s := snap(t, 1, 1, 0)
	a, b := file(t, "0:1/2", "0,1/2,1", s, nil), file(t, "1/2:1", "0,1/2,1", s, nil)
	if err := CheckSameTest(inputs(a, b)); err != nil {
		t.Fatalf("same test refused (segment and tags differ only): %v", err)
	}
	b.Options.Test = json.RawMessage(`{"vus":4,"iterations":9}`)
	if err := CheckSameTest(inputs(a, b)); err == nil || !strings.Contains(err.Error(), `"vus" is 3 in one and 4`) {
		t.Fatalf("options: %v", err)
	}
	b = file(t, "1/2:1", "0,1/2,1", s, nil)
	b.Run.Script = "/b/other.js"
	if err := CheckSameTest(inputs(a, b)); err == nil || !strings.Contains(err.Error(), "other.js") {
		t.Fatalf("script: %v", err)
	}
	b = file(t, "1/2:1", "0,1/2,1", s, nil)
	a.Run.ScriptSHA256, b.Run.ScriptSHA256 = "aa", "bb"
	if err := CheckSameTest(inputs(a, b)); err == nil || !strings.Contains(err.Error(), "different versions") {
		t.Fatalf("hash: %v", err)
	}
}

func TestMergeRejudgesThresholds(t *testing.T) {
	seq := "0,1/2,1"
	thr := map[string]json.RawMessage{
		"reqs": json.RawMessage(`["count<15"]`),
		"lat":  json.RawMessage(`["max<100","avg<50"]`),
		"fail": json.RawMessage(`["rate<0.25"]`),
	}
	a := file(t, "0:1/2", seq, snap(t, 10, 1, 1), thr)  // lat 1..10, 1 fail in 10
	b := file(t, "1/2:1", seq, snap(t, 10, 11, 3), thr) // lat 11..20, 3 fails in 10
	m, warns, err := Merge(inputs(a, b))
	if err != nil || len(warns) > 0 {
		t.Fatalf("merge: %v %v", err, warns)
	}
	lat, _ := m.Metrics.Lookup("lat")
	if tr := lat.(*metrics.TrendSink); tr.Count() != 20 || tr.Min() != 1 || tr.Max() != 20 || tr.Avg() != 10.5 {
		t.Fatalf("merged trend count %d min %g max %g avg %g", tr.Count(), tr.Min(), tr.Max(), tr.Avg())
	}
	got := map[string]ThresholdResult{}
	for _, r := range m.Thresholds {
		got[r.Key+" "+r.Source] = r
	}
	// 10 < 15 on each instance, 20 merged.
	if r := got["reqs count<15"]; r.OK || r.Value != 20 {
		t.Errorf("count<15 on merged data: %+v", r)
	}
	// 0.3 on b alone, 4/20 merged.
	if r := got["fail rate<0.25"]; !r.OK || r.Value != 4.0/20 {
		t.Errorf("rate<0.25: %+v", r)
	}
	if r := got["lat avg<50"]; !r.OK || r.Value != 10.5 {
		t.Errorf("avg<50: %+v", r)
	}
	if m.Run.ExecutionSegment != "0:1" || len(m.Run.Merged) != 2 {
		t.Errorf("merged run: %+v", m.Run)
	}
	// Inputs are not changed by the merge.
	if s, _ := a.Metrics.Lookup("lat"); s.(*metrics.TrendSink).Count() != 10 {
		t.Errorf("input snapshot changed")
	}
}

func TestMergeStageVerdicts(t *testing.T) {
	seq := "0,1/2,1"
	thr := map[string]json.RawMessage{
		"fail": json.RawMessage(`[{"threshold":"rate<0.25","window":"stage"}]`),
		"reqs": json.RawMessage(`[{"threshold":"count<15","window":"stage"}]`),
		"lat":  json.RawMessage(`[{"threshold":"p(99)<15","window":"stage"}]`),
	}
	a := file(t, "0:1/2", seq, snap(t, 10, 1, 1), thr)
	b := file(t, "1/2:1", seq, snap(t, 10, 11, 3), thr)
	v := func(key, src string, ok bool, val float64, n int64) StageVerdict {
		return StageVerdict{Key: key, Source: src, Scenario: "s", Stage: 0, OK: ok, Value: val, HasValue: true, Samples: n}
	}
	// Counters report -1 samples (not counted), as the runner does.
	a.StageVerdicts = []StageVerdict{v("fail", "rate<0.25", true, 0.1, 10), v("reqs", "count<15", true, 10, -1), v("lat", "p(99)<15", true, 9.9, 10)}
	// b's rate 0.3 fails alone; merged (1+3)/20 = 0.2 passes.
	b.StageVerdicts = []StageVerdict{v("fail", "rate<0.25", false, 0.3, 10), v("reqs", "count<15", true, 10, -1), v("lat", "p(99)<15", false, 19.9, 10)}
	m, _, err := Merge(inputs(a, b))
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]StageVerdict{}
	for _, sv := range m.StageVerdicts {
		byKey[sv.Key] = sv
	}
	if sv := byKey["fail"]; !sv.OK || sv.Value != 0.2 || sv.Samples != 20 || !*sv.Exact {
		t.Errorf("rate stage verdict: %+v", sv)
	}
	if sv := byKey["reqs"]; sv.OK || sv.Value != 20 || !*sv.Exact || sv.Samples != -1 {
		t.Errorf("count stage verdict (passes per instance, fails merged): %+v", sv)
	}
	if sv := byKey["lat"]; sv.OK || sv.Value != 19.9 || *sv.Exact || len(sv.FailedOn) != 1 || sv.FailedOn[0] != "1/2:1" {
		t.Errorf("percentile stage verdict (conservative): %+v", sv)
	}
	set, err := ThresholdSet(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Evaluate(set, m) {
		want := st.Key == "fail"
		if st.OK != want {
			t.Errorf("windowed status %s %s: ok %v, want %v", st.Key, st.Source, st.OK, want)
		}
	}
}

func TestEvaluateMatchesRunnerSemantics(t *testing.T) {
	f := file(t, "0:1", "0,1", snap(t, 4, 1, 0), map[string]json.RawMessage{
		"reqs":          json.RawMessage(`["rate>0.3"]`), // 4 over 10 s
		"fail":          json.RawMessage(`["rate<0.1"]`),
		"http_reqs":     json.RawMessage(`["count>0"]`), // built-in, no samples: judged empty, fails
		"lat{kind:foo}": json.RawMessage(`["p(95)<1"]`), // sub-metric never tracked: empty trend, 0 < 1
	})
	set, err := ThresholdSet(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]thresholds.Status{}
	for _, st := range Evaluate(set, f) {
		got[st.Key] = st
	}
	if st := got["reqs"]; !st.OK || st.Value != 0.4 {
		t.Errorf("counter rate: %+v", st)
	}
	if st := got["http_reqs"]; st.OK {
		t.Errorf("empty built-in count>0 passed: %+v", st)
	}
	if st := got["lat{kind:foo}"]; !st.OK {
		t.Errorf("empty sub-metric: %+v", st)
	}
	// A threshold on an unknown metric is a clear error.
	f.Options.Thresholds["nope"] = json.RawMessage(`["count>0"]`)
	if _, err := ThresholdSet(f); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown metric: %v", err)
	}
}

func TestWindowedThresholdsPerScenario(t *testing.T) {
	// The same expression declared once per scenario (as the Buzz module
	// does) is judged on its own scenario's stages only.
	f := file(t, "0:1", "0,1", snap(t, 1, 1, 0), map[string]json.RawMessage{
		"reqs": json.RawMessage(`[{"threshold":"count<=5","window":"stage","scenario":"a"},{"threshold":"count<=5","window":"stage","scenario":"b"}]`),
	})
	f.StageVerdicts = []StageVerdict{
		{Key: "reqs", Source: "count<=5", Scenario: "a", Stage: 0, OK: false, Value: 9, HasValue: true, Samples: -1},
		{Key: "reqs", Source: "count<=5", Scenario: "b", Stage: 0, OK: true, Value: 2, HasValue: true, Samples: -1},
	}
	set, err := ThresholdSet(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Evaluate(set, f) {
		if want := st.Scenario == "b"; st.OK != want || (st.Scenario == "a" && st.Value != 9) {
			t.Errorf("scenario %s: ok %v value %g", st.Scenario, st.OK, st.Value)
		}
	}
}
