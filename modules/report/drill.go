package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DrillReport is one disruption of the run (issue 42): a declared drill
// ([[drill]]) or one the clients saw that nobody declared (a deploy, a
// node that died), from every WebSocket of the run.
type DrillReport struct {
	Kind     string `json:"kind"`     // restart, stall, …, or "detected"
	Declared bool   `json:"declared"` // false: detected from the clients' side only
	AtMs     int64  `json:"at_ms"`    // into the run (the timeline's start)
	// EndMs is the last close or failure of the disruption (into the run).
	EndMs int64 `json:"end_ms"`
	// Closes by close code ("1012": n; "1006" a socket that ended without
	// one), and connection attempts that failed during it.
	Closes   map[string]int64 `json:"closes"`
	Reasons  map[string]int64 `json:"reasons,omitempty"` // close reasons as sent, counted
	Failures int64            `json:"connect_failures"`
	// Affected clients had a connection closed; Reconnected of them
	// connected (and authenticated) again, Resubscribed had every
	// subscription they had back past its EOSE.
	Affected     int64       `json:"affected"`
	Reconnected  int64       `json:"reconnected"`
	Resubscribed int64       `json:"resubscribed"`
	ReconnectMs  Percentiles `json:"reconnect_ms"`
	ResubMs      Percentiles `json:"resubscribed_ms"`
	// The reconnect herd: connections made per second from the first close
	// until every affected client was back (peak and p99 of the seconds).
	HerdPeak int64 `json:"herd_peak_per_sec"`
	HerdP99  int64 `json:"herd_p99_per_sec"`
	// Errors are the clients' errors during a declared drill, by
	// operation: its consequences, counted apart (not judged by [abort]).
	Errors map[string]int64 `json:"errors,omitempty"`
	// Throttled are the throttles during it (a limiter outage's answers),
	// SlowestMs the longest operation that succeeded in it, SlowestOp its
	// name: when the traffic a stall or a slow store held flowed again.
	Throttled map[string]int64 `json:"throttled,omitempty"`
	SlowestMs float64          `json:"slowest_ms,omitempty"`
	SlowestOp string           `json:"slowest_op,omitempty"`
	// Publishes in flight at a close, settled as lost with the connection.
	LostInFlight int64 `json:"lost_in_flight"`
	// Deliveries the ledger saw missed live during the disruption (the
	// first close to 30 s after the last), and how many were recovered.
	Missed    int64 `json:"missed"`
	Recovered int64 `json:"recovered"`
	// RelayClosed is how many sockets the embedded relay itself closed for
	// a declared drill: the relay's side of the count.
	RelayClosed int64 `json:"relay_closed,omitempty"`
	// Command is a declared drill's command, as it ran.
	Command *DrillCommand `json:"command,omitempty"`
	// Note says what the drill could not do or measure.
	Note string `json:"note,omitempty"`
	// RecoverWithinMs is [verify] drill_recover_within_secs.
	RecoverWithinMs float64 `json:"recover_within_ms"`
}

