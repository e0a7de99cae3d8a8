// The Buzz report as text: the steps, their verdicts and per-op lines that
// buzz.report() and the end-of-run summary print.

package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/termtext"
)

// Text renders the report for a terminal.
func (r *Report) Text() string {
	var b strings.Builder
	legend := false // the table legend, printed once
	fmt.Fprintf(&b, "\n  buzz %s (%s)", tc(r.RunID), tc(r.Scenario))
	if r.Shard != "" {
		fmt.Fprintf(&b, " shard %s", tc(r.Shard))
	}
	if r.DesktopMode != "" {
		fmt.Fprintf(&b, " desktop %s", tc(r.DesktopMode))
	}
	fmt.Fprintf(&b, "   limits: p99 <= %g ms, error rate <= %g%%\n", r.Limits.MaxP99Ms, 100*r.Limits.MaxErrorRate)
	if len(r.RelayLimits) > 0 {
		b.WriteString(limitsLine(r.RelayLimits))
	}
	if sd := r.Seed; sd != nil {
		where := tc(sd.WSURL)
		if sd.Embedded {
			where = "the embedded relay"
		}
		// Only private channels have member lists (scenario.md
		// private_channels): open ones are seeded with none, which "0
		// members" made read like a failed seed.
		channels := fmt.Sprintf("%d channels, %d members", sd.Channels, sd.Members)
		if sd.Members == 0 {
			channels = fmt.Sprintf("%d open channels (no member lists)", sd.Channels)
		}
		fmt.Fprintf(&b, "  seed: %d communities, %s, %d posts on %s in %s (channels, members and posts: %d created now, %d already there)\n",
			sd.Communities, channels, sd.Posts, where,
			(time.Duration(sd.DurationMs) * time.Millisecond).String(), sd.Created, sd.Existing)
		if sd.RelayMembers > 0 {
			fmt.Fprintf(&b, "  seed: the relay requires relay membership (NIP-43): %d identities of the run are relay members\n", sd.RelayMembers)
		}
		if sd.MemberTags != "" {
			fmt.Fprintf(&b, "  seed: the relay applies %s of a kind-9000 (member lists read back and completed)\n", tc(sd.MemberTags))
		}
	}
	if w := r.Warmup; w != nil {
		fmt.Fprintf(&b, "\n  warm-up  first %s  (reported apart, not judged)\n", secs(w.Secs))
		if len(w.Ops) == 0 {
			b.WriteString("    nothing settled in the warm-up\n")
		} else {
			writeOps(&b, w.Ops, &legend)
		}
	}
	for _, s := range r.Steps {
		var cl []string
		for _, k := range []string{"human", "desktop", "agent", "hot_author"} {
			if n := s.Clients[k]; n > 0 {
				cl = append(cl, fmt.Sprintf("%d %s", n, k))
			}
		}
		fmt.Fprintf(&b, "\n  step %d  users %g  %s–%s  (%s)", s.Index, s.Users, secs(s.StartS), secs(s.EndS), strings.Join(cl, ", "))
		if !s.Reached {
			b.WriteString("  not reached\n")
			continue
		}
		b.WriteString("\n")
		writeOps(&b, s.Ops, &legend)
		if s.AbortedAtS > 0 {
			var own int64
			for _, n := range s.ClientsStarted {
				own += n
			}
			fmt.Fprintf(&b, "    – cut by the abort at %s (%s into the step, %d clients of its own started); not judged\n",
				secs(s.AbortedAtS), secs(s.AbortedAtS-s.StartS), own)
		}
		if g := s.Generator; g != nil {
			machine := ""
			if g.MachinePct > 0 {
				machine = fmt.Sprintf(" (the machine: %.0f %% of all CPUs)", g.MachinePct)
			}
			fmt.Fprintf(&b, "    generator: this process's CPU %s %% of %d cores%s, scheduling lag p99 %.1f ms over %d scheduled operations\n",
				pct(g.CPUPct), g.Cores, machine, g.LagP99Ms, g.LagSamples)
			if g.Saturated {
				fmt.Fprintf(&b, "    ⚠ generator saturated (this process): %s — these latencies measure the generator too\n", tc(g.Reason))
			}
			if g.Elsewhere != "" {
				fmt.Fprintf(&b, "    ! %s — these latencies measure the machine too\n", tc(g.Elsewhere))
			}
			if g.WaitingOnTarget != "" {
				fmt.Fprintf(&b, "    ! %s\n", tc(g.WaitingOnTarget))
			}
		}
		if s.AbortReason != "" {
			fmt.Fprintf(&b, "    ✗ %s\n", tc(s.AbortReason))
		}
	}
	fmt.Fprintf(&b, "\n  shutdown (grace %s)\n", secs(r.Shutdown.GraceS))
	if len(r.Shutdown.Ops) == 0 {
		b.WriteString("    nothing settled after the last hold\n")
	} else {
		writeOps(&b, r.Shutdown.Ops, &legend)
	}
	if r.Shutdown.AbortedAtS > 0 {
		fmt.Fprintf(&b, "    – cut by the abort at %s; not judged\n", secs(r.Shutdown.AbortedAtS))
	}
	if r.Shutdown.AbortReason != "" {
		fmt.Fprintf(&b, "    ✗ %s\n", tc(r.Shutdown.AbortReason))
	}
	if len(r.ClientExits) > 0 {
		b.WriteString("\n  client exits:")
		for _, e := range r.ClientExits {
			fmt.Fprintf(&b, " %d %s (%s)", e.Count, tc(e.Kind), tc(e.Reason))
		}
		b.WriteString("\n")
	}
	if own := ownThresholds(r); len(own) > 0 {
		b.WriteString("\n  thresholds crossed:\n")
		for _, t := range own {
			fmt.Fprintf(&b, "    ✗ %s\n", tc(t))
		}
	}
	if len(r.Interrupted) > 0 {
		b.WriteString("\n  interrupted by the abort:")
		for _, k := range []string{"human", "desktop", "agent", "hot_author"} {
			if n := r.Interrupted[k]; n > 0 {
				fmt.Fprintf(&b, " %d %s", n, k)
			}
		}
		b.WriteString("\n")
	}
	if r.Abort != nil {
		where := "step " + tc(r.Abort.Step)
		if r.Abort.ByRule != "" {
			where = "step " + tc(r.Abort.ByRule) + " broke its [abort] limits"
		}
		fmt.Fprintf(&b, "  abort at %s (%s): work in flight cut at once, not errors:", secs(r.Abort.AtS), where)
		if len(r.Abort.Cut) == 0 {
			b.WriteString(" nothing was in flight")
		}
		for _, op := range SortedOps(r.Abort.Cut) {
			fmt.Fprintf(&b, " %s %d", tc(op), r.Abort.Cut[op])
		}
		b.WriteString("\n")
	}
	for _, lg := range r.RelayLogs {
		if lg.Counted == 0 && len(lg.Notes) == 0 && lg.Error == "" && lg.OutOfScope == 0 {
			continue
		}
		scope := ""
		if lg.Scope == "run" {
			scope = fmt.Sprintf("; scope run: %d error lines naming none of the run's hosts or channels not counted", lg.OutOfScope)
		}
		fmt.Fprintf(&b, "\n  relay log %s: %d error lines in %d lines scanned (at most %d%s)\n", tc(lg.Source), lg.Counted, lg.Lines, lg.Max, scope)
		for i, g := range lg.Groups {
			if i == 5 {
				fmt.Fprintf(&b, "    … %d more messages\n", len(lg.Groups)-5)
				break
			}
			sample := g.Message
			if len(g.Samples) > 0 {
				sample = g.Samples[0]
			}
			fmt.Fprintf(&b, "    %d× %s\n", g.Count, tc(sample))
		}
		for _, n := range lg.Notes {
			fmt.Fprintf(&b, "    ! %s\n", tc(n))
		}
		if lg.Error != "" {
			fmt.Fprintf(&b, "    ! not read: %s\n", tc(lg.Error))
		}
	}
	for i := range r.Drills {
		b.WriteString(drillText(&r.Drills[i], tc))
	}
	if lg := r.Ledger; lg != nil {
		b.WriteString(ledgerText(lg, tc))
	}
	if d := r.Durability; d != nil {
		fmt.Fprintf(&b, "\n  durability: %d acknowledged channel events of regular kinds (typing, presence and deletions are not audited), %d read back in %s: %d found as their author, %d as a member, %d missing",
			d.Acknowledged, d.Checked, secs(d.Secs), d.FoundAuthor, d.FoundMember, d.Missing)
		if d.Unverified > 0 {
			fmt.Fprintf(&b, ", %d unverified (%s)", d.Unverified, tc(d.FirstError))
		}
		b.WriteString("\n")
		for _, id := range d.MissingIDs {
			fmt.Fprintf(&b, "    ✗ missing %s\n", tc(id))
		}
	}
	if u := r.Unacked; u != nil && u.Total > 0 {
		fmt.Fprintf(&b, "  never acknowledged: %d publishes (%d refused, %d unanswered): delivered after %d refused and %d unanswered, stored %d refused and %d unanswered (%d read back)\n",
			u.Total, u.Refused, u.Unanswered, u.DeliveredRefused, u.DeliveredUnanswered, u.StoredRefused, u.StoredUnanswered, u.Checked)
		for _, id := range u.RefusedIDs {
			fmt.Fprintf(&b, "    ✗ refused yet delivered or stored %s\n", tc(id))
		}
	}
	relayMetricsText(&b, r.RelayMetrics, tc)
	if d := r.Drift; d != nil && d.Skipped == "" {
		fmt.Fprintf(&b, "  drift: first %d vs last %d of %d windows of the hold (%s–%s)", d.Part, d.Part, d.Windows, secs(d.FromS), secs(d.ToS))
		if len(d.Failed) > 0 {
			fmt.Fprintf(&b, ": %s\n", tc(strings.Join(d.Failed, "; ")))
		} else {
			b.WriteString(": nothing worse by more than max_drift\n")
		}
	}
	if len(r.Expected) > 0 {
		b.WriteString("\n  expected errors (known refusals of the deployment, not failures):\n")
		for _, e := range r.Expected {
			fmt.Fprintf(&b, "    %-6s %s: %d", e.Level, tc(e.Rule), e.Count)
			for _, op := range SortedOps(e.Ops) {
				fmt.Fprintf(&b, " %s %d", tc(op), e.Ops[op])
			}
			if len(e.Samples) > 0 {
				fmt.Fprintf(&b, " (e.g. %s)", tc(e.Samples[0]))
			}
			b.WriteString("\n")
		}
	}
	// The warnings are checks at level warn: listed with the failures.
	cs := r.Checks
	if cs == nil { // a report built elsewhere (a merge, a test): same rules
		cs = checksOf(r)
	}
	b.WriteString(checksText(cs))
	if r.OK {
		b.WriteString("\n  result: ok\n\n")
	} else {
		fmt.Fprintf(&b, "\n  result: FAILED — %s\n\n", tc(r.AbortReason))
	}
	return b.String()
}

