package report

import (
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/logscan"
)

// Checks (issue 26): every judgement the run made, each with a level, so a
// reader sees what was judged, what failed and what only warns, in the
// console, the JSON and the HTML report alike (the soak tool's check
// levels, ../shared/seeds/soak-tool-load_test.zh.md §4). They are a pure
// function of the report: the same numbers the verdict rests on.

// Check levels.
const (
	CheckPass = "pass"
	CheckFail = "fail"
	CheckWarn = "warn"
	CheckSkip = "skip" // not judged, with the reason
)

// Check is one judgement.
type Check struct {
	Name   string `json:"name"`
	Level  string `json:"level"`
	Detail string `json:"detail,omitempty"`
}

// CheckCounts tallies checks by level.
type CheckCounts struct {
	Pass int `json:"pass"`
	Fail int `json:"fail"`
	Warn int `json:"warn"`
	Skip int `json:"skip"`
}

// checksOf lists the judgements behind r's verdict: a failure for each
// reason the run failed, a warning for each warning.
func checksOf(r *Report) []Check {
	var out []Check
	add := func(name, level, detail string) { out = append(out, Check{Name: name, Level: level, Detail: detail}) }
	if r.SetupError != "" {
		add("setup", CheckFail, r.SetupError)
	}
	lim := fmt.Sprintf("every op: p99 ≤ %g ms, error rate ≤ %g%% (deliver excepted); no client exits", r.Limits.MaxP99Ms, 100*r.Limits.MaxErrorRate)
	for _, s := range r.Steps {
		name := fmt.Sprintf("step %d abort rules", s.Index)
		switch {
		case s.AbortedAtS > 0:
			add(name, CheckSkip, fmt.Sprintf("cut by the abort at %s: its window never completed", secs(s.AbortedAtS)))
		case !s.Reached:
			add(name, CheckSkip, "not reached")
		case s.AbortReason != "":
			add(name, CheckFail, s.AbortReason)
		default:
			add(name, CheckPass, lim)
		}
		if s.LatencyInvalid != "" {
			add(fmt.Sprintf("step %d latencies", s.Index), CheckWarn, s.LatencyInvalid)
		}
		if g := s.Generator; g != nil {
			gname := fmt.Sprintf("step %d generator", s.Index)
			switch {
			case g.Saturated && strings.Contains(s.AbortReason, "fail_on_generator_saturation"):
				add(gname, CheckFail, "saturated: "+g.Reason)
			case g.Saturated:
				add(gname, CheckWarn, "saturated: "+g.Reason+" (its latencies measure the generator too)")
			case g.Elsewhere != "":
				add(gname, CheckWarn, "not saturated, but "+g.Elsewhere)
			case g.WaitingOnTarget != "":
				add(gname, CheckWarn, "not saturated, but "+g.WaitingOnTarget)
			default:
				add(gname, CheckPass, "not saturated")
			}
		}
	}
	if len(r.Steps) > 0 {
		switch {
		case r.Shutdown.AbortedAtS > 0:
			add("shutdown abort rules", CheckSkip, "cut by the abort")
		case r.Shutdown.AbortReason != "":
			add("shutdown abort rules", CheckFail, r.Shutdown.AbortReason)
		default:
			add("shutdown abort rules", CheckPass, "what settled after the last hold: "+lim)
		}
	}
	rule := map[string]bool{}
	for _, t := range r.RuleThresholdsFailed {
		rule[t] = true
	}
	for _, t := range r.ThresholdsFailed {
		if !rule[t] { // the abort rules' own: the steps' checks say them once
			add("threshold "+t, CheckFail, "crossed")
		}
	}
	if len(r.ThresholdsFailed) == 0 {
		add("thresholds", CheckPass, "every threshold held")
	}
	if len(r.Interrupted) > 0 {
		if r.Abort != nil && r.Abort.ByRule != "" {
			add("run end", CheckSkip, "stopped by the [abort] rule of step "+r.Abort.ByRule)
		} else {
			add("run end", CheckFail, "interrupted before its end (a signal or test.abort())")
		}
	}
	for _, e := range r.Expected {
		name := "expected " + e.Rule
		switch {
		case e.Level == expect.LevelWarn && e.Count > 0:
			add(name, CheckWarn, fmt.Sprintf("%d matched: known refusals, not failures", e.Count))
		default:
			add(name, CheckPass, fmt.Sprintf("%d matched (%s)", e.Count, e.Level))
		}
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "expected errors (") {
			continue // the expected rules' own checks say it
		}
		add("warning", CheckWarn, w)
	}
	for _, lg := range r.RelayLogs {
		out = append(out, relayLogCheck(lg))
	}
	if r.Profile != nil {
		out = append(out, profileCheck(r.Profile))
	}
	if r.Sweep != nil {
		out = append(out, sweepCheck(r.Sweep))
	}
	if r.Ledger != nil {
		out = append(out, LedgerCheck(r.Ledger))
	}
	for i := range r.Drills {
		out = append(out, drillCheck(&r.Drills[i]))
	}
	if r.Durability != nil {
		out = append(out, durabilityCheck(r.Durability))
	}
	if r.Unacked != nil {
		out = append(out, unackedCheck(r.Unacked))
	}
	out = append(out, relayMetricsChecks(r.RelayMetrics)...)
	if r.Drift != nil {
		out = append(out, driftCheck(r.Drift))
	}
	for _, o := range r.Outputs {
		out = append(out, o.check())
	}
	// A failure the checks above do not name (a run cut short as a whole,
	// a test.fail()): the verdict's own reason.
	if !r.OK && !hasLevel(out, CheckFail) {
		add("run", CheckFail, r.AbortReason)
	}
	return out
}

