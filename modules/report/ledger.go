package report

import (
	"fmt"
	"strings"
)

// LedgerReport is the delivery ledger's outcome (issue 40, modules/ledger):
// for the events the run published (all, or a sample chosen by id), which
// of the run's own live subscriptions should have received each one, and
// what became of every such (event, subscription) pair.
type LedgerReport struct {
	// Sample is the share of events judged ([verify] ledger_sample).
	Sample float64 `json:"sample"`
	// Events counts the acknowledged events judged; Skipped the ones left
	// out because the ledger's memory budget was full.
	Events  int64 `json:"events"`
	Skipped int64 `json:"skipped_events,omitempty"`
	LedgerCounts
	// MaxLost is [verify] max_lost: more lost pairs fail the run.
	MaxLost int64 `json:"max_lost"`
	// PatienceMs and DueMs are the ledger's timings (modules/ledger
	// Config), which a merge replays the runners' journals with.
	PatienceMs float64 `json:"patience_ms"`
	DueMs      float64 `json:"due_ms"`
	// Journal names this runner's journal of the ledger's calls (beside
	// its result file), which `buzzload merge` joins with the other
	// runners' into the ledger of the whole run; Joined says the report's
	// ledger is that join.
	Journal string `json:"journal,omitempty"`
	Joined  int    `json:"joined_runners,omitempty"`
	// Visibility is how soon a member could read what was acknowledged.
	Visibility *VisibilityReport `json:"visibility,omitempty"`
	// Rows are the counts per step, event class and width class.
	Rows []LedgerRow `json:"rows"`
	// Missed lists the first missed pairs (ids and pubkeys as 64-character
	// lower-case hex), Leaked the first leaks; the counts are complete.
	Missed []LedgerMiss `json:"missed"`
	Leaked []LedgerLeak `json:"leaked"`
}

// LedgerCounts are the ledger's tallies over (event, subscription) pairs.
type LedgerCounts struct {
	// Expected pairs: the subscription matched the event when the relay
	// acknowledged it (its EOSE had arrived before the publish was sent).
	Expected int64 `json:"expected"`
	// Received live on that subscription (ReceivedLate of them after the
	// ledger had declared them missed).
	Received     int64 `json:"received"`
	ReceivedLate int64 `json:"received_late"`
	// Recovered: missed live, later read by the recipient anyway (history,
	// /query); Lost: neither, by the end of the run.
	Recovered int64 `json:"recovered"`
	Lost      int64 `json:"lost"`
	// Unjudged: pairs in an ambiguous state (the subscription ended
	// between the send and the OK, or the client closed it soon after).
	Unjudged   int64 `json:"unjudged"`
	Duplicates int64 `json:"duplicates"`
	Inversions int64 `json:"inversions"`
	Leaks      int64 `json:"leaks"`
	// Reach is Received ÷ (Expected − Unjudged); nil when nothing was judged.
	Reach *float64 `json:"reach"`
	// Fan-out completion: the OK → the last expected live delivery, over
	// the events every expected recipient received live.
	CompletionP50Ms float64 `json:"completion_p50_ms"`
	CompletionP99Ms float64 `json:"completion_p99_ms"`
	Completed       int64   `json:"completed"`
}

// Judged is the pairs the ledger judged.
func (c *LedgerCounts) Judged() int64 { return c.Expected - c.Unjudged }

// SetReach computes Reach from the counts.
func (c *LedgerCounts) SetReach() {
	c.Reach = nil
	if j := c.Judged(); j > 0 {
		r := float64(c.Received) / float64(j)
		c.Reach = &r
	}
}

// LedgerRow is the ledger of one step, event class and width class.
type LedgerRow struct {
	Step  string `json:"step"`
	Class string `json:"class"` // message, thread_reply, typing, presence, dm, … (" via http" for HTTP publishes)
	Width string `json:"width"` // the expected recipients: ≤10, ≤100, ≤1000, >1000
	LedgerCounts
}

