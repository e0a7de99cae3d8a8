package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// MergeReports is the Buzz report of a distributed run from the reports
// of its instances (`buzzload merge`; issue 29: a merged run had an empty
// Steps section, no windows and no verdict). The instances ran the same
// scenario at once, each a share of the clients, so the same step or
// window of each covers the same time: counts add; a percentile cannot be
// recombined from percentiles, so p50 is the mean weighted by successes and
// p95/p99/max the worst instance's (an upper bound, said in the report's
// warnings). Windows merge by position when every instance has them at
// the same times (runs started together, --start-at). The verdict: the
// merged thresholds (judged exactly on the merged metrics by the caller:
// thresholdsFailed), and every instance's own verdict, named.
//
// The delivery ledger is joined's (the runners' journals replayed as one,
// modules/ledger) or, without it, the runners' own added up: those judge
// only the pairs within each runner, said in a warning with joined.Why.
func MergeReports(names []string, reps []*Report, thresholdsFailed []string, joined JoinedLedger) (*Report, error) {
	if len(reps) == 0 || len(reps) != len(names) {
		return nil, fmt.Errorf("merge: %d reports for %d instances", len(reps), len(names))
	}
	first := reps[0]
	out := &Report{RunID: first.RunID, Scenario: first.Scenario, Version: first.Version, Target: first.Target, DesktopMode: first.DesktopMode, Limits: first.Limits,
		Seed: first.Seed, RelayLimits: first.RelayLimits, ThresholdsFailed: thresholdsFailed}
	var shards []string
	for i, r := range reps {
		if r.RunID != first.RunID || r.Scenario != first.Scenario || len(r.Steps) != len(first.Steps) {
			return nil, fmt.Errorf("merge: %s is a report of %s (%s, %d steps), not of %s (%s, %d steps)",
				names[i], r.RunID, r.Scenario, len(r.Steps), first.RunID, first.Scenario, len(first.Steps))
		}
		if r.Shard != "" {
			shards = append(shards, r.Shard)
		}
	}
	out.Shard = strings.Join(shards, "+")
	out.Setup = mergeOps(collect(reps, func(r *Report) map[string]*OpReport { return r.Setup }))
	for s := range first.Steps {
		st := first.Steps[s]
		st.Ops = mergeOps(collect(reps, func(r *Report) map[string]*OpReport { return r.Steps[s].Ops }))
		st.Clients, st.ClientsStarted, st.Generator, st.AbortReason = map[string]int{}, map[string]int64{}, nil, ""
		st.LatencyInvalid = ""
		for i, r := range reps {
			rs := r.Steps[s]
			st.Reached = st.Reached || rs.Reached
			for k, n := range rs.Clients {
				st.Clients[k] += n
			}
			for k, n := range rs.ClientsStarted {
				st.ClientsStarted[k] += n
			}
			st.AbortedAtS = math.Max(st.AbortedAtS, rs.AbortedAtS)
			if rs.AbortReason != "" && st.AbortReason == "" {
				st.AbortReason = names[i] + ": " + rs.AbortReason
			}
			if rs.LatencyInvalid != "" && st.LatencyInvalid == "" {
				st.LatencyInvalid = names[i] + ": " + rs.LatencyInvalid
			}
			if g := rs.Generator; g != nil && (st.Generator == nil || g.Saturated && !st.Generator.Saturated || g.CPUPct > st.Generator.CPUPct && !st.Generator.Saturated) {
				c := *g // the busiest instance's, or a saturated one's
				if c.Saturated {
					c.Reason = names[i] + ": " + c.Reason
				}
				st.Generator = &c
			}
		}
		out.Steps = append(out.Steps, st)
	}
	out.Shutdown = first.Shutdown
	out.Shutdown.Ops = mergeOps(collect(reps, func(r *Report) map[string]*OpReport { return r.Shutdown.Ops }))
	out.Shutdown.Failures, out.Shutdown.AbortReason = 0, ""
	for i, r := range reps {
		out.Shutdown.Failures += r.Shutdown.Failures
		if r.Shutdown.AbortReason != "" && out.Shutdown.AbortReason == "" {
			out.Shutdown.AbortReason = names[i] + ": " + r.Shutdown.AbortReason
		}
		out.ClientExits = append(out.ClientExits, r.ClientExits...)
		out.Warnings = append(out.Warnings, prefixed(names[i], r.Warnings)...)
		out.RelayLogs = append(out.RelayLogs, r.RelayLogs...)
		out.Expected = append(out.Expected, r.Expected...)
		for _, o := range r.Outputs { // each runner pushes on its own
			out.Outputs = append(out.Outputs, OutputDelivery{Output: o.Output + " (" + names[i] + ")", Counts: o.Counts})
		}
	}
	out.Windows, out.WindowSecs = mergeWindowLists(reps)
	if len(out.Windows) == 0 && len(first.Windows) > 0 {
		out.Warnings = append(out.Warnings, "the instances' report windows are not at the same times (start them together with --start-at): no windows merged")
	}
	out.Ledger = joined.Ledger
	if out.Ledger == nil {
		out.Ledger = addLedgers(reps)
		if out.Ledger != nil {
			out.Warnings = append(out.Warnings, "delivery ledger not joined ("+joined.Why+"): the runners' own ledgers added up, each judging only the deliveries between its own clients")
		}
	}
	out.Drills = mergeDrills(reps)
	out.Durability = mergeDurability(reps)
	out.Unacked = mergeUnacked(reps)
	out.RelayMetrics = mergeRelayMetrics(out, names, reps)
	out.Drift = Drift(out.Windows, out.Steps, first.Limits.WarmupSecs, first.Limits.MaxDrift, first.Limits.MaxErrorRate, first.Limits.MaxP99Ms)
	out.Sweep = first.Sweep
	for _, r := range reps {
		if r.Sweep != nil && !r.Sweep.OK {
			out.Sweep = r.Sweep
		}
	}
	out.Warnings = append(out.Warnings, fmt.Sprintf("merged from %d instances: counts add; p50 is the mean of theirs weighted by successes, p95/p99/max the worst instance's (an upper bound)", len(reps)))
	// The verdict.
	if len(thresholdsFailed) > 0 {
		out.AbortReason = "thresholds crossed on the merged data: " + strings.Join(thresholdsFailed, ", ")
	}
	if out.AbortReason == "" {
		out.AbortReason = ledgerFailure(out.Ledger)
	}
	for i := range out.Drills {
		if ch := drillCheck(&out.Drills[i]); ch.Level == CheckFail && out.AbortReason == "" {
			out.AbortReason = ch.Name + ": " + ch.Detail
		}
	}
	if d := out.Drift; d != nil && len(d.Failed) > 0 && out.AbortReason == "" {
		out.AbortReason = "drift: " + d.Failed[0]
	}
	for _, c := range relayMetricsChecks(out.RelayMetrics) {
		if c.Level == CheckFail && out.AbortReason == "" {
			out.AbortReason = c.Name + ": " + c.Detail
		}
	}
	for i, r := range reps {
		if out.AbortReason == "" && !r.OK {
			out.AbortReason = names[i] + ": " + r.AbortReason
		}
	}
	out.OK = out.AbortReason == ""
	out.Checks = checksOf(out)
	out.CheckCounts = countChecks(out.Checks)
	return out, nil
}

