package scenario

import "strconv"

// AbortRule is one condition that stops the run when a step's hold ends (and
// that judges the shutdown). A rule holds while Stat of Metric is at most
// Max, for every operation it covers.
type AbortRule struct {
	Name   string // "p99", "error_rate", "client_exits"
	Metric string // the metric it reads (docs/architecture.md)
	Stat   string // k6 threshold aggregation: "p(99)", "rate", "count"
	Max    float64
	// PerOp: judged for each op tag separately ("any operation's p99").
	PerOp bool
	// ExceptOps are the op tags the rule does not judge.
	ExceptOps []string
}

// Threshold is the rule as a k6 threshold expression that passes while the
// rule holds, such as "p(99)<=5000".
func (r AbortRule) Threshold() string {
	return r.Stat + "<=" + strconv.FormatFloat(r.Max, 'f', -1, 64)
}

// Rules is the abort section as data: any operation's p99 (publish→delivery
// included) above max_p99_ms, any operation but deliver with an error rate
// above max_error_rate, or any client that exited unexpectedly. The p99 rule
// skips bad_frame and notice: they are frames, not operations, recorded
// with no duration, so a p99 of them is always 0 and only lengthens the
// summary.
func (a Abort) Rules() []AbortRule {
	return []AbortRule{
		{Name: "p99", Metric: "buzz_op_duration", Stat: "p(99)", Max: a.MaxP99Ms, PerOp: true, ExceptOps: []string{"bad_frame", "notice"}},
		{Name: "error_rate", Metric: "buzz_op_failed", Stat: "rate", Max: a.MaxErrorRate, PerOp: true, ExceptOps: []string{"deliver"}},
		{Name: "client_exits", Metric: "buzz_client_exits", Stat: "count", Max: 0},
	}
}

// Covers reports whether the rule judges operation op.
func (r AbortRule) Covers(op string) bool {
	for _, x := range r.ExceptOps {
		if x == op {
			return false
		}
	}
	return true
}
