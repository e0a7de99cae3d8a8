package report

import (
	"strings"
	"testing"
)

// windows of a 10-window hold where publish's p99 goes p0 → p9 and the
// generator's memory from m0 by dm a window.
func driftWindows(p99 func(i int) float64, rss func(i int) float64, errs func(i int) int64) []WindowReport {
	var ws []WindowReport
	for i := range 12 {
		w := WindowReport{StartS: float64(10 * i), EndS: float64(10 * (i + 1)), Warmup: i < 2, RSSMB: rss(i),
			Ops: map[string]*WindowOp{"publish": {Count: 100, P99Ms: p99(i), Errors: errs(i)}}}
		ws = append(ws, w)
	}
	return ws
}

var heldSteps = []StepReport{{Index: 0, Reached: true, StartS: 0, RampEndS: 0, EndS: 120}}

func flat(v float64) func(int) float64 { return func(int) float64 { return v } }
func none(int) int64                   { return 0 }

func TestDrift(t *testing.T) {
	// Steady: passes.
	d := Drift(driftWindows(flat(20), flat(100), none), heldSteps, 20, 0.5, 0.01, 0)
	if c := driftCheck(d); c.Level != CheckPass || d.Windows != 10 || d.Part != 2 {
		t.Fatalf("steady: %+v %+v", c, d)
	}
	// Steadily slower: fails naming the op and its slope.
	d = Drift(driftWindows(func(i int) float64 { return 20 + 10*float64(i) }, flat(100), none), heldSteps, 20, 0.5, 0.01, 0)
	c := driftCheck(d)
	if c.Level != CheckFail || !strings.Contains(c.Detail, "publish p99 rose") || !strings.Contains(c.Detail, "slope +60.00 ms/min") {
		t.Fatalf("slower: %+v", c)
	}
	// A rise under the floor is noise, whatever its ratio.
	d = Drift(driftWindows(func(i int) float64 { return 0.4 + 0.3*float64(i) }, flat(100), none), heldSteps, 20, 0.5, 0.01, 0)
	if c := driftCheck(d); c.Level != CheckPass {
		t.Fatalf("sub-floor rise: %+v", c)
	}
	// A rise that is a sliver of the latency budget is not drift (a busy
	// machine's 4.5 → 10.4 ms against a 3,000 ms limit), the same rise
	// against a 250 ms limit is. Fails without the budget share.
	small := func(i int) float64 { return 4 + 0.8*float64(i) }
	if c := driftCheck(Drift(driftWindows(small, flat(100), none), heldSteps, 20, 0.5, 0.01, 3000)); c.Level != CheckPass {
		t.Fatalf("a 6 ms rise under a 3 s limit: %+v", c)
	}
	if c := driftCheck(Drift(driftWindows(small, flat(100), none), heldSteps, 20, 0.5, 0.01, 250)); c.Level != CheckFail {
		t.Fatalf("a 6 ms rise under a 250 ms limit: %+v", c)
	}
	if c := driftCheck(Drift(driftWindows(func(i int) float64 { return 20 + 25*float64(i) }, flat(100), none), heldSteps, 20, 0.5, 0.01, 3000)); c.Level != CheckFail {
		t.Fatalf("20 → 250 ms under a 3 s limit: %+v", c)
	}
	// Errors creeping up, memory growing.
	d = Drift(driftWindows(flat(20), func(i int) float64 { return 100 + 20*float64(i) }, func(i int) int64 { return int64(i) }), heldSteps, 20, 0.5, 0.01, 0)
	c = driftCheck(d)
	if c.Level != CheckFail || !strings.Contains(c.Detail, "publish error rate rose") || !strings.Contains(c.Detail, "memory grew") {
		t.Fatalf("errors and memory: %+v", c)
	}
	// Too short a hold: skipped, saying why; max_drift 0: off.
	if d = Drift(driftWindows(flat(20), flat(100), none)[:6], heldSteps, 20, 0.5, 0.01, 0); driftCheck(d).Level != CheckSkip {
		t.Fatalf("short: %+v", d)
	}
	if Drift(nil, heldSteps, 0, 0, 0.01, 0) != nil {
		t.Fatal("max_drift 0 judged")
	}
}
