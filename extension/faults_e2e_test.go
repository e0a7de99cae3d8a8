package extension_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/report"
)

// checkAccounting asserts the report's accounting (report.OpReport's doc): per op
// and window, started + pending of the previous window = ok + errors +
// throttled + abandoned + cut + pending, with nothing pending after the
// shutdown; cut operations only in the window the abort fell in, and the
// abort's totals equal to them.
func checkAccounting(t *testing.T, rep *report.Report) {
	t.Helper()
	windows := append([]report.StepReport(nil), rep.Steps...)
	windows = append(windows, report.StepReport{Index: len(rep.Steps), Reached: true, Ops: rep.Shutdown.Ops, AbortedAtS: rep.Shutdown.AbortedAtS})
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
			out := o.OK + o.Errors + o.Throttled + o.Expected + o.Abandoned + o.Cut + o.Pending
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
func noUnfinished(t *testing.T, rep *report.Report) {
	t.Helper()
	for _, w := range append(append([]report.StepReport(nil), rep.Steps...), report.StepReport{Ops: rep.Shutdown.Ops}) {
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
	src, err := os.ReadFile(filepath.Join("..", "scenarios", "local-smoke.js"))
	if err != nil {
		t.Fatal(err)
	}
	// Slow HTTP answers from a second before the hold's end, so the agent
	// is still settling its request in the grace when the abort comes.
	r := runInline(t, t.TempDir(), string(src), "local-smoke.toml", oneStep(), nil, func(rl *relay.Relay) {
		time.AfterFunc(2500*time.Millisecond, func() { rl.Faults().SetHTTPLatency(3 * time.Second) })
	}, nil)
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
	if rep.Abort != nil && rep.Abort.Step != report.ShutdownStep {
		t.Errorf("abort %+v: want one that fell after the last hold", rep.Abort)
	}
	if rep.Interrupted["agent"] == 0 {
		t.Errorf("interrupted %v: the agent settling its slow request was not interrupted", rep.Interrupted)
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

// settled sums what the report settled for op over every window (each
// operation started settles once; pending ones settle in a later window).
func settled(rep *report.Report, op string) (total, throttled, cutShort int64) {
	ws := append([]map[string]*report.OpReport{rep.Shutdown.Ops}, rep.Setup)
	if rep.Warmup != nil {
		ws = append(ws, rep.Warmup.Ops)
	}
	for _, s := range rep.Steps {
		ws = append(ws, s.Ops)
	}
	for _, m := range ws {
		if o := m[op]; o != nil {
			total += o.OK + o.Errors + o.Throttled + o.Abandoned + o.Cut
			throttled += o.Throttled
			cutShort += o.Abandoned + o.Cut + o.Unfinished
		}
	}
	return total, throttled, cutShort
}

// allOps is every op name in the report.
func allOps(rep *report.Report) []string {
	seen := map[string]bool{}
	var out []string
	add := func(m map[string]*report.OpReport) {
		for op := range m {
			if !seen[op] {
				seen[op] = true
				out = append(out, op)
			}
		}
	}
	add(rep.Setup)
	add(rep.Shutdown.Ops)
	for _, s := range rep.Steps {
		add(s.Ops)
	}
	return out
}

// faultSmoke is tinySmoke with one step, so each fault run takes a few
// seconds; agents stay in unless a case drops them.
func faultSmoke(mutate func(string) string) string {
	i := strings.Index(tinySmoke, "[[ramp]]")
	j := strings.Index(tinySmoke, "[abort]")
	s := tinySmoke[:i] + "[[ramp]]\nusers = 1\nramp_secs = 1\nhold_secs = 3\n\n" + strings.Replace(tinySmoke[j:], "max_p99_ms = 3000", "max_p99_ms = 60000", 1)
	if mutate != nil {
		s = mutate(s)
	}
	return s
}

// Issue 10: under each fault the review ran — EOSE withheld, the relay
// killed, stalled across the end of the hold, restarted (every connection
// dropped at once, then back), a 429 storm — every operation is accounted
// for: per window started + carried = settled + pending, nothing pending
// after the shutdown, and against the relay's own counters where they
// match one op for one op (REQs read, throttles answered).
func TestAccountingUnderFaults(t *testing.T) {
	humansOnly := func(s string) string { return strings.Replace(s, "agents = 1", "agents = 0", 1) }
	cases := []struct {
		name  string
		toml  func(string) string
		relay func(*relay.Config)
		fault func(*relay.Relay)
		check func(t *testing.T, rep *report.Report, st relay.Stats)
	}{
		{name: "EOSE withheld", toml: humansOnly,
			fault: func(rl *relay.Relay) { rl.Faults().WithholdEOSE("") },
			check: func(t *testing.T, rep *report.Report, st relay.Stats) {
				// Every REQ the relay read is in the report, as ok, error,
				// or an EOSE wait abandoned: none vanishes.
				sub, _, _ := settled(rep, "subscribe_eose")
				hist, _, _ := settled(rep, "history")
				if sub+hist != st.REQs {
					t.Errorf("relay read %d REQs, the report accounts for %d subscribe_eose + %d history", st.REQs, sub, hist)
				}
				if sub == 0 {
					t.Error("no subscribe_eose in the report")
				}
			}},
		{name: "relay killed", fault: func(rl *relay.Relay) {
			time.AfterFunc(2500*time.Millisecond, func() { _ = rl.Close() })
		}},
		{name: "stalled across the end of the hold", fault: func(rl *relay.Relay) {
			// From a second before the hold ends, every HTTP answer and EOSE
			// takes 3 s: the agent's poll under way straddles the hold's end.
			time.AfterFunc(2500*time.Millisecond, func() {
				rl.Faults().SetHTTPLatency(3 * time.Second)
				rl.Faults().DelayEOSE("", 3*time.Second)
			})
		}, check: func(t *testing.T, rep *report.Report, _ relay.Stats) {
			var pending int64
			for _, o := range rep.Steps[0].Ops {
				pending += o.Pending
			}
			if pending == 0 {
				t.Error("nothing was in flight at the end of the hold: the stall did not straddle it")
			}
		}},
		{name: "restarted", fault: func(rl *relay.Relay) {
			time.AfterFunc(2*time.Second, func() {
				rl.Faults().DropAfterFrames("", 1) // every connection drops at its next frame
				time.AfterFunc(500*time.Millisecond, func() { rl.Faults().DropAfterFrames("", 0) })
			})
		}, check: func(t *testing.T, rep *report.Report, st relay.Stats) {
			if c := rep.Steps[0].Ops["connect"]; c == nil || c.Started <= 4 || st.ConnectionsTotal <= 4 {
				t.Errorf("connect %+v, relay connections %d: the clients did not reconnect after the drop", c, st.ConnectionsTotal)
			}
		}},
		{name: "429 storm",
			toml: func(s string) string {
				s = strings.Replace(s, "history_messages_per_channel = 3", "history_messages_per_channel = 0", 1)
				// The relay's throttle count is compared with the report's:
				// no reads after the run (the audit's would be throttled too).
				s += "\n[verify]\nsample = 0\nsweep = false\n"
				return strings.Replace(s, "thread_roots_per_channel = 1", "thread_roots_per_channel = 0", 1)
			},
			// 2 a minute: each seeding owner creates two channels unthrottled.
			relay: func(c *relay.Config) {
				c.RateLimit = true
				c.HumanMessagesPerMin, c.AgentMessagesPerMin = 2, 2
				c.WSFramesPerWindow = 4 // EVENT/REQ/COUNT frames per window and key: most are refused
			},
			check: func(t *testing.T, rep *report.Report, st relay.Stats) {
				var thr, cutShort int64
				for _, op := range allOps(rep) {
					_, th, cs := settled(rep, op)
					thr += th
					cutShort += cs
				}
				// A throttle the relay sent is in the report as throttled, or
				// its operation was cut short before the answer was read.
				if thr > st.Throttled || st.Throttled > thr+cutShort {
					t.Errorf("relay throttled %d, the report %d (+ %d cut short)", st.Throttled, thr, cutShort)
				}
				if len(rep.Warnings) == 0 {
					t.Errorf("no warning though the relay throttled most of what was stored")
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rl *relay.Relay
			toml := faultSmoke(c.toml)
			src, err := os.ReadFile(filepath.Join("..", "scenarios", "local-smoke.js"))
			if err != nil {
				t.Fatal(err)
			}
			r := runInline(t, t.TempDir(), string(src), "local-smoke.toml", toml, c.relay, func(x *relay.Relay) {
				rl = x
				if c.fault != nil {
					c.fault(x)
				}
			}, nil)
			if r.res.ExitCode == 0 && c.name == "relay killed" {
				t.Error("a run whose relay was killed passed")
			}
			checkAccounting(t, r.report)
			if c.check != nil {
				c.check(t, r.report, rl.Stats())
			}
			if t.Failed() {
				r.dump(t)
			}
		})
	}
}

// Issue 10: a seed the relay throttles into the setup timeout says so in
// the report (setup_error), not a bare timeout.
func TestSeedThrottledIntoTheSetupTimeoutSaysSo(t *testing.T) {
	src := `import buzz from "k6/x/buzz";
const sc = buzz.load("./throttled.toml");
export const options = sc.options({ setupTimeout: "3s" });
export function setup() { return sc.setup(); }
export function human() { sc.human(); }
export function agent() { sc.agent(); }
export function handleSummary(data) { return sc.report(data, { json: __ENV.BUZZ_REPORT }); }
`
	// One HTTP API call a minute per identity (the seed writes over HTTP,
	// which Buzz charges to the API quota only): each owner's second call is
	// throttled for a minute, past the 3 s setup timeout.
	r := runInline(t, t.TempDir(), src, "throttled.toml", faultSmoke(nil), func(c *relay.Config) {
		c.RateLimit = true
		c.HumanAPICallsPerMin = 1
	}, nil, nil)
	if r.res.ExitCode != engine.ExitSetupTimeout {
		r.dump(t)
		t.Fatalf("exit %d, want %d (setup timeout)", r.res.ExitCode, engine.ExitSetupTimeout)
	}
	t.Logf("setup_error: %s", r.report.SetupError)
	if !strings.Contains(r.report.SetupError, "the seed was throttled") {
		r.dump(t)
		t.Fatalf("setup_error %q does not say the seed was throttled", r.report.SetupError)
	}
}