// Percentiles are a small distribution's p50, p99 and max.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// PercentilesOf the values (nearest rank; zero for none).
func PercentilesOf(vs []float64) Percentiles {
	if len(vs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Percentiles{P50: at(0.5), P99: at(0.99), Max: s[len(s)-1]}
}

// DrillCommand is a drill's command as it ran where buzzload runs.
type DrillCommand struct {
	Argv     []string `json:"argv"`
	ExitCode int      `json:"exit_code"`
	Output   string   `json:"output"` // its first bytes (stdout and stderr)
	Error    string   `json:"error,omitempty"`
	Ms       float64  `json:"ms"`
}

// closesText is "18 × 1012" style, codes in order.
func closesText(m map[string]int64) string {
	var codes []string
	for c := range m {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool { a, _ := strconv.Atoi(codes[i]); b, _ := strconv.Atoi(codes[j]); return a < b })
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d × %s", m[c], c))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// drillName names a drill in checks and text.
func drillName(d *DrillReport) string {
	if d.Declared {
		return fmt.Sprintf("drill %s at %.1fs", d.Kind, float64(d.AtMs)/1000)
	}
	return fmt.Sprintf("disruption at %.1fs (not declared)", float64(d.AtMs)/1000)
}

// drillCheck: every affected client back (resubscribed) within the limit
// fails otherwise; a disruption nobody declared warns even when everyone
// came back; a command that failed fails.
func drillCheck(d *DrillReport) Check {
	name := drillName(d)
	switch {
	case d.Command != nil && (d.Command.ExitCode != 0 || d.Command.Error != ""):
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("its command %v failed: exit %d %s", d.Command.Argv, d.Command.ExitCode, d.Command.Error)}
	case d.Resubscribed < d.Affected:
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("%d of %d affected clients not back with every subscription by the end (%d reconnected)", d.Affected-d.Resubscribed, d.Affected, d.Reconnected)}
	case d.RecoverWithinMs > 0 && d.ResubMs.Max > d.RecoverWithinMs:
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("the last client was back after %s, more than %s", msText(d.ResubMs.Max), msText(d.RecoverWithinMs))}
	case !d.Declared:
		return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("closes %s, %d connect failures; all %d affected clients back within %s", closesText(d.Closes), d.Failures, d.Affected, msText(d.ResubMs.Max))}
	}
	return Check{Name: name, Level: CheckPass, Detail: fmt.Sprintf("closes %s; all %d affected clients back within %s", closesText(d.Closes), d.Affected, msText(d.ResubMs.Max))}
}