// LedgerMiss is one expected pair the relay did not deliver live.
type LedgerMiss struct {
	Event        string `json:"event"`
	Recipient    string `json:"recipient"`
	Channel      string `json:"channel"`
	Subscription string `json:"subscription"`
	// LiveMissedAt is when the live delivery was declared missed (unix ms):
	// the subscription's end, or the OK plus the ledger's patience.
	LiveMissedAt int64 `json:"live_missed_at"`
	// RecoveredMs is the delay from LiveMissedAt to the recipient's read of
	// the event (nil: never read, lost).
	RecoveredMs *float64 `json:"recovered_ms"`
	// ReceivedLateMs: the live delivery came after all, this long after
	// LiveMissedAt (counted received and late).
	ReceivedLateMs *float64 `json:"received_late_ms,omitempty"`
}

// LedgerLeak is one event delivered where it must not be.
type LedgerLeak struct {
	Event        string `json:"event"`
	Recipient    string `json:"recipient"`
	Channel      string `json:"channel"`
	Subscription string `json:"subscription"`
	Rule         string `json:"rule"`
	At           int64  `json:"at"` // unix ms
}

// LedgerCheck is the ledger as a check: a leak or more lost pairs than
// max_lost fail; recovered, late and inverted deliveries warn.
func LedgerCheck(l *LedgerReport) Check {
	name := "delivery ledger"
	c := &l.LedgerCounts
	switch {
	case c.Leaks > 0:
		lk := l.Leaked[0]
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("%d leaks: event %s reached %s (%s)", c.Leaks, lk.Event, lk.Recipient, lk.Rule)}
	case c.Lost > l.MaxLost:
		ev, to := firstLost(l)
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("%d of %d expected deliveries lost (max_lost %d), e.g. event %s to %s", c.Lost, c.Expected, l.MaxLost, ev, to)}
	case c.Judged() == 0:
		return Check{Name: name, Level: CheckSkip, Detail: "no delivery was expected (no subscriber matched an acknowledged event)"}
	}
	var warn []string
	if c.Lost > 0 {
		warn = append(warn, fmt.Sprintf("%d lost (within max_lost %d)", c.Lost, l.MaxLost))
	}
	if c.Recovered > 0 {
		warn = append(warn, fmt.Sprintf("%d missed live and recovered by a later read", c.Recovered))
	}
	if c.ReceivedLate > 0 {
		warn = append(warn, fmt.Sprintf("%d delivered late", c.ReceivedLate))
	}
	if c.Inversions > 0 {
		warn = append(warn, fmt.Sprintf("%d order inversions", c.Inversions))
	}
	if c.Duplicates > 0 {
		warn = append(warn, fmt.Sprintf("%d duplicates", c.Duplicates))
	}
	if v := l.Visibility; v != nil && v.TimedOut > 0 {
		warn = append(warn, fmt.Sprintf("%d of %d probed messages not readable by a member within %s of their OK", v.TimedOut, v.Probed, msText(v.TimeoutMs)))
	}
	if len(warn) > 0 {
		return Check{Name: name, Level: CheckWarn, Detail: strings.Join(warn, ", ")}
	}
	return Check{Name: name, Level: CheckPass, Detail: fmt.Sprintf("reach %s: all %d judged deliveries arrived live", reachText(c.Reach), c.Judged())}
}

// firstLost is the first listed lost pair's event and recipient.
func firstLost(l *LedgerReport) (event, recipient string) {
	for _, m := range l.Missed {
		if m.RecoveredMs == nil && m.ReceivedLateMs == nil {
			return m.Event, m.Recipient
		}
	}
	return "(not listed)", "(not listed)"
}

// ledgerFailure is the verdict's reason when the ledger fails the run.
func ledgerFailure(l *LedgerReport) string {
	if l == nil {
		return ""
	}
	if ch := LedgerCheck(l); ch.Level == CheckFail {
		return "delivery ledger: " + ch.Detail
	}
	return ""
}

