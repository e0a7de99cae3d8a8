package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/logscan"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Input is everything a report is built from besides the aggregation: the
// run's shape and the verdict's other sides, each gathered by the run
// driver (extension) before Build.
type Input struct {
	RunID, File string
	Shard       string // "i/n" in a sharded run, else ""
	DesktopMode string
	Abort       scenario.Abort
	MaxDrift    float64 // [verify] max_drift
	Version     string  // buzzload's
	Target      string  // the relay's WebSocket URL, or "embedded"
	Plan        []scenario.StepPlan
	// Clients are the clients planned at each step's users, by kind.
	Clients []map[string]int
	// Warmup is the warm-up's length (0: none); GracefulStop the shutdown
	// grace.
	Warmup, GracefulStop time.Duration
	RelayLimits          []RelayLimit
	Seed                 *SetupResult
	SetupError           string
	// CPU is the generator's CPU per step (len(Plan)+1; nil: not measured)
	// on Cores cores.
	CPU   []CPUCell
	Cores int
	// Rules are the [abort] rules as thresholds (k6options.Build's).
	Rules Rules
	// Warnings are the run driver's own (relay limits, identities).
	Warnings         []string
	Expected         []ExpectedReport
	ThresholdsFailed []string
	// RunEnd is why the run as a whole failed ("" when it did not).
	RunEnd     string
	Durability *DurabilityReport
	Unacked    *UnackedReport
	Ledger     *LedgerReport
	// Drills are the run's drills and disruptions (modules/drill);
	// StartUnixMs the timeline's start, which their moments count from.
	Drills      []DrillReport
	StartUnixMs int64
	Sweep       *SweepReport
	Profile     *ProfileVerdict
	RelayLogs   []*logscan.Result
	// RelayMetrics are the relay's own series (issue 45); Connections the
	// WebSocket connections the run opened, for its findings.
	RelayMetrics *RelayMetricsReport
	Connections  int64
	AckedByKind  map[string]int64 // events acknowledged to the clients, by Buzz's kind label
	Outputs      []OutputDelivery
	WindowSecs   float64
	Windows      []WindowReport
}

// Build is the report of a run: a pure function of its input and the
// aggregation's totals.
func Build(in Input, t Totals) *Report {
	r := &Report{RunID: in.RunID, Scenario: in.File, Shard: in.Shard, DesktopMode: in.DesktopMode,
		Limits: LimitsOf(in.Abort), ThresholdsFailed: in.ThresholdsFailed, RelayLimits: in.RelayLimits,
		Seed: in.Seed, SetupError: in.SetupError}
	if len(t.Setup) > 0 {
		r.Setup = opsReport(t.Setup)
	}
	if in.Warmup > 0 {
		r.Warmup = &WarmupReport{Secs: in.Warmup.Seconds(), Ops: opsReport(t.Warmup)}
	}
	abortOff := abortOffset(t)
	if abortOff >= 0 {
		r.Abort = &AbortReport{AtS: round3(abortOff.Seconds()), Step: StepLabel(in.Plan, StepIndex(in.Plan, abortOff)), Cut: map[string]int64{}}
	}
	for i := range in.Plan {
		r.Steps = append(r.Steps, buildStep(in, t, i, abortOff, r))
	}
	r.Shutdown = buildShutdown(in, t, r.Abort)
	if r.Abort != nil {
		addCuts(r)
		r.Abort.ByRule = abortRule(in, r, abortOff)
	}
	for _, th := range r.ThresholdsFailed {
		if name, expr, ok := strings.Cut(th, ": "); ok && in.Rules != nil && in.Rules.built(name, expr) {
			r.RuleThresholdsFailed = append(r.RuleThresholdsFailed, th)
		}
	}
	r.Warnings = append(throttleWarnings(r.Steps, r.Shutdown), in.Warnings...)
	r.Expected = in.Expected
	for _, e := range r.Expected {
		if e.Level == expect.LevelWarn && e.Count > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d expected errors (%s): not counted as failures", e.Count, e.Rule))
		}
	}
	r.ClientExits, r.ExitSamples, r.Interrupted = clientExits(t)
	r.Durability, r.Unacked, r.Sweep, r.Profile, r.RelayLogs = in.Durability, in.Unacked, in.Sweep, in.Profile, in.RelayLogs
	r.Outputs, r.Ledger = in.Outputs, in.Ledger
	r.Drills = append([]DrillReport{}, in.Drills...)
	fillDrillLedger(r.Drills, r.Ledger, in.StartUnixMs)
	if m := in.RelayMetrics; m != nil {
		cp := *m
		cp.Run = clientCounts(r, in.Connections, in.AckedByKind)
		cp.TimelineStartUnixMs = in.StartUnixMs
		r.RelayMetrics = &cp
	}
	r.Limits.MaxDrift = in.MaxDrift
	r.Version, r.Target = in.Version, in.Target
	r.Drift = Drift(in.Windows, r.Steps, in.Warmup.Seconds(), in.MaxDrift, in.Abort.MaxErrorRate, in.Abort.MaxP99Ms)
	r.AbortReason = verdict(r, in.RunEnd)
	r.OK = r.AbortReason == ""
	r.Checks = checksOf(r)
	r.CheckCounts = countChecks(r.Checks)
	if len(in.Windows) > 0 {
		r.WindowSecs, r.Windows = in.WindowSecs, in.Windows
	}
	return r
}