// drillText is the console's block for one drill.
func drillText(d *DrillReport, tc func(string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  %s: closes %s", tc(drillName(d)), closesText(d.Closes))
	if len(d.Reasons) > 0 {
		var rs []string
		for r, n := range d.Reasons {
			rs = append(rs, fmt.Sprintf("%d %q", n, r))
		}
		sort.Strings(rs)
		fmt.Fprintf(&b, " (%s)", tc(strings.Join(rs, ", ")))
	}
	fmt.Fprintf(&b, ", %d connect failures over %s\n", d.Failures, msText(float64(d.EndMs-d.AtMs)))
	if d.Affected+d.Failures > 0 { // a drill that closed nothing has no one to bring back
		fmt.Fprintf(&b, "    clients: %d affected, %d reconnected (p50 %s p99 %s max %s), %d resubscribed (p50 %s p99 %s max %s)\n",
			d.Affected, d.Reconnected, msText(d.ReconnectMs.P50), msText(d.ReconnectMs.P99), msText(d.ReconnectMs.Max),
			d.Resubscribed, msText(d.ResubMs.P50), msText(d.ResubMs.P99), msText(d.ResubMs.Max))
		fmt.Fprintf(&b, "    reconnect herd: peak %d/s, p99 %d/s; publishes lost in flight %d\n", d.HerdPeak, d.HerdP99, d.LostInFlight)
	}
	fmt.Fprintf(&b, "    deliveries missed live during it %d, recovered %d\n", d.Missed, d.Recovered)
	if len(d.Errors)+len(d.Throttled) > 0 || d.SlowestMs > 0 {
		fmt.Fprintf(&b, "    during it: errors %s (its own, not judged by [abort]); throttled %s; slowest success %s",
			tc(opCounts(d.Errors)), tc(opCounts(d.Throttled)), msText(d.SlowestMs))
		if d.SlowestOp != "" {
			fmt.Fprintf(&b, " (%s)", tc(d.SlowestOp))
		}
		b.WriteString("\n")
	}
	if c := d.Command; c != nil {
		fmt.Fprintf(&b, "    command %s: exit %d in %s", tc(strings.Join(c.Argv, " ")), c.ExitCode, msText(c.Ms))
		if c.Error != "" {
			fmt.Fprintf(&b, " (%s)", tc(c.Error))
		}
		b.WriteString("\n")
	}
	if d.Note != "" {
		fmt.Fprintf(&b, "    ! %s\n", tc(d.Note))
	}
	return b.String()
}

// fillDrillLedger counts the ledger's missed pairs that fell in each
// drill's window (its first close to 30 s after its last) and how many
// of them were recovered, from the report's missed list.
func fillDrillLedger(ds []DrillReport, lg *LedgerReport, startMs int64) {
	if lg == nil || startMs == 0 {
		return
	}
	for i := range ds {
		d := &ds[i]
		from, to := startMs+d.AtMs, startMs+d.EndMs+30_000
		d.Missed, d.Recovered = 0, 0
		for _, m := range lg.Missed {
			if m.LiveMissedAt >= from && m.LiveMissedAt <= to {
				d.Missed++
				if m.RecoveredMs != nil || m.ReceivedLateMs != nil {
					d.Recovered++
				}
			}
		}
	}
}

// mergeDrills folds the instances' drills of a distributed run: entries of
// one kind within 10 s of each other (the instances' timelines start
// together) are one disruption, their counts added and their percentiles
// the worst instance's (an upper bound).
func mergeDrills(reps []*Report) []DrillReport {
	var all []DrillReport
	for _, r := range reps {
		all = append(all, r.Drills...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].AtMs < all[j].AtMs })
	out := []DrillReport{}
	for _, d := range all {
		if n := len(out); n > 0 {
			o := &out[n-1]
			if o.Kind == d.Kind && o.Declared == d.Declared && d.AtMs-o.AtMs < 10_000 {
				o.EndMs = max(o.EndMs, d.EndMs)
				for c, k := range d.Closes {
					o.Closes[c] += k
				}
				for c, k := range d.Reasons {
					if o.Reasons == nil {
						o.Reasons = map[string]int64{}
					}
					o.Reasons[c] += k
				}
				o.Failures += d.Failures
				o.Affected += d.Affected
				o.Reconnected += d.Reconnected
				o.Resubscribed += d.Resubscribed
				o.ReconnectMs = worst(o.ReconnectMs, d.ReconnectMs)
				o.ResubMs = worst(o.ResubMs, d.ResubMs)
				o.HerdPeak += d.HerdPeak
				o.HerdP99 += d.HerdP99
				o.LostInFlight += d.LostInFlight
				o.Errors, o.Throttled = addCounts(o.Errors, d.Errors), addCounts(o.Throttled, d.Throttled)
				if d.SlowestMs > o.SlowestMs {
					o.SlowestMs, o.SlowestOp = d.SlowestMs, d.SlowestOp
				}
				o.Missed += d.Missed
				o.Recovered += d.Recovered
				if o.Command == nil && d.Command != nil {
					o.Command, o.Note = d.Command, d.Note // the performer's, not a runner that kept the window
				}
				continue
			}
		}
		c := d
		c.Errors, c.Throttled = addCounts(nil, d.Errors), addCounts(nil, d.Throttled)
		c.Closes = map[string]int64{}
		for k, v := range d.Closes {
			c.Closes[k] = v
		}
		out = append(out, c)
	}
	return out
}

func worst(a, b Percentiles) Percentiles {
	return Percentiles{P50: max(a.P50, b.P50), P99: max(a.P99, b.P99), Max: max(a.Max, b.Max)}
}

// opCounts is "connect 34, http_query 1", or "none".
func opCounts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var ops []string
	for op, n := range m {
		ops = append(ops, fmt.Sprintf("%s %d", op, n))
	}
	sort.Strings(ops)
	return strings.Join(ops, ", ")
}

// addCounts adds b's counts into a (a copy when a is nil).
func addCounts(a, b map[string]int64) map[string]int64 {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = map[string]int64{}
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}