func prefixed(name string, ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = name + ": " + w
	}
	return out
}

func collect(reps []*Report, f func(*Report) map[string]*OpReport) []map[string]*OpReport {
	out := make([]map[string]*OpReport, len(reps))
	for i, r := range reps {
		out[i] = f(r)
	}
	return out
}

// mergeOps adds the instances' ops of one step (see MergeReports).
func mergeOps(all []map[string]*OpReport) map[string]*OpReport {
	var out map[string]*OpReport
	for _, m := range all {
		for op, o := range m {
			if o == nil {
				continue
			}
			if out == nil {
				out = map[string]*OpReport{}
			}
			q := out[op]
			if q == nil {
				c := *o
				c.ErrorTexts = append([]ErrorText(nil), o.ErrorTexts...)
				out[op] = &c
				continue
			}
			if n := q.OK + o.OK; n > 0 { // p50 is of the successes
				q.P50Ms = (q.P50Ms*float64(q.OK) + o.P50Ms*float64(o.OK)) / float64(n)
			}
			if n := q.Scheduled + o.Scheduled; n > 0 {
				q.DueP50Ms = (q.DueP50Ms*float64(q.Scheduled) + o.DueP50Ms*float64(o.Scheduled)) / float64(n)
				q.LagP50Ms = (q.LagP50Ms*float64(q.Scheduled) + o.LagP50Ms*float64(o.Scheduled)) / float64(n)
			}
			q.Count += o.Count
			q.OK += o.OK
			q.Errors += o.Errors
			q.Throttled += o.Throttled
			q.Unavailable += o.Unavailable
			q.Expected += o.Expected
			q.Pending += o.Pending
			q.Started += o.Started
			q.Abandoned += o.Abandoned
			q.Cut += o.Cut
			q.Unfinished += o.Unfinished
			q.Scheduled += o.Scheduled
			q.P95Ms, q.P99Ms, q.MaxMs = max(q.P95Ms, o.P95Ms), max(q.P99Ms, o.P99Ms), max(q.MaxMs, o.MaxMs)
			q.DueP95Ms, q.DueP99Ms, q.LagP99Ms = max(q.DueP95Ms, o.DueP95Ms), max(q.DueP99Ms, o.DueP99Ms), max(q.LagP99Ms, o.LagP99Ms)
			q.ErrorTexts = mergeErrorTexts(q.ErrorTexts, o.ErrorTexts)
		}
	}
	for _, q := range out {
		q.ErrorRate = 0
		if d := q.OK + q.Errors; d > 0 {
			q.ErrorRate = round3(float64(q.Errors) / float64(d))
		}
		q.P50Ms, q.DueP50Ms, q.LagP50Ms = round3(q.P50Ms), round3(q.DueP50Ms), round3(q.LagP50Ms)
	}
	return out
}

