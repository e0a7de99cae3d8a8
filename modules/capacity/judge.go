package capacity

import (
	"fmt"
	"sort"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// SLO is one service-level expression on one metric (and operation).
type SLO struct {
	Metric, Op string
	Expr       thresholds.Expr
}

// SLOs are the scenario's [capacity].slo, or its [abort] limits when it
// has none (every operation's p99 and, deliveries excepted as [abort]
// excepts them, error rate).
func SLOs(sc *scenario.Scenario) ([]SLO, error) {
	var out []SLO
	for _, k := range sc.Capacity.SLOKeys() {
		metric, op, err := scenario.ParseSLOKey(k)
		if err != nil {
			return nil, err
		}
		for _, e := range sc.Capacity.SLO[k] {
			x, err := thresholds.ParseExpr(e)
			if err != nil {
				return nil, fmt.Errorf("capacity.slo.%s: %q: %w", k, e, err)
			}
			out = append(out, SLO{Metric: metric, Op: op, Expr: x})
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	p99, err := thresholds.ParseExpr(fmt.Sprintf("p(99)<=%g", sc.Abort.MaxP99Ms))
	if err != nil {
		return nil, err
	}
	rate, err := thresholds.ParseExpr(fmt.Sprintf("rate<=%g", sc.Abort.MaxErrorRate))
	if err != nil {
		return nil, err
	}
	return []SLO{{Metric: "buzz_op_duration", Expr: p99}, {Metric: "buzz_op_failed", Expr: rate}}, nil
}

// HeadroomCPU is the generator's CPU share above which a probe is invalid:
// less than 1.5× headroom left (Buzz's ingest-ceiling harness refuses a
// number without it).
const HeadroomCPU = 100 / 1.5

// Judge is a probe's outcome from its run's report: invalid when the
// relay's quotas or its limiter answered (throttles the scenario did not
// declare expected), when the generator had less than 1.5× headroom or
// saturated, when the relay's log could not be read or the run did not
// get to its judged step; otherwise pass or fail by the SLOs over the
// judged step (the warm-up, the ramp and settling, apart).
func Judge(rep *report.Report, slos []SLO) Probe {
	if rep == nil {
		return Probe{Reason: "the probe's run wrote no report"}
	}
	if rep.SetupError != "" {
		return Probe{Reason: "setup failed: " + rep.SetupError}
	}
	if len(rep.Steps) == 0 || !rep.Steps[len(rep.Steps)-1].Reached || rep.Steps[len(rep.Steps)-1].AbortedAtS > 0 {
		why := "the judged step was not reached"
		if rep.AbortReason != "" {
			why += ": " + rep.AbortReason
		}
		return Probe{Reason: why}
	}
	st := rep.Steps[len(rep.Steps)-1]
	if g := st.Generator; g != nil && (g.Saturated || g.CPUPct > HeadroomCPU) {
		why := fmt.Sprintf("the generator had less than 1.5× headroom (CPU %.0f %% of its cores)", g.CPUPct)
		if g.Saturated {
			why = "the generator saturated: " + g.Reason
		}
		return Probe{GeneratorLimited: true, Reason: why}
	}
	var throttled int64
	for _, o := range st.Ops {
		throttled += o.Throttled
	}
	switch {
	case st.LatencyInvalid != "": // the report counts the limiter's answers apart and marks the step
		return Probe{Reason: "the relay's shared limiter was unavailable (rate-limited: shared admission unavailable)"}
	case throttled > 0:
		return Probe{Reason: fmt.Sprintf("%d operations throttled by the relay's quotas: the search measures the quotas, not the capacity (raise them, or declare the throttles expected)", throttled)}
	}
	for _, lg := range rep.RelayLogs {
		if lg.Error != "" {
			return Probe{Reason: "the relay's log could not be read: " + lg.Error}
		}
	}
	p := Probe{Valid: true, Pass: true}
	var worst float64 = -1
	for _, s := range slos {
		for _, m := range measure(rep, st, s) {
			ok := s.Expr.Op.Compare(m.value, s.Expr.Value)
			lim := &Limit{Metric: s.Metric, Op: m.op, Stat: s.Expr.Stat.Name, Value: m.value, Expr: s.Expr.Source, Max: s.Expr.Value}
			if !ok {
				if p.Pass {
					p.Pass, p.Limit, p.Reason = false, lim, lim.String()
				}
				continue
			}
			if r := nearness(m.value, s.Expr.Value); p.Pass && r > worst {
				worst, p.Limit = r, lim
			}
		}
	}
	return p
}

// nearness is how close a passing value is to its limit (1: at it).
func nearness(v, limit float64) float64 {
	if limit == 0 {
		return 0
	}
	return v / limit
}

type measured struct {
	op    string
	value float64
}

// measure is the values an SLO judges in the step: per operation, or for
// every operation when the SLO names none.
func measure(rep *report.Report, st report.StepReport, s SLO) []measured {
	switch s.Metric {
	case "buzz_ledger_reach":
		if rep.Ledger == nil {
			return nil
		}
		var exp, got, unj int64
		for _, r := range rep.Ledger.Rows {
			if r.Step == fmt.Sprint(st.Index) {
				exp, got, unj = exp+r.Expected, got+r.Received, unj+r.Unjudged
			}
		}
		if exp-unj <= 0 {
			return nil
		}
		return []measured{{value: float64(got) / float64(exp-unj)}}
	case "buzz_op_failed":
		if s.Op != "" {
			if o := st.Ops[s.Op]; o != nil {
				return []measured{{op: s.Op, value: o.ErrorRate}}
			}
			return nil
		}
		var out []measured
		for _, name := range report.SortedOps(st.Ops) {
			if name != "deliver" { // [abort] excepts deliveries from the error rate
				out = append(out, measured{op: name, value: st.Ops[name].ErrorRate})
			}
		}
		return out
	}
	ops := []string{s.Op}
	if s.Op == "" {
		ops = report.SortedOps(st.Ops)
	}
	var out []measured
	for _, name := range ops {
		o := st.Ops[name]
		if o == nil || o.OK == 0 {
			continue
		}
		if v, ok := durationStat(o, s.Expr.Stat); ok {
			out = append(out, measured{op: name, value: v})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].value > out[j].value })
	return out
}

// durationStat is the report's value of a duration statistic (the report
// keeps p50, p95, p99 and max).
func durationStat(o *report.OpReport, st metrics.Stat) (float64, bool) {
	switch {
	case st.Kind == metrics.StatPercentile && st.P == 50, st.Kind == metrics.StatMed:
		return o.P50Ms, true
	case st.Kind == metrics.StatPercentile && st.P == 95:
		return o.P95Ms, true
	case st.Kind == metrics.StatPercentile && st.P == 99:
		return o.P99Ms, true
	case st.Kind == metrics.StatMax:
		return o.MaxMs, true
	}
	return 0, false
}
