package extension

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// The post-run sweep (issue 26, the soak tool's post-run check): after the
// traffic stops, is the relay still serving? NIP-11 answers, a fresh
// client connects and authenticates (the preflight's checks), and a
// channel read answers within the abort limit. A relay that held up
// during the run but is wedged after it fails the run.

// SweepReport is the sweep's outcome.
type SweepReport struct {
	OK     bool    `json:"ok"`
	ReadMs float64 `json:"read_ms,omitempty"` // the channel read's latency
	Slow   string  `json:"slow,omitempty"`    // the read answered, slower than max_p99_ms (a warning: one read is not a p99)
	Error  string  `json:"error,omitempty"`
}

func (l *loaded) sweep(ctx context.Context) *SweepReport {
	sc, err := l.target()
	if err != nil {
		return &SweepReport{Error: err.Error()}
	}
	pool, err := l.m.httpPool()
	if err != nil {
		return &SweepReport{Error: err.Error()}
	}
	hs := sc.Clients(scenario.KindHuman, sc.PeakUsers(), l.shard)
	if len(hs) == 0 {
		hs = sc.Clients(scenario.KindDesktop, sc.PeakUsers(), l.shard)
	}
	if len(hs) == 0 {
		return nil // no human to sweep as
	}
	g := hs[0]
	keys := l.keys().Keys(g)
	if _, err := preflight(ctx, sc, preflightTarget(sc, false), keys, false, pool); err != nil {
		return &SweepReport{Error: err.Error()}
	}
	info, _ := sc.Client(g)
	chans := sc.MemberChannels(g)
	if len(chans) == 0 {
		return &SweepReport{OK: true}
	}
	tgt := communityTarget(sc, info.Community)
	limit := time.Duration(sc.Abort.MaxP99Ms * float64(time.Millisecond))
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Keys: keys, Transport: pool, Timeout: max(limit, 10*time.Second)})
	if err != nil {
		return &SweepReport{Error: err.Error()}
	}
	_, res := h.Query(ctx, []relayclient.Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {sc.ChannelID(chans[0])}}, Limit: 20}},
		relayclient.CallOptions{Op: "sweep_read"})
	rep := &SweepReport{ReadMs: round3(ms(res.Duration))}
	switch {
	case res.Outcome != relayclient.OutcomeOK:
		rep.Error = "channel read: " + res.Error
	case res.Duration > limit:
		rep.OK = true
		rep.Slow = fmt.Sprintf("the channel read took %.1f ms, above max_p99_ms %g", ms(res.Duration), sc.Abort.MaxP99Ms)
	default:
		rep.OK = true
	}
	return rep
}

// sweepCheck is the sweep as a check.
func sweepCheck(s *SweepReport) Check {
	switch {
	case s.OK && s.Slow != "":
		return Check{Name: "post-run sweep", Level: CheckWarn, Detail: "NIP-11, a fresh AUTH and a channel read answer, but " + s.Slow}
	case s.OK:
		return Check{Name: "post-run sweep", Level: CheckPass, Detail: fmt.Sprintf("NIP-11, a fresh AUTH and a channel read (%.1f ms) answer", s.ReadMs)}
	default:
		return Check{Name: "post-run sweep", Level: CheckFail, Detail: s.Error}
	}
}
