package extension

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/logscan"
	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/scenario"
)

// OpReport is one operation's numbers within a step (or the shutdown).
//
// Accounting: every operation started is settled exactly once, as ok,
// errors, throttled, abandoned or cut, in the window it settles in; one
// still in flight at the window's end is pending there and settles in a
// later window. So per window
//
//	started + pending of the previous window = ok + errors + throttled + abandoned + cut + pending
//
// and the shutdown ends with nothing pending (what the grace cut is an
// "unfinished at stop" error).
type OpReport struct {
	Count      int64   `json:"count"` // settled: ok + errors + throttled
	OK         int64   `json:"ok"`
	P50Ms      float64 `json:"p50_ms"`
	P95Ms      float64 `json:"p95_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	Errors     int64   `json:"errors"`
	ErrorRate  float64 `json:"error_rate"` // errors / (ok + errors)
	Throttled  int64   `json:"throttled"`
	Expected   int64   `json:"expected,omitempty"`   // errors an [[expect]] rule matched: not in errors or the error rate
	Pending    int64   `json:"pending"`              // in flight at the end of the window (not judged)
	Started    int64   `json:"started"`              // started within the window
	Abandoned  int64   `json:"abandoned,omitempty"`  // cut short by the client's own close (a session end, the stop): an EOSE or OK it stopped waiting for
	Cut        int64   `json:"cut,omitempty"`        // cut short by the abort (not judged)
	Unfinished int64   `json:"unfinished,omitempty"` // of errors: still in flight when the shutdown grace ended
	// ErrorTexts are the distinct error texts (ids, numbers and durations
	// stripped) with their counts, the 10 most frequent and then "other".
	ErrorTexts []ErrorText `json:"error_texts,omitempty"`
	// Scheduled operations (those a client's schedule made, Result.Due):
	// how many, their latency from the due time (what a person waiting on
	// the schedule sees) beside P50Ms.. from the send, and the lag due →
	// send (coordinated omission: a sequential client sends late when the
	// relay slows).
	Scheduled int64   `json:"scheduled,omitempty"`
	DueP50Ms  float64 `json:"due_p50_ms,omitempty"`
	DueP95Ms  float64 `json:"due_p95_ms,omitempty"`
	DueP99Ms  float64 `json:"due_p99_ms,omitempty"`
	LagP50Ms  float64 `json:"lag_p50_ms,omitempty"`
	LagP99Ms  float64 `json:"lag_p99_ms,omitempty"`
}

// StepReport is one ramp step: its ramp and its hold.
type StepReport struct {
	Index    int            `json:"index"`
	Users    float64        `json:"users"`
	StartS   float64        `json:"start_s"`
	RampEndS float64        `json:"ramp_end_s"`
	EndS     float64        `json:"end_s"`
	Clients  map[string]int `json:"clients"` // planned at this step's users
	// ClientsStarted counts the clients whose first session began in this
	// step (its own clients, the ones its ramp added).
	ClientsStarted map[string]int64 `json:"clients_started"`
	// Reached: the run got into this step before any abort.
	Reached bool                 `json:"reached"`
	Ops     map[string]*OpReport `json:"ops"`
	// AbortedAtS is set on the step an abort fell in: the run was cut
	// there, that many seconds into the timeline. Such a step is not
	// judged (its window never completed); its cut operations are in cut.
	AbortedAtS  float64 `json:"aborted_at_s,omitempty"`
	AbortReason string  `json:"abort_reason,omitempty"`
	// Generator is the generator's health in the step (generator.go).
	Generator *GeneratorReport `json:"generator,omitempty"`
}

// ShutdownReport is what settled after the last hold, judged by the same
// limits; cancelled clients fail it whatever the limits. An abort during
// the grace cuts it (AbortedAtS) and it is not judged.
type ShutdownReport struct {
	GraceS      float64              `json:"grace_s"`
	Ops         map[string]*OpReport `json:"ops"`
	Failures    int64                `json:"failures"`
	AbortedAtS  float64              `json:"aborted_at_s,omitempty"`
	AbortReason string               `json:"abort_reason,omitempty"`
}

// AbortReport says when an abort cut the run and what it cut. An abort
// (an abortOnFail threshold, test.abort(), a signal) stops every client at
// once, as k6 does: no shutdown grace, work in flight is abandoned and
// recorded as cut by the abort, never as an error or a client failure.
type AbortReport struct {
	AtS  float64          `json:"at_s"`
	Step string           `json:"step"` // the step it fell in, or "shutdown"
	Cut  map[string]int64 `json:"cut"`  // operations cut, by op
}

// ExitReport counts clients that exited unexpectedly.
type ExitReport struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Limits are the scenario's [abort] limits.
type Limits struct {
	MaxP99Ms     float64 `json:"max_p99_ms"`
	MaxErrorRate float64 `json:"max_error_rate"`
	WarmupSecs   float64 `json:"warmup_secs,omitempty"`
}

func limitsOf(a scenario.Abort) Limits {
	return Limits{MaxP99Ms: a.MaxP99Ms, MaxErrorRate: a.MaxErrorRate, WarmupSecs: a.WarmupSecs}
}

// Report is the buzz-loadgen-style JSON report of one scenario file.
type Report struct {
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	Shard    string `json:"shard,omitempty"`
	// DesktopMode is [desktop].mode (after buzz.load's desktopMode) when
	// the scenario has desktop humans, so two reports of a comparison say
	// which app each ran.
	DesktopMode string       `json:"desktop_mode,omitempty"`
	OK          bool         `json:"ok"`
	AbortReason string       `json:"abort_reason,omitempty"`
	Limits      Limits       `json:"limits"`
	Seed        *SetupResult `json:"seed,omitempty"`
	// RelayLimits are the relay's bounds the clients worked within, each
	// from NIP-11 or Buzz's default.
	RelayLimits []RelayLimit         `json:"relay_limits,omitempty"`
	SetupError  string               `json:"setup_error,omitempty"`
	Setup       map[string]*OpReport `json:"setup,omitempty"`
	// Warmup is what settled in the warm-up ([abort] warmup_secs,
	// --warmup): reported apart, not judged.
	Warmup      *WarmupReport  `json:"warmup,omitempty"`
	Steps       []StepReport   `json:"steps"`
	Shutdown    ShutdownReport `json:"shutdown"`
	ClientExits []ExitReport   `json:"client_exits"`
	ExitSamples []string       `json:"exit_samples,omitempty"`
	// Interrupted counts clients cut off when the run was aborted before its
	// stop (no grace): a consequence of the abort, not client failures.
	Interrupted      map[string]int64 `json:"interrupted,omitempty"`
	Abort            *AbortReport     `json:"abort,omitempty"`
	ThresholdsFailed []string         `json:"thresholds_failed,omitempty"`
	// Expected are the [[expect]] rules (and buzz.load's) with what each
	// matched: errors counted apart, not failures.
	Expected []ExpectedReport `json:"expected,omitempty"`
	// Warnings say what passed but should not be read as healthy: an
	// operation throttled more often than it succeeded.
	Warnings []string `json:"warnings,omitempty"`
	// Checks are every judgement of the run with its level (checks.go);
	// CheckCounts tallies them.
	// Durability is the audit of what the relay acknowledged (durability.go).
	Durability *DurabilityReport `json:"durability,omitempty"`
	// Unacked is what became of the events the relay never acknowledged
	// (unacked.go).
	Unacked *UnackedReport `json:"unacknowledged,omitempty"`
	// RelayLogs are the relay's own logs, scanned for error lines
	// (--relay-log, and the embedded relay's).
	RelayLogs []*logscan.Result `json:"relay_logs,omitempty"`
	// Profile is a gateway profile's verdict (sc.report's profile option).
	Profile *ProfileVerdict `json:"profile,omitempty"`
	// Sweep is the post-run sweep: is the relay still serving (sweep.go)?
	Sweep       *SweepReport `json:"sweep,omitempty"`
	Checks      []Check      `json:"checks"`
	CheckCounts CheckCounts  `json:"check_counts"`
	// Windows are the report intervals (--report-interval) from the start of
	// the populations, at most MaxWindows (older ones merged).
	WindowSecs float64        `json:"window_s,omitempty"`
	Windows    []WindowReport `json:"windows,omitempty"`
	// Generator says whether the generator was saturated in any step.
	Generator *GeneratorSummary `json:"generator,omitempty"`
}

// WarmupReport is the warm-up: its length and its operations.
type WarmupReport struct {
	Secs float64              `json:"secs"`
	Ops  map[string]*OpReport `json:"ops"`
}

var stats = func() (out [4]metrics.Stat) {
	for i, s := range []string{"p(50)", "p(95)", "p(99)", "max"} {
		st, err := metrics.ParseStat(s)
		if err != nil {
			panic(err)
		}
		out[i] = st
	}
	return out
}()

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func (a *opAgg) report() *OpReport {
	r := &OpReport{OK: a.ok, Errors: a.errors, Throttled: a.throttled, Expected: a.expected, Pending: a.pending,
		Started: a.started, Abandoned: a.abandoned, Cut: a.cut, Unfinished: a.unfinished,
		Count: a.ok + a.errors + a.throttled, ErrorTexts: a.errTexts.top(topErrorTexts)}
	if a.ok+a.errors > 0 {
		r.ErrorRate = round3(float64(a.errors) / float64(a.ok+a.errors))
	}
	a.sched.fill(r)
	if a.ok > 0 {
		dst := []*float64{&r.P50Ms, &r.P95Ms, &r.P99Ms, &r.MaxMs}
		for i, st := range stats {
			v, _ := a.trend.Value(st, 0)
			*dst[i] = round3(v)
		}
	}
	return r
}

func opsReport(m map[string]*opAgg) map[string]*OpReport {
	out := make(map[string]*OpReport, len(m))
	for k, v := range m {
		out[k] = v.report()
	}
	return out
}

// judge applies the abort limits to one step's (or the shutdown's) ops:
// any op's p99 above max_p99_ms, any op but deliver above max_error_rate.
// Pending operations are not judged.
func judge(lim scenario.Abort, ops map[string]*OpReport) string {
	var reasons []string
	for _, name := range sortedOps(ops) {
		o := ops[name]
		if o.OK > 0 && o.P99Ms > lim.MaxP99Ms {
			reasons = append(reasons, fmt.Sprintf("%s p99 %.1f ms above max_p99_ms %g", name, o.P99Ms, lim.MaxP99Ms))
		}
		if name != models.OpDeliver && o.OK+o.Errors > 0 && float64(o.Errors)/float64(o.OK+o.Errors) > lim.MaxErrorRate {
			reasons = append(reasons, fmt.Sprintf("%s error rate %.2f%% (%d of %d) above max_error_rate %g%%",
				name, 100*float64(o.Errors)/float64(o.OK+o.Errors), o.Errors, o.OK+o.Errors, 100*lim.MaxErrorRate))
		}
	}
	return strings.Join(reasons, "; ")
}

// BuildReport assembles the report from the aggregation and the names of
// the thresholds that failed (from handleSummary's data).
func (l *loaded) BuildReport(failedThresholds []string) *Report {
	return l.buildReport(failedThresholds, nil)
}

// buildReport is BuildReport with a gateway profile's verdict (sc.report's
// profile option), judged with the rest.
func (l *loaded) buildReport(failedThresholds []string, profile *ProfileVerdict) *Report {
	l.finalWindow(time.Now())
	windows := l.win.list()
	every, _ := l.reportInterval()
	a := l.agg
	a.mu.Lock()
	defer a.mu.Unlock()
	r := &Report{RunID: l.base.RunID, Scenario: l.base.File, Limits: limitsOf(l.base.Abort), ThresholdsFailed: failedThresholds}
	if l.shard.Count > 1 {
		r.Shard = fmt.Sprintf("%d/%d", l.shard.Index, l.shard.Count)
	}
	if l.base.Desktop.Fraction > 0 {
		r.DesktopMode = l.base.Desktop.Mode
	}
	if len(a.setup) > 0 {
		r.Setup = opsReport(a.setup)
	}
	if w := l.warmup(); w > 0 {
		r.Warmup = &WarmupReport{Secs: w.Seconds(), Ops: opsReport(a.warmupOps())}
	}
	l.preMu.Lock()
	r.RelayLimits = l.relayLimits
	l.preMu.Unlock()
	l.seedMu.Lock()
	r.Seed = l.seedRes
	seedErr := l.seedErr
	l.seedMu.Unlock()
	if seedErr != nil {
		r.SetupError = seedErr.Error()
	}
	// The abort moment on the timeline (-1: no abort).
	abortOff := time.Duration(-1)
	if !a.abortAt.IsZero() && !a.startTime.IsZero() {
		abortOff = max(0, a.abortAt.Sub(a.startTime))
		r.Abort = &AbortReport{AtS: round3(abortOff.Seconds()), Step: l.stepLabel(l.stepIndex(abortOff)), Cut: map[string]int64{}}
	}
	for i, st := range l.plan {
		counts := l.base.CountsAt(st.Users, l.shard)
		cl := map[string]int{}
		for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
			if counts[k] > 0 {
				cl[k.String()] = counts[k]
			}
		}
		stepOps := a.merged([]int{2 * i, 2*i + 1}, nil, 2*i+1)
		sr := StepReport{Index: i, Users: st.Users, StartS: st.Start.Seconds(), RampEndS: st.RampEnd.Seconds(),
			EndS: st.End.Seconds(), Clients: cl, ClientsStarted: copyCounts(a.firstSessions[i]),
			Ops: opsReport(stepOps)}
		// Reached: the timeline got into the step (an abort before its start
		// leaves it unreached, whatever settled at the abort).
		sr.Reached = len(sr.Ops) > 0 && (abortOff < 0 || abortOff >= st.Start)
		cutHere := abortOff >= st.Start && abortOff < st.End
		switch {
		case cutHere:
			sr.AbortedAtS = round3(abortOff.Seconds())
		case sr.Reached:
			sr.AbortReason = judge(l.base.Abort, sr.Ops)
		}
		for k, n := range a.exitsByStep[i] {
			sr.AbortReason = joinReason(sr.AbortReason, fmt.Sprintf("%d %s clients exited unexpectedly (%s)", n, k.kind, k.reason))
		}
		if sr.Reached {
			sr.Generator = l.stepGenerator(i, stepOps)
		}
		if g := sr.Generator; g != nil && g.Saturated {
			if r.Generator == nil {
				r.Generator = &GeneratorSummary{}
			}
			r.Generator.Saturated = true
			r.Generator.Steps = append(r.Generator.Steps, l.stepLabel(i))
			r.Generator.Reason = joinReason(r.Generator.Reason, "step "+l.stepLabel(i)+": "+g.Reason)
			if l.base.Abort.FailOnGeneratorSaturation && !cutHere {
				sr.AbortReason = joinReason(sr.AbortReason, "generator saturated: "+g.Reason+" (fail_on_generator_saturation)")
			}
		}
		r.Steps = append(r.Steps, sr)
	}
	sd := ShutdownReport{GraceS: GracefulStop.Seconds(), Ops: opsReport(a.merged([]int{2 * len(l.plan)}, nil, -1))}
	for _, o := range sd.Ops {
		sd.Failures += o.Errors
	}
	if r.Abort != nil && r.Abort.Step == ShutdownStep {
		sd.AbortedAtS = r.Abort.AtS // cut by the abort: not judged
	} else {
		sd.AbortReason = judge(l.base.Abort, sd.Ops)
	}
	for k, n := range a.exitsByStep[len(l.plan)] {
		sd.AbortReason = joinReason(sd.AbortReason, fmt.Sprintf("%d %s clients cancelled at the end of the grace (%s)", n, k.kind, k.reason))
	}
	r.Shutdown = sd
	if r.Abort != nil {
		addCut := func(ops map[string]*OpReport) {
			for op, o := range ops {
				if o.Cut > 0 {
					r.Abort.Cut[op] += o.Cut
				}
			}
		}
		for _, s := range r.Steps {
			addCut(s.Ops)
		}
		addCut(sd.Ops)
	}
	r.Warnings = append(throttleWarnings(r.Steps, sd), relayLimitWarnings(l.base, r.RelayLimits)...)
	if l.identityWarning != "" {
		r.Warnings = append(r.Warnings, l.identityWarning)
	}
	r.Expected = l.expected.report()
	for _, e := range r.Expected {
		if e.Level == expect.LevelWarn && e.Count > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d expected errors (%s): not counted as failures", e.Count, e.Rule))
		}
	}
	for k, n := range a.exits {
		r.ClientExits = append(r.ClientExits, ExitReport{Kind: k.kind, Reason: k.reason, Count: n})
	}
	sort.Slice(r.ClientExits, func(i, j int) bool {
		if r.ClientExits[i].Kind != r.ClientExits[j].Kind {
			return r.ClientExits[i].Kind < r.ClientExits[j].Kind
		}
		return r.ClientExits[i].Reason < r.ClientExits[j].Reason
	})
	if r.ClientExits == nil {
		r.ClientExits = []ExitReport{}
	}
	r.ExitSamples = append([]string(nil), a.exitTexts...)
	for k, n := range a.interrupted {
		if n > 0 {
			if r.Interrupted == nil {
				r.Interrupted = map[string]int64{}
			}
			r.Interrupted[scenario.Kind(k).String()] = n
		}
	}
	if r.SetupError != "" {
		r.AbortReason = "setup: " + r.SetupError
	}
	for _, s := range r.Steps {
		if r.AbortReason != "" {
			break
		}
		if s.AbortReason != "" {
			r.AbortReason = fmt.Sprintf("step %d: %s", s.Index, s.AbortReason)
			break
		}
	}
	if r.AbortReason == "" && sd.AbortReason != "" {
		r.AbortReason = "shutdown: " + sd.AbortReason
	}
	if r.AbortReason == "" && len(failedThresholds) > 0 {
		r.AbortReason = "thresholds crossed: " + strings.Join(failedThresholds, ", ")
	}
	if r.AbortReason == "" && len(r.Interrupted) > 0 {
		r.AbortReason = "the run was interrupted before its end (a signal or test.abort())"
	}
	if r.AbortReason == "" && l.m != nil {
		// A run cut short or failed as a whole: what the clients saw cannot
		// make it a pass (custom scripts have no built-in clients to cut).
		r.AbortReason = l.m.runEndReason()
	}
	r.Durability, r.Unacked, r.Sweep, r.Profile = l.durability, l.unackedRep, l.swept, profile
	if why := profileFailure(profile); r.AbortReason == "" && why != "" {
		r.AbortReason = why
	}
	r.RelayLogs = l.m.relayLogs
	for _, lg := range r.RelayLogs {
		if r.AbortReason == "" && lg.Failed() {
			r.AbortReason = fmt.Sprintf("relay log %s: %d error lines, at most %d allowed", lg.Source, lg.Counted, lg.Max)
		}
	}
	if s := r.Sweep; r.AbortReason == "" && s != nil && !s.OK {
		r.AbortReason = "post-run sweep: " + s.Error
	}
	if d := r.Durability; r.AbortReason == "" && d != nil && d.Missing > 0 {
		r.AbortReason = fmt.Sprintf("durability: %d acknowledged events missing when read back (%v)", d.Missing, d.MissingIDs)
	}
	if u := r.Unacked; r.AbortReason == "" && u != nil && u.DeliveredRefused+u.StoredRefused > 0 {
		r.AbortReason = fmt.Sprintf("durability: the relay refused events it then delivered (%d) or stored (%d): %v", u.DeliveredRefused, u.StoredRefused, u.RefusedIDs)
	}
	r.OK = r.AbortReason == ""
	r.Checks = checksOf(r)
	r.CheckCounts = countChecks(r.Checks)
	if len(windows) > 0 {
		r.WindowSecs, r.Windows = every.Seconds(), windows
	}
	return r
}

func copyCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// throttleWarnings names every operation that was throttled more often than
// it succeeded over the run: throttles are not errors, so such a run can
// pass while the relay refused most of what it was sent.
func throttleWarnings(steps []StepReport, sd ShutdownReport) []string {
	type tally struct{ ok, thr int64 }
	sum := map[string]*tally{}
	add := func(ops map[string]*OpReport) {
		for op, o := range ops {
			t := sum[op]
			if t == nil {
				t = &tally{}
				sum[op] = t
			}
			t.ok += o.OK
			t.thr += o.Throttled
		}
	}
	for _, s := range steps {
		add(s.Ops)
	}
	add(sd.Ops)
	var out []string
	for _, op := range sortedOps(sum) {
		if t := sum[op]; t.thr > t.ok {
			out = append(out, fmt.Sprintf("%s: %d throttled, %d ok — the relay's rate limits refused more than they let through", op, t.thr, t.ok))
		}
	}
	return out
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func stepsJSON(l *loaded) []map[string]any {
	var out []map[string]any
	for i, st := range l.plan {
		out = append(out, map[string]any{"index": i, "users": st.Users, "start_s": st.Start.Seconds(),
			"ramp_end_s": st.RampEnd.Seconds(), "end_s": st.End.Seconds()})
	}
	return out
}