func reachText(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *r)
}

// ledgerText is the console's ledger block: one line for the run, one per
// step, then the lost pairs and the leaks (at most maxListed of each).
func ledgerText(l *LedgerReport, tc func(string) string) string {
	var b strings.Builder
	c := &l.LedgerCounts
	fmt.Fprintf(&b, "\n  ledger: reach %s over %d judged deliveries of %d events (%d expected, %d unjudged): %d lost, %d recovered, %d late, %d duplicates, %d inversions, %d leaks; fan-out completion p50 %s p99 %s",
		reachText(c.Reach), c.Judged(), l.Events, c.Expected, c.Unjudged, c.Lost, c.Recovered, c.ReceivedLate, c.Duplicates, c.Inversions, c.Leaks, msText(c.CompletionP50Ms), msText(c.CompletionP99Ms))
	if l.Sample < 1 {
		fmt.Fprintf(&b, " (sample %.3g)", l.Sample)
	}
	if l.Skipped > 0 {
		fmt.Fprintf(&b, " (%d events skipped: memory budget)", l.Skipped)
	}
	b.WriteString("\n")
	if v := l.Visibility; v != nil && v.Probed+v.Errors > 0 {
		fmt.Fprintf(&b, "    visibility: %d of 1 in %d messages probed by a member over /query: readable p50 %s p99 %s after the OK, %d already at the OK, %d not within %s",
			v.Probed, v.Every, msText(v.P50Ms), msText(v.P99Ms), v.AtOK, v.TimedOut, msText(v.TimeoutMs))
		if v.Errors > 0 {
			fmt.Fprintf(&b, ", %d reads failed (%s)", v.Errors, tc(v.FirstError))
		}
		if s := v.Strong; s != nil {
			fmt.Fprintf(&b, "; reading the writer (consistency strong): p50 %s p99 %s, %d at the OK", msText(s.P50Ms), msText(s.P99Ms), s.AtOK)
		}
		b.WriteString("\n")
	}
	for _, s := range stepTotals(l.Rows) {
		fmt.Fprintf(&b, "    step %-8s reach %s  expected %d  lost %d  recovered %d  unjudged %d  completion p99 %s\n",
			tc(s.Step), reachText(s.Reach), s.Expected, s.Lost, s.Recovered, s.Unjudged, msText(s.CompletionP99Ms))
	}
	listed := 0
	for _, m := range l.Missed {
		if m.RecoveredMs != nil {
			continue
		}
		if listed == maxListed {
			fmt.Fprintf(&b, "    … %d more lost (the JSON report lists up to %d)\n", c.Lost-int64(listed), MaxLedgerList)
			break
		}
		listed++
		fmt.Fprintf(&b, "    ✗ lost %s → %s (channel %s)\n", tc(m.Event), tc(m.Recipient), tc(m.Channel))
	}
	for i, lk := range l.Leaked {
		if i == maxListed {
			fmt.Fprintf(&b, "    … %d more leaks\n", c.Leaks-int64(i))
			break
		}
		fmt.Fprintf(&b, "    ✗ leak %s → %s (channel %s): %s\n", tc(lk.Event), tc(lk.Recipient), tc(lk.Channel), tc(lk.Rule))
	}
	return b.String()
}

// maxListed bounds the console's lists; MaxLedgerList the JSON report's.
const (
	maxListed     = 5
	MaxLedgerList = 10000
)

func msText(ms float64) string {
	if ms <= 0 {
		return "-"
	}
	if ms < 0.05 {
		return "<0.1ms" // not "0.0ms": it did take time
	}
	if ms < 10 {
		return fmt.Sprintf("%.1fms", ms)
	}
	if ms >= 10000 {
		return fmt.Sprintf("%.1fs", ms/1000)
	}
	return fmt.Sprintf("%.0fms", ms)
}