// abortOffset is the abort's moment on the timeline (-1: no abort).
func abortOffset(t Totals) time.Duration {
	if t.AbortAt.IsZero() || t.Start.IsZero() {
		return -1
	}
	return max(0, t.AbortAt.Sub(t.Start))
}

// buildStep is step i's report: its operations, whether it was reached,
// cut or judged against the abort limits, and the generator's health.
func buildStep(in Input, t Totals, i int, abortOff time.Duration, r *Report) StepReport {
	st := in.Plan[i]
	stepOps := t.Steps[i]
	sr := StepReport{Index: i, Users: st.Users, StartS: st.Start.Seconds(), RampEndS: st.RampEnd.Seconds(),
		EndS: st.End.Seconds(), Clients: in.Clients[i], ClientsStarted: copyCounts(t.FirstSessions[i]),
		Ops: opsReport(stepOps)}
	// Reached: the timeline got into the step (an abort before its start
	// leaves it unreached, whatever settled at the abort).
	sr.Reached = len(sr.Ops) > 0 && (abortOff < 0 || abortOff >= st.Start)
	cutHere := abortOff >= st.Start && abortOff < st.End
	switch {
	case cutHere:
		sr.AbortedAtS = round3(abortOff.Seconds())
	case sr.Reached:
		sr.AbortReason = judge(in.Abort, sr.Ops)
	}
	var unavailable int64
	for _, o := range sr.Ops {
		unavailable += o.Unavailable
	}
	if unavailable > 0 {
		sr.LatencyInvalid = fmt.Sprintf("the relay's shared limiter was unavailable (%d answers \"rate-limited: shared admission unavailable\"): the step's latencies are no capacity claim", unavailable)
	}
	for _, k := range sortedExits(t.ExitsByStep[i]) {
		sr.AbortReason = joinReason(sr.AbortReason, fmt.Sprintf("%d %s clients exited unexpectedly (%s)", t.ExitsByStep[i][k], k.Kind, k.Reason))
	}
	if sr.Reached {
		var cell CPUCell
		if i < len(in.CPU) {
			cell = in.CPU[i]
		}
		sr.Generator = StepGenerator(cell, in.Cores, stepOps, in.Abort.GeneratorMaxLagMs)
	}
	if g := sr.Generator; g != nil && g.Saturated {
		if r.Generator == nil {
			r.Generator = &GeneratorSummary{}
		}
		label := StepLabel(in.Plan, i)
		r.Generator.Saturated = true
		r.Generator.Steps = append(r.Generator.Steps, label)
		r.Generator.Reason = joinReason(r.Generator.Reason, "step "+label+": "+g.Reason)
		if in.Abort.FailOnGeneratorSaturation && !cutHere {
			sr.AbortReason = joinReason(sr.AbortReason, "generator saturated: "+g.Reason+" (fail_on_generator_saturation)")
		}
	}
	return sr
}

// buildShutdown is what settled after the last hold, judged by the same
// limits unless the abort cut it.
func buildShutdown(in Input, t Totals, abort *AbortReport) ShutdownReport {
	sd := ShutdownReport{GraceS: in.GracefulStop.Seconds(), Ops: opsReport(t.Shutdown)}
	for _, o := range sd.Ops {
		sd.Failures += o.Errors
	}
	if abort != nil && abort.Step == ShutdownStep {
		sd.AbortedAtS = abort.AtS // cut by the abort: not judged
	} else {
		sd.AbortReason = judge(in.Abort, sd.Ops)
	}
	last := t.ExitsByStep[len(in.Plan)]
	for _, k := range sortedExits(last) {
		sd.AbortReason = joinReason(sd.AbortReason, fmt.Sprintf("%d %s clients cancelled at the end of the grace (%s)", last[k], k.Kind, k.Reason))
	}
	return sd
}

// addCuts totals what the abort cut, by op.
func addCuts(r *Report) {
	add := func(ops map[string]*OpReport) {
		for op, o := range ops {
			if o.Cut > 0 {
				r.Abort.Cut[op] += o.Cut
			}
		}
	}
	for _, s := range r.Steps {
		add(s.Ops)
	}
	add(r.Shutdown.Ops)
}

