package report

import (
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// judge applies the abort limits: p99 and error rate per op, deliver's
// errors, throttles and pending not judged.
func TestJudge(t *testing.T) {
	lim := scenario.Abort{MaxP99Ms: 100, MaxErrorRate: 0.1}
	ops := map[string]*OpReport{
		"publish": {OK: 10, P99Ms: 150},
		"deliver": {OK: 1, Errors: 9, P99Ms: 50},
		"connect": {OK: 8, Errors: 2, P99Ms: 10},
		"auth":    {OK: 0, Throttled: 50, Pending: 3},
	}
	got := judge(lim, ops)
	if !strings.Contains(got, "publish p99 150.0 ms") || !strings.Contains(got, "connect error rate 20.00%") {
		t.Errorf("judge = %q", got)
	}
	if strings.Contains(got, "deliver") || strings.Contains(got, "auth") {
		t.Errorf("deliver errors, throttles or pending were judged: %q", got)
	}
}

// An abort by a step's [abort] rule reads as one story (issue 47 item 4):
// the abort names the step that broke its limits (not the next one it
// landed in), the rule's per-op thresholds are not listed again, and the
// interrupted clients are its consequence, not "a signal or test.abort()".
func TestAnAbortByTheRuleAgreesWithItself(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	plan := []scenario.StepPlan{{Users: 1, RampEnd: 5 * time.Second, End: 20 * time.Second},
		{Users: 2, Start: 20 * time.Second, RampEnd: 25 * time.Second, End: 45 * time.Second}}
	rec := newRecorder(plan, start)
	for i := 0; i < 50; i++ {
		at := start.Add(time.Duration(6+i/5) * time.Second)
		rec.record(relayclient.Result{Op: "publish", Start: at, Duration: 5 * time.Millisecond, Outcome: relayclient.OutcomeOK}, 0)
	}
	rec.a.NoteStart(start)
	rec.a.NoteAbort(start.Add(20*time.Second + time.Millisecond))
	rec.a.Interrupt(scenario.KindHuman)
	in := Input{Plan: plan, Clients: make([]map[string]int, 2), Abort: scenario.Abort{MaxP99Ms: 0.05, MaxErrorRate: 0.01},
		ThresholdsFailed: []string{"buzz_op_duration{op:publish}: p(99)<=0.05", "my_trend: p(95)<1"},
		Rules:            Rules{"buzz_op_duration{op:publish}": {"p(99)<=0.05"}}}
	r := Build(in, rec.a.Totals())
	if r.Abort == nil || r.Abort.ByRule != "0" || r.Steps[0].AbortReason == "" {
		t.Fatalf("abort %+v, step 0 %q", r.Abort, r.Steps[0].AbortReason)
	}
	text := r.Text()
	if !strings.Contains(text, "abort at 20.001s (step 0 broke its [abort] limits)") {
		t.Errorf("the abort line does not name step 0:\n%s", text)
	}
	if strings.Contains(text, "✗ buzz_op_duration{op:publish}") || !strings.Contains(text, "✗ my_trend: p(95)<1") {
		t.Errorf("the rule's threshold listed again, or the script's own missing:\n%s", text)
	}
	for _, c := range r.Checks {
		if c.Name == "threshold buzz_op_duration{op:publish}: p(99)<=0.05" {
			t.Errorf("the rule's threshold is a check of its own: %+v", c)
		}
		if c.Name == "run end" && (c.Level == CheckFail || strings.Contains(c.Detail, "signal")) {
			t.Errorf("run end %+v: the rule stopped it", c)
		}
	}
	if !strings.HasPrefix(r.AbortReason, "step 0: publish p99") {
		t.Errorf("verdict %q, want step 0's", r.AbortReason)
	}
}

// A durability audit that could read nothing back warns: a run that could
// not check its writes did not pass them (issue 43 L2: it was a skip).
func TestAnAuditThatReadNothingWarns(t *testing.T) {
	c := durabilityCheck(&DurabilityReport{Acknowledged: 12, Checked: 12, Unverified: 12, FirstError: "connection refused"})
	if c.Level != CheckWarn || !strings.Contains(c.Detail, "connection refused") {
		t.Errorf("%+v, want a warning with the error", c)
	}
	if c := durabilityCheck(&DurabilityReport{}); c.Level != CheckSkip {
		t.Errorf("nothing acknowledged: %+v, want a skip", c)
	}
}