func hasLevel(cs []Check, level string) bool {
	for _, c := range cs {
		if c.Level == level {
			return true
		}
	}
	return false
}

func countChecks(cs []Check) CheckCounts {
	var n CheckCounts
	for _, c := range cs {
		switch c.Level {
		case CheckPass:
			n.Pass++
		case CheckFail:
			n.Fail++
		case CheckWarn:
			n.Warn++
		case CheckSkip:
			n.Skip++
		}
	}
	return n
}

// checksText is the console's closing block: the tally, then each failure
// and warning on its own line.
func checksText(cs []Check) string {
	n := countChecks(cs)
	var b strings.Builder
	fmt.Fprintf(&b, "\n  checks: %d pass / %d fail / %d warn", n.Pass, n.Fail, n.Warn)
	if n.Skip > 0 {
		// Named, so a reader knows what was not judged (issue 47 item 6).
		var names []string
		for _, c := range cs {
			if c.Level == CheckSkip {
				names = append(names, tc(c.Name))
			}
		}
		fmt.Fprintf(&b, " / %d skipped (%s)", n.Skip, strings.Join(names, ", "))
	}
	b.WriteString("\n")
	for _, level := range []string{CheckFail, CheckWarn} {
		for _, c := range cs {
			if c.Level != level {
				continue
			}
			mark := "✗"
			if level == CheckWarn {
				mark = "!"
			}
			fmt.Fprintf(&b, "    %s %s: %s\n", mark, tc(c.Name), tc(c.Detail))
		}
	}
	return b.String()
}

// relayLogCheck is one relay log's scan as a check.
func relayLogCheck(lg *logscan.Result) Check {
	name := "relay log " + lg.Source
	switch {
	case lg.Error != "":
		return Check{Name: name, Level: CheckSkip, Detail: "could not be read: " + lg.Error}
	case lg.Failed():
		top := ""
		if len(lg.Groups) > 0 && len(lg.Groups[0].Samples) > 0 {
			top = ": " + lg.Groups[0].Samples[0]
		}
		return Check{Name: name, Level: CheckFail, Detail: fmt.Sprintf("%d error lines (at most %d)%s", lg.Counted, lg.Max, top)}
	case len(lg.Notes) > 0:
		return Check{Name: name, Level: CheckWarn, Detail: fmt.Sprintf("%d error lines of %d; %s", lg.Counted, lg.Lines, strings.Join(lg.Notes, "; "))}
	}
	d := fmt.Sprintf("%d error lines in %d lines (at most %d)", lg.Counted, lg.Lines, lg.Max)
	if lg.Scope == "run" {
		d += fmt.Sprintf("; scope run: %d naming none of the run's hosts or channels not counted", lg.OutOfScope)
	}
	return Check{Name: name, Level: CheckPass, Detail: d}
}

// ProfileVerdict is a gateway profile's verdict (buzzload/profiles.js
// pacedVerdict, passed as sc.report(data, {profile})): whether a paced run
// is valid as an absolute-rate claim (issue 26 item 6).
type ProfileVerdict struct {
	Name      string `json:"name"`
	Paced     bool   `json:"paced"`
	Valid     *bool  `json:"valid"` // nil: closed-loop, no claim
	Achieved  int64  `json:"achieved"`
	Scheduled int64  `json:"scheduled"`
	Flagged   bool   `json:"flagged,omitempty"` // p4c: shortfall over 5 %
	Text      string `json:"text,omitempty"`
	// FailInvalid makes an invalid claim fail the run (the exit code).
	FailInvalid bool `json:"failInvalid,omitempty"`
}

// profileCheck is a profile's verdict as a check: a valid claim passes, an
// invalid or flagged one warns (fails with FailInvalid), a closed-loop
// profile makes no claim.
func profileCheck(p *ProfileVerdict) Check {
	c := Check{Name: "profile " + p.Name, Level: CheckPass}
	switch {
	case p.Valid == nil:
		c.Level, c.Detail = CheckSkip, "closed-loop: ranks targets, no absolute-rate claim"
	case *p.Valid && !p.Flagged:
		c.Detail = fmt.Sprintf("achieved %d of %d scheduled arrivals: valid as an absolute-rate claim", p.Achieved, p.Scheduled)
	default:
		c.Level = CheckWarn
		if p.FailInvalid && !*p.Valid {
			c.Level = CheckFail
		}
		c.Detail = strings.TrimSpace(strings.ReplaceAll(p.Text, "\n", " "))
	}
	return c
}

// profileFailure is why an invalid claim fails the run ("" when it does not).
func profileFailure(p *ProfileVerdict) string {
	if p == nil || !p.FailInvalid || p.Valid == nil || *p.Valid {
		return ""
	}
	return fmt.Sprintf("profile %s: achieved %d of %d scheduled arrivals, not valid as an absolute-rate claim", p.Name, p.Achieved, p.Scheduled)
}