// clientExits lists the unexpected exits by kind and reason, a few of their
// texts, and the clients an abort interrupted.
func clientExits(t Totals) ([]ExitReport, []string, map[string]int64) {
	exits := []ExitReport{}
	for _, k := range sortedExits(t.Exits) {
		exits = append(exits, ExitReport{Kind: k.Kind, Reason: k.Reason, Count: t.Exits[k]})
	}
	var interrupted map[string]int64
	for k, n := range t.Interrupted {
		if n > 0 {
			if interrupted == nil {
				interrupted = map[string]int64{}
			}
			interrupted[scenario.Kind(k).String()] = n
		}
	}
	return exits, append([]string(nil), t.ExitTexts...), interrupted
}

// sortedExits orders exit keys by kind, then reason.
func sortedExits(m map[ExitKey]int64) []ExitKey {
	keys := make([]ExitKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Kind != keys[j].Kind {
			return keys[i].Kind < keys[j].Kind
		}
		return keys[i].Reason < keys[j].Reason
	})
	return keys
}

// verdict is why the run failed ("" when it passed): the first of the
// setup, a step, the shutdown, the thresholds, an interruption, the run's
// own end, the profile, the relay's logs, the sweep and the audits.
func verdict(r *Report, runEnd string) string {
	if r.SetupError != "" {
		return "setup: " + r.SetupError
	}
	for _, s := range r.Steps {
		if s.AbortReason != "" {
			return fmt.Sprintf("step %d: %s", s.Index, s.AbortReason)
		}
	}
	switch {
	case r.Shutdown.AbortReason != "":
		return "shutdown: " + r.Shutdown.AbortReason
	case len(r.ThresholdsFailed) > 0:
		return "thresholds crossed: " + strings.Join(r.ThresholdsFailed, ", ")
	case len(r.Interrupted) > 0:
		return "the run was interrupted before its end (a signal or test.abort())"
	case runEnd != "":
		// A run cut short or failed as a whole: what the clients saw cannot
		// make it a pass (custom scripts have no built-in clients to cut).
		return runEnd
	}
	if why := profileFailure(r.Profile); why != "" {
		return why
	}
	for _, lg := range r.RelayLogs {
		if lg.Failed() {
			return fmt.Sprintf("relay log %s: %d error lines, at most %d allowed", lg.Source, lg.Counted, lg.Max)
		}
	}
	if s := r.Sweep; s != nil && !s.OK {
		return "post-run sweep: " + s.Error
	}
	if why := ledgerFailure(r.Ledger); why != "" {
		return why
	}
	for i := range r.Drills {
		if ch := drillCheck(&r.Drills[i]); ch.Level == CheckFail {
			return ch.Name + ": " + ch.Detail
		}
	}
	if d := r.Durability; d != nil && d.Missing > 0 {
		return fmt.Sprintf("durability: %d acknowledged events missing when read back (%v)", d.Missing, d.MissingIDs)
	}
	if u := r.Unacked; u != nil && u.DeliveredRefused+u.StoredRefused > 0 {
		return fmt.Sprintf("durability: the relay refused events it then delivered (%d) or stored (%d): %v", u.DeliveredRefused, u.StoredRefused, u.RefusedIDs)
	}
	if d := r.Drift; d != nil && len(d.Failed) > 0 {
		return "drift: " + d.Failed[0]
	}
	if m := r.RelayMetrics; m != nil {
		for _, c := range relayMetricsChecks(m) {
			if c.Level == CheckFail {
				return c.Name + ": " + c.Detail
			}
		}
	}
	return ""
}

// StageIndex is the ramp stage of a moment offset from the population
// scenarios' start: 2i is step i's ramp, 2i+1 its hold (as scenario.Stages),
// and 2·len(plan) the shutdown after the last hold. A moment before the
// start counts to stage 0; a zero-length stage holds no moment.
func StageIndex(plan []scenario.StepPlan, offset time.Duration) int {
	for i, st := range plan {
		if offset < st.RampEnd {
			return 2 * i
		}
		if offset < st.End {
			return 2*i + 1
		}
	}
	return 2 * len(plan)
}

// StepIndex is the step of a moment (len(plan): the shutdown).
func StepIndex(plan []scenario.StepPlan, offset time.Duration) int {
	return StageIndex(plan, offset) / 2
}

// StepLabel is the step tag of step index i.
func StepLabel(plan []scenario.StepPlan, i int) string {
	if i >= len(plan) {
		return ShutdownStep
	}
	return strconv.Itoa(i)
}

// ShutdownStep is the step tag of what settles after the last hold.
const ShutdownStep = "shutdown"

// ruleAbortLag bounds how long after a step's end its windowed thresholds
// stop the run: they are judged at the stage's end and every 2 s.
const ruleAbortLag = 3 * time.Second

// abortRule names the step whose [abort] limits stopped the run ("" when
// something else did): a step that broke them and ended at most
// ruleAbortLag before the abort.
func abortRule(in Input, r *Report, abortOff time.Duration) string {
	for i, s := range r.Steps {
		end := in.Plan[i].End
		if s.AbortReason != "" && abortOff >= end && abortOff-end <= ruleAbortLag {
			return StepLabel(in.Plan, i)
		}
	}
	return ""
}
