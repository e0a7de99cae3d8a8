package extension_test

import (
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Several humans per VU (population.humans_per_vu, issue 49): 5 humans a
// unit of users at 2 a VU run as ceil(10/2) = 5 VUs at the peak, every
// human connects and holds its session (the report counts humans, not
// VUs; a step's humans are rounded up to whole VUs), and every delivery
// reaches every member (ledger reach 1).
// Fails without group.go: a VU runs one human, so the peak's 5 VUs hold 5
// humans and half the members never receive.
func TestSeveralHumansPerVUAllRun(t *testing.T) {
	toml := strings.Replace(ledgerSmoke(), "humans = 3\n", "humans = 5\nhumans_per_vu = 2\n", 1)
	r := runInline(t, t.TempDir(), mustRead(t, "../scenarios/local-smoke.js"), "local-smoke.toml", toml, nil, nil, nil)
	if r.res.ExitCode != 0 || !r.report.OK {
		r.dump(t)
		t.Fatalf("exit %d, abort_reason %q", r.res.ExitCode, r.report.AbortReason)
	}
	if got := r.report.Steps[1].Clients["human"]; got != 10 {
		t.Errorf("step 1 humans = %d, want 10", got)
	}
	// Humans whose first session began in each step: step 0 asks for 5,
	// which is 3 VUs of 2, so 6 start; step 1 adds the other 4.
	if s0, s1 := r.report.Steps[0].ClientsStarted["human"], r.report.Steps[1].ClientsStarted["human"]; s0 != 6 || s1 != 4 {
		t.Errorf("humans started %d in step 0 and %d in step 1: want 6 (3 VUs of 2) and 4", s0, s1)
	}
	// 10 humans and 2 agents connected (at least once each), with 5 + 2 VUs.
	var connects int64
	for _, s := range r.report.Steps {
		if o := s.Ops["connect"]; o != nil {
			connects += o.OK
		}
	}
	if connects < 12 {
		t.Errorf("%d connects: want every one of 10 humans and 2 agents", connects)
	}
	if g, ok := r.res.Summary.Metric("vus_max").Sink.(*metrics.GaugeSink); !ok || g.Last() != 7 {
		t.Errorf("vus_max %+v: want 5 human VUs and 2 agents", r.res.Summary.Metric("vus_max").Sink)
	}
	lg := r.report.Ledger
	if lg == nil || lg.Expected == 0 || lg.Lost != 0 || lg.Reach == nil || *lg.Reach != 1 {
		r.dump(t)
		t.Fatalf("ledger %+v", lg)
	}
}
