package extension_test

import (
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/extension"
)

// checkAccounting asserts the report's accounting (OpReport's doc): per op
// and window, started + pending of the previous window = ok + errors +
// throttled + abandoned + cut + pending, with nothing pending after the
// shutdown; cut operations only in the window the abort fell in, and the
// abort's totals equal to them.
func checkAccounting(t *testing.T, rep *extension.Report) {
	t.Helper()
	windows := append([]extension.StepReport(nil), rep.Steps...)
	windows = append(windows, extension.StepReport{Index: len(rep.Steps), Reached: true, Ops: rep.Shutdown.Ops, AbortedAtS: rep.Shutdown.AbortedAtS})
	prev := map[string]int64{}
	cut := map[string]int64{}
	for wi, w := range windows {
		name := "step " + string(rune('0'+w.Index))
		if wi == len(rep.Steps) {
			name = "shutdown"
		}
		if !w.Reached && len(w.Ops) > 0 {
			t.Errorf("%s is not reached but holds ops", name)
		}
		for op, o := range w.Ops {
			in := o.Started + prev[op]
			out := o.OK + o.Errors + o.Throttled + o.Abandoned + o.Cut + o.Pending
			if in != out {
				t.Errorf("%s %s: started %d + carried %d != ok %d + errors %d + throttled %d + abandoned %d + cut %d + pending %d",
					name, op, o.Started, prev[op], o.OK, o.Errors, o.Throttled, o.Abandoned, o.Cut, o.Pending)
			}
			if o.Cut > 0 && w.AbortedAtS == 0 {
				t.Errorf("%s %s: %d cut by an abort that did not fall in this window", name, op, o.Cut)
			}
			cut[op] += o.Cut
		}
		for op := range prev {
			if _, ok := w.Ops[op]; !ok && prev[op] != 0 {
				t.Errorf("%s: %d %s pending at the previous window's end never settled", name, prev[op], op)
			}
		}
		prev = map[string]int64{}
		for op, o := range w.Ops {
			prev[op] = o.Pending
		}
	}
	for op, n := range prev {
		if n != 0 {
			t.Errorf("shutdown %s: %d still pending after the grace", op, n)
		}
	}
	if rep.Abort != nil {
		for op, n := range cut {
			if rep.Abort.Cut[op] != n {
				t.Errorf("abort.cut[%s] = %d, the windows hold %d", op, rep.Abort.Cut[op], n)
			}
		}
	}
}

// noUnfinished fails on any "unfinished at stop" error: only a grace that
// ran out makes them, never an abort.
func noUnfinished(t *testing.T, rep *extension.Report) {
	t.Helper()
	for _, w := range append(append([]extension.StepReport(nil), rep.Steps...), extension.StepReport{Ops: rep.Shutdown.Ops}) {
		for op, o := range w.Ops {
			if o.Unfinished > 0 {
				t.Errorf("%s: %d unfinished at stop after an abort", op, o.Unfinished)
			}
		}
	}
}

// oneStep is tinySmoke with a single step, as the review ran it (ramp,
// hold, a p99 limit no run can meet).
func oneStep() string {
	i := strings.Index(tinySmoke, "[[ramp]]")
	j := strings.Index(tinySmoke, "[abort]")
	return tinySmoke[:i] + "[[ramp]]\nusers = 1\nramp_secs = 1\nhold_secs = 3\n\n" + strings.Replace(tinySmoke[j:], "max_p99_ms = 3000", "max_p99_ms = 0.001", 1)
}

// Issue 10: a last step that breaks its limits aborts the run just after
// its hold. Clients that were returning are interrupted by the abort, not
// "cancelled at the end of the grace": no client exit, no unfinished at
// stop, no shutdown abort_reason; the run fails on the step.
func TestAbortAfterTheLastHoldInterruptsNotCancels(t *testing.T) {
	r := runScenario(t, "local-smoke.js", "local-smoke.toml", oneStep(), nil, nil)
	rep := r.report
	if r.res.ExitCode != engine.ExitThresholdsFailed || !strings.HasPrefix(rep.AbortReason, "step 0: ") {
		r.dump(t)
		t.Fatalf("exit %d, abort_reason %q: want 99 on step 0", r.res.ExitCode, rep.AbortReason)
	}
	if len(rep.ClientExits) != 0 || strings.Contains(rep.Shutdown.AbortReason, "cancelled") {
		r.dump(t)
		t.Errorf("clients stopped by the abort counted as cancelled: exits %+v, shutdown %q", rep.ClientExits, rep.Shutdown.AbortReason)
	}
	if rep.Shutdown.AbortReason != "" {
		t.Errorf("the shutdown the abort cut was judged: %q", rep.Shutdown.AbortReason)
	}
	// The abort is noted by a client it interrupts; one that lands when
	// every client has already returned cuts nothing and notes nothing.
	if rep.Abort != nil && rep.Abort.Step != extension.ShutdownStep {
		t.Errorf("abort %+v: want one that fell after the last hold", rep.Abort)
	}
	noUnfinished(t, rep)
	checkAccounting(t, rep)
}

// Issue 10: a mid-run abort (step 0 breaks its limits) invents no step:
// the step it fell in is flagged and not judged, its cut operations are
// cut by the abort, and no step after it is reached.
func TestMidRunAbortInventsNoStep(t *testing.T) {
	toml := strings.Replace(tinySmoke, "max_p99_ms = 3000", "max_p99_ms = 0.001", 1)
	r := runScenario(t, "local-smoke.js", "local-smoke.toml", toml, nil, nil)
	rep := r.report
	if r.res.ExitCode != engine.ExitThresholdsFailed || !strings.HasPrefix(rep.AbortReason, "step 0: ") {
		r.dump(t)
		t.Fatalf("exit %d, abort_reason %q", r.res.ExitCode, rep.AbortReason)
	}
	if rep.Abort == nil || rep.Abort.Step != "1" {
		r.dump(t)
		t.Fatalf("abort %+v: want it to fall in step 1 (after step 0's hold)", rep.Abort)
	}
	s1 := rep.Steps[1]
	if s1.AbortReason != "" {
		t.Errorf("step 1, cut by the abort, was judged: %q", s1.AbortReason)
	}
	if s1.Reached && s1.AbortedAtS == 0 {
		t.Errorf("step 1 reads as a whole reached step: %+v", s1)
	}
	if len(rep.ClientExits) != 0 {
		t.Errorf("client exits %+v", rep.ClientExits)
	}
	noUnfinished(t, rep)
	checkAccounting(t, rep)
	if !strings.Contains(r.stdout, "abort at ") {
		t.Errorf("the text report does not say where the abort cut:\n%s", r.stdout)
	}
}
