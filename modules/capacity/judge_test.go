package capacity

import (
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

func stepReport(ops map[string]*report.OpReport, gen *report.GeneratorReport) *report.Report {
	return &report.Report{Steps: []report.StepReport{{Index: 0, Reached: true, Ops: ops, Generator: gen}}}
}

func TestJudgeAProbe(t *testing.T) {
	sc := &scenario.Scenario{Abort: scenario.Abort{MaxP99Ms: 500, MaxErrorRate: 0.01}}
	slos, err := SLOs(sc)
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]*report.OpReport{"publish": {OK: 100, P99Ms: 40}, "deliver": {OK: 900, P99Ms: 120, Errors: 50, ErrorRate: 0.05}}
	p := Judge(stepReport(ok, &report.GeneratorReport{CPUPct: 30}), slos)
	if !p.Valid || !p.Pass || p.Limit == nil || p.Limit.Op != "deliver" || p.Limit.Stat != "p(99)" {
		t.Fatalf("a probe within the limits (deliveries' errors excepted, as [abort] excepts them): %+v %+v", p, p.Limit)
	}
	slow := map[string]*report.OpReport{"publish": {OK: 100, P99Ms: 40}, "deliver": {OK: 900, P99Ms: 812}}
	p = Judge(stepReport(slow, nil), slos)
	if !p.Valid || p.Pass || p.Limit.String() != "deliver p(99) at 812 ms (limit p(99)<=500)" {
		t.Fatalf("%+v %q", p, p.Limit.String())
	}
	throttled := map[string]*report.OpReport{"publish": {OK: 100, Throttled: 3, P99Ms: 40}}
	if p = Judge(stepReport(throttled, nil), slos); p.Valid || !strings.Contains(p.Reason, "throttled") {
		t.Fatalf("throttles: %+v", p)
	}
	marked := stepReport(ok, nil)
	marked.Steps[0].LatencyInvalid = "the relay's shared limiter was unavailable"
	if p = Judge(marked, slos); p.Valid || !strings.Contains(p.Reason, "limiter") {
		t.Fatalf("a step marked: %+v", p)
	}
	if p = Judge(stepReport(ok, &report.GeneratorReport{CPUPct: 70}), slos); p.Valid || !p.GeneratorLimited {
		t.Fatalf("less than 1.5x headroom: %+v", p)
	}
	// A latency from beyond the generator fails, never invalid.
	if p = Judge(stepReport(slow, &report.GeneratorReport{CPUPct: 20, Elsewhere: "the machine was busy"}), slos); !p.Valid || p.Pass {
		t.Fatalf("%+v", p)
	}
	// An SLO of its own: the ledger's reach.
	sc.Capacity.SLO = map[string][]string{"buzz_ledger_reach": {"rate>=0.999"}}
	slos, _ = SLOs(sc)
	rep := stepReport(ok, nil)
	rep.Ledger = &report.LedgerReport{Rows: []report.LedgerRow{{Step: "0", LedgerCounts: report.LedgerCounts{Expected: 1000, Received: 990}}}}
	if p = Judge(rep, slos); !p.Valid || p.Pass || p.Limit.Metric != "buzz_ledger_reach" {
		t.Fatalf("reach 0.99: %+v", p)
	}
}
