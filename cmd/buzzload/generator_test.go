package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/report"
)

func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// A generator run out of CPU on purpose (400 humans typing several times a
// second, GOMAXPROCS=1) marks its step "generator saturated" in the report,
// the summary and buzz_generator_saturated, and fail_on_generator_saturation
// fails the run (99); the quiet ops-tiny run is not marked. Scheduled
// operations carry their latency from the due time and their lag.
func TestGeneratorSaturation(t *testing.T) {
	dir := copyTestdata(t, "generator-saturated.toml")
	code, out, errs := runBin(t, dir, []string{"GOMAXPROCS=1"}, "run", "-q", "--report-interval", "0s", "--report", "sat.json", "generator-saturated.toml")
	if code != 99 {
		t.Fatalf("saturated run: exit %d, want 99\n%s\n%s", code, out, errs)
	}
	r := readReport(t, filepath.Join(dir, "sat.json"))
	g := r.Steps[0].Generator
	if g == nil || !g.Saturated || r.Generator == nil || !r.Generator.Saturated {
		t.Fatalf("step 0 generator %+v, summary %+v: want saturated", g, r.Generator)
	}
	if g.Cores != 1 {
		t.Errorf("cores %d under GOMAXPROCS=1", g.Cores)
	}
	if !strings.Contains(out, "generator saturated") || !strings.Contains(r.AbortReason, "generator saturated") {
		t.Errorf("summary or verdict does not say it: %q\n%s", r.AbortReason, out)
	}
	if !strings.Contains(out, "buzz_generator_saturated") {
		t.Errorf("no buzz_generator_saturated metric in the summary:\n%s", out)
	}
	pub := r.Steps[0].Ops["publish"]
	if pub == nil || pub.Scheduled == 0 || pub.DueP99Ms < pub.P99Ms || pub.LagP99Ms <= 0 {
		t.Errorf("publish: scheduled ops without due latency ≥ send latency and a lag: %+v", pub)
	}

	quiet := copyTestdata(t, "ops-tiny.toml")
	// The quiet run must not be marked for a busy machine either (make test
	// runs two packages at once, podman builds among them): a lag limit ten
	// times the default still tells a detector that marks every run.
	f, err := os.OpenFile(filepath.Join(quiet, "ops-tiny.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n[abort]\ngenerator_max_lag_ms = 1000\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if code, out, errs := runBin(t, quiet, nil, "run", "-q", "--report-interval", "0s", "--report", "q.json", "ops-tiny.toml"); code != 0 {
		t.Fatalf("quiet run exit %d\n%s\n%s", code, out, errs)
	}
	q := readReport(t, filepath.Join(quiet, "q.json"))
	if q.Generator != nil && q.Generator.Saturated {
		t.Errorf("the quiet run is marked saturated: %+v", q.Generator)
	}
	for _, s := range q.Steps {
		if s.Generator == nil || s.Generator.LagSamples == 0 {
			t.Errorf("quiet step %d: no generator health %+v", s.Index, s.Generator)
		}
	}
}