// stepTotals folds the rows per step, in the rows' order of steps (the
// completion p99 is the worst row's: the rows' histograms are gone).
func stepTotals(rows []LedgerRow) []LedgerRow {
	var out []LedgerRow
	at := map[string]int{}
	for _, r := range rows {
		i, ok := at[r.Step]
		if !ok {
			i = len(out)
			at[r.Step] = i
			out = append(out, LedgerRow{Step: r.Step})
		}
		o := &out[i]
		o.Add(&r.LedgerCounts)
		o.CompletionP99Ms = max(o.CompletionP99Ms, r.CompletionP99Ms)
	}
	for i := range out {
		out[i].SetReach()
	}
	return out
}

// Add sums c's tallies into o (not the percentiles, not Reach).
func (o *LedgerCounts) Add(c *LedgerCounts) {
	o.Expected += c.Expected
	o.Received += c.Received
	o.ReceivedLate += c.ReceivedLate
	o.Recovered += c.Recovered
	o.Lost += c.Lost
	o.Unjudged += c.Unjudged
	o.Duplicates += c.Duplicates
	o.Inversions += c.Inversions
	o.Leaks += c.Leaks
	o.Completed += c.Completed
}

// JoinedLedger is a distributed run's ledger for MergeReports: the join of
// its runners' journals, or nil and why there is none.
type JoinedLedger struct {
	Ledger *LedgerReport
	Why    string
}

// addLedgers sums the runners' own ledgers (nil when none has one).
func addLedgers(reps []*Report) *LedgerReport {
	var out *LedgerReport
	for _, r := range reps {
		lg := r.Ledger
		if lg == nil {
			continue
		}
		if out == nil {
			out = &LedgerReport{Sample: lg.Sample, MaxLost: lg.MaxLost, PatienceMs: lg.PatienceMs, DueMs: lg.DueMs,
				Missed: []LedgerMiss{}, Leaked: []LedgerLeak{}, Rows: []LedgerRow{}}
		}
		out.Events += lg.Events
		out.Skipped += lg.Skipped
		out.LedgerCounts.Add(&lg.LedgerCounts)
		out.CompletionP50Ms = max(out.CompletionP50Ms, lg.CompletionP50Ms)
		out.CompletionP99Ms = max(out.CompletionP99Ms, lg.CompletionP99Ms)
		out.Rows = append(out.Rows, lg.Rows...)
		out.Missed = append(out.Missed, lg.Missed...)
		out.Leaked = append(out.Leaked, lg.Leaked...)
	}
	if out != nil {
		out.Missed = out.Missed[:min(len(out.Missed), MaxLedgerList)]
		out.Leaked = out.Leaked[:min(len(out.Leaked), MaxLedgerList)]
		out.SetReach()
	}
	return out
}

// VisibilityReport is how soon acknowledged channel messages could be read
// by a member (modules/audit Visibility): a sample polled over HTTP /query
// by id from the OK on.
type VisibilityReport struct {
	Every      int     `json:"every"` // one message in this many (by id)
	Probed     int64   `json:"probed"`
	Visible    int64   `json:"visible"`
	AtOK       int64   `json:"visible_at_ok"` // the first read, right after the OK, returned it
	TimedOut   int64   `json:"timed_out"`     // not readable within TimeoutMs
	TimeoutMs  float64 `json:"timeout_ms"`
	Skipped    int64   `json:"skipped,omitempty"` // not probed: too many under way, or another started within 200 ms
	Errors     int64   `json:"errors,omitempty"`
	FirstError string  `json:"first_error,omitempty"`
	P50Ms      float64 `json:"p50_ms"` // OK → readable
	P99Ms      float64 `json:"p99_ms"`
	// Strong is the same read with "consistency": "strong" (Buzz reads
	// the writer, not a read replica), polled beside it.
	Strong *VisibilityReport `json:"strong"`
}