func mergeErrorTexts(a, b []ErrorText) []ErrorText {
	idx := map[string]int{}
	for i, e := range a {
		idx[e.Text] = i
	}
	for _, e := range b {
		if i, ok := idx[e.Text]; ok {
			a[i].Count += e.Count
			continue
		}
		idx[e.Text] = len(a)
		a = append(a, e)
	}
	sort.SliceStable(a, func(i, j int) bool { return a[i].Count > a[j].Count })
	return a
}

// mergeWindowLists merges the instances' windows that start at the same
// time (within half a second; runs started together, --start-at). One an
// instance lacks (it ended a moment sooner) holds the others'. Windows that
// overlap without starting together merge nothing: none are returned.
func mergeWindowLists(reps []*Report) ([]WindowReport, float64) {
	var all []WindowReport
	for _, r := range reps {
		all = append(all, r.Windows...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].StartS < all[j].StartS })
	var out []WindowReport
	for _, rw := range all {
		n := len(out)
		if n > 0 && math.Abs(rw.StartS-out[n-1].StartS) <= 0.5 {
			addWindow(&out[n-1], rw)
			continue
		}
		if n > 0 && rw.StartS < out[n-1].EndS-0.5 {
			return nil, 0 // overlapping, not aligned
		}
		w := WindowReport{StartS: rw.StartS, EndS: rw.EndS, Merged: rw.Merged, Clients: map[string]int64{}, Ops: map[string]*WindowOp{}}
		addWindow(&w, rw)
		out = append(out, w)
	}
	return out, reps[0].WindowSecs
}

// addWindow adds an instance's window to w (see MergeReports).
func addWindow(w *WindowReport, rw WindowReport) {
	w.EndS = max(w.EndS, rw.EndS)
	w.Warmup = w.Warmup || rw.Warmup
	for k, n := range rw.Clients {
		w.Clients[k] += n
	}
	for op, o := range rw.Ops {
		addWindowOp(w.Ops, op, o)
	}
}

func mergeDurability(reps []*Report) *DurabilityReport {
	var out *DurabilityReport
	for _, r := range reps {
		d := r.Durability
		if d == nil {
			continue
		}
		if out == nil {
			out = &DurabilityReport{}
		}
		out.Acknowledged += d.Acknowledged
		out.Checked += d.Checked
		out.FoundAuthor += d.FoundAuthor
		out.FoundMember += d.FoundMember
		out.Missing += d.Missing
		out.Unverified += d.Unverified
		out.ReadErrors += d.ReadErrors
		out.Secs = max(out.Secs, d.Secs)
		for _, id := range d.MissingIDs {
			if len(out.MissingIDs) < maxMissingIDs {
				out.MissingIDs = append(out.MissingIDs, id)
			}
		}
		if out.FirstError == "" {
			out.FirstError = d.FirstError
		}
	}
	return out
}

func mergeUnacked(reps []*Report) *UnackedReport {
	var out *UnackedReport
	for _, r := range reps {
		u := r.Unacked
		if u == nil {
			continue
		}
		if out == nil {
			out = &UnackedReport{}
		}
		out.Total += u.Total
		out.Refused += u.Refused
		out.Unanswered += u.Unanswered
		out.DeliveredRefused += u.DeliveredRefused
		out.DeliveredUnanswered += u.DeliveredUnanswered
		out.StoredRefused += u.StoredRefused
		out.StoredUnanswered += u.StoredUnanswered
		out.Checked += u.Checked
		for _, id := range u.RefusedIDs {
			if len(out.RefusedIDs) < maxMissingIDs {
				out.RefusedIDs = append(out.RefusedIDs, id)
			}
		}
		if out.FirstError == "" {
			out.FirstError = u.FirstError
		}
	}
	return out
}