// tc escapes control characters in text that came from the relay or a
// script: op names, error texts, reasons (issue 30 F4).
func tc(s string) string { return termtext.Clean(s) }

func secs(s float64) string { return (time.Duration(s * float64(time.Second))).String() }

// opsLegend explains the table's last columns and its "~" lines, once,
// under the first table (issue 29 item 5).
const opsLegend = "    (thr: refused by the relay's quotas, not errors · pend: in flight at the step's end · cut: cut short by the stop or an abort · ~: latency from the due time, where sending late shows)\n"

func writeOps(b *strings.Builder, ops map[string]*OpReport, legend *bool) {
	defer func() {
		if !*legend {
			*legend = true
			b.WriteString(opsLegend)
		}
	}()
	fmt.Fprintf(b, "    %-22s %8s %9s %9s %9s %9s %7s %7s %6s %6s %6s\n", "op", "count", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors", "err %", "thr", "pend", "cut")
	var errs []string
	for _, name := range SortedOps(ops) {
		o := ops[name]
		fmt.Fprintf(b, "    %-22s %8d %9.1f %9.1f %9.1f %9.1f %7d %7.2f %6d %6d %6d\n", tc(name), o.Count, o.P50Ms, o.P95Ms, o.P99Ms, o.MaxMs,
			o.Errors, 100*o.ErrorRate, o.Throttled, o.Pending, o.Cut+o.Abandoned)
		for _, e := range o.ErrorTexts {
			errs = append(errs, fmt.Sprintf("%s: %d× %s", tc(name), e.Count, tc(e.Text)))
		}
	}
	for _, e := range errs {
		fmt.Fprintf(b, "      ! %s\n", e)
	}
	// Scheduled operations: latency from the due time beside the send's,
	// printed where sending late shows (lateNotable); always in the JSON.
	for _, name := range SortedOps(ops) {
		if o := ops[name]; o.Scheduled > 0 && lateNotable(o) {
			fmt.Fprintf(b, "      ~ %s: %d scheduled, p99 %.1f ms from the due time (%.1f from the send), lag due→send p50 %.1f p99 %.1f ms\n",
				tc(name), o.Scheduled, o.DueP99Ms, o.P99Ms, o.LagP50Ms, o.LagP99Ms)
		}
	}
}

// lateNotable: the schedule's lateness adds at least 5 ms and 10 % to an
// op's p99, so the latency from the due time tells more than the send's.
func lateNotable(o *OpReport) bool {
	return o.DueP99Ms-o.P99Ms >= 5 && o.DueP99Ms >= 1.1*o.P99Ms
}

// pct is a percentage for the console: one decimal below 10 (a quiet
// generator's 0.5 % is not "0 %"), none above.
func pct(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// ownThresholds are the failed thresholds that are not the [abort] rules
// (the steps' verdicts say those, once).
func ownThresholds(r *Report) []string {
	rule := map[string]bool{}
	for _, t := range r.RuleThresholdsFailed {
		rule[t] = true
	}
	var out []string
	for _, t := range r.ThresholdsFailed {
		if !rule[t] {
			out = append(out, t)
		}
	}
	return out
}
