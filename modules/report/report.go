package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/buzzload/buzzload/engine/metrics"
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
	Count     int64   `json:"count"` // settled: ok + errors + throttled
	OK        int64   `json:"ok"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	Errors    int64   `json:"errors"`
	ErrorRate float64 `json:"error_rate"` // errors / (ok + errors)
	Throttled int64   `json:"throttled"`
	// Unavailable: refused because the relay's shared limiter was down
	// ("rate-limited: shared admission unavailable"): not a quota throttle.
	Unavailable int64 `json:"unavailable,omitempty"`
	Expected    int64 `json:"expected,omitempty"`   // errors an [[expect]] rule matched: not in errors or the error rate
	Pending     int64 `json:"pending"`              // in flight at the end of the window (not judged)
	Started     int64 `json:"started"`              // started within the window
	Abandoned   int64 `json:"abandoned,omitempty"`  // cut short by the client's own close (a session end, the stop): an EOSE or OK it stopped waiting for
	Cut         int64 `json:"cut,omitempty"`        // cut short by the abort (not judged)
	Unfinished  int64 `json:"unfinished,omitempty"` // of errors: still in flight when the shutdown grace ended
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
	// LatencyInvalid says why the step's latencies are no capacity claim:
	// the relay's shared limiter was unavailable during it (as Buzz's own
	// harness invalidates such a cell).
	LatencyInvalid string `json:"latency_invalid,omitempty"`
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
	// ByRule names the step whose [abort] limits stopped the run, when they
	// did ("" for a signal, test.abort(), a script's own threshold): the
	// abort lands a moment past that step's end, in the next (issue 47
	// item 4: "abort at 20.001s (step 1)" beside "FAILED — step 0").
	ByRule string `json:"by_rule,omitempty"`
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
	MaxDrift     float64 `json:"max_drift,omitempty"` // [verify] max_drift (drift.go)
}

func LimitsOf(a scenario.Abort) Limits {
	return Limits{MaxP99Ms: a.MaxP99Ms, MaxErrorRate: a.MaxErrorRate, WarmupSecs: a.WarmupSecs}
}

// Report is the buzz-loadgen-style JSON report of one scenario file.
type Report struct {
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	// Version is buzzload's; Target the relay the clients went to (its
	// WebSocket URL, or "embedded"): what compare checks its arms by.
	Version string `json:"buzzload_version,omitempty"`
	Target  string `json:"target,omitempty"`
	Shard   string `json:"shard,omitempty"`
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
	// RuleThresholdsFailed are those of ThresholdsFailed that are the
	// [abort] rules as thresholds (the steps' checks say them once).
	RuleThresholdsFailed []string `json:"rule_thresholds_failed,omitempty"`
	// Expected are the [[expect]] rules (and buzz.load's) with what each
	// matched: errors counted apart, not failures.
	Expected []ExpectedReport `json:"expected,omitempty"`
	// Warnings say what passed but should not be read as healthy: an
	// operation throttled more often than it succeeded.
	Warnings []string `json:"warnings,omitempty"`
	// Checks are every judgement of the run with its level (checks.go);
	// CheckCounts tallies them.
	// Drills are the run's disruptions, declared ([[drill]]) or seen by
	// the clients (drill.go).
	Drills []DrillReport `json:"drills"`
	// Ledger is the delivery ledger: every expected delivery of the
	// events the run published, judged (ledger.go, modules/ledger).
	Ledger *LedgerReport `json:"ledger,omitempty"`
	// Durability is the audit of what the relay acknowledged (durability.go).
	Durability *DurabilityReport `json:"durability,omitempty"`
	// Unacked is what became of the events the relay never acknowledged
	// (unacked.go).
	Unacked *UnackedReport `json:"unacknowledged,omitempty"`
	// RelayLogs are the relay's own logs, scanned for error lines
	// (--relay-log, and the embedded relay's).
	RelayLogs []*logscan.Result `json:"relay_logs,omitempty"`
	// RelayMetrics are the relay's own Prometheus series beside the
	// clients' counts (--relay-metrics; the embedded relay's by default).
	RelayMetrics *RelayMetricsReport `json:"relay_metrics,omitempty"`
	// Drift compares the end of the last hold with its start (drift.go).
	Drift *DriftReport `json:"drift,omitempty"`
	// Outputs are the metric outputs' delivery counts (--out cloud,
	// experimental-prometheus-rw), each judged by an outputs check.
	Outputs []OutputDelivery `json:"outputs,omitempty"`
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

// SetupResult is what sc.setup() returns (setup data: small and JSON-able).
type SetupResult struct {
	RunID       string `json:"run_id"`
	Embedded    bool   `json:"embedded"`
	WSURL       string `json:"ws_url"`
	Communities int    `json:"communities"`
	Channels    int    `json:"channels"`
	Members     int    `json:"members"`
	Posts       int    `json:"posts"`
	Created     int    `json:"created"`
	Existing    int    `json:"existing"`
	DurationMs  int64  `json:"duration_ms"`
	// MemberTags is what the member read-back found a kind-9000 naming
	// several members to do (seed.MemberTagsFirst: Buzz; "" when none did).
	MemberTags string `json:"member_tags_applied,omitempty"`
	// RelayMembers is how many of the run's identities are NIP-43 relay
	// members, when the relay requires relay membership (else 0).
	RelayMembers int `json:"relay_members,omitempty"`
	// Role is what this instance did: "seed" (seeded, idempotently) or
	// "wait" (waited for the seeding instance, then verified; wrote nothing).
	Role string `json:"role"`
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

func (a *OpAgg) report() *OpReport {
	r := &OpReport{OK: a.ok, Errors: a.errors, Throttled: a.throttled, Unavailable: a.unavailable, Expected: a.expected, Pending: a.pending,
		Started: a.started, Abandoned: a.abandoned, Cut: a.cut, Unfinished: a.unfinished,
		Count: a.ok + a.errors + a.throttled + a.unavailable, ErrorTexts: a.errTexts.top(topErrorTexts)}
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

func opsReport(m map[string]*OpAgg) map[string]*OpReport {
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
	for _, name := range SortedOps(ops) {
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
	for _, op := range SortedOps(sum) {
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
