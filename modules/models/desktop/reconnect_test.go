package desktop

import (
	"strings"
	"testing"
	"time"
)

// Names and sidebar belong to the first successful connection: a client
// whose first connect attempt fails still reads them once, in both modes,
// and no later connection reads them again. Fails on the old code (audit
// desktop.md #46: metadata=0 sidebar=0 after a failed first attempt).
func TestColdReadsFollowAFailedFirstConnect(t *testing.T) {
	for _, mode := range []Mode{ModeLegacy, ModeCurrent} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newSim(t, params(mode, 5))
			s.start()
			s.do(ConnectFailed{At: s.now, Epoch: s.epoch})
			s.now = s.m.reconnectAt
			s.do(Wake{At: s.now})
			s.connected()
			s.quiesce()
			if s.ops[OpMetadata] != 1 || s.ops[OpSidebar] != 1 {
				t.Errorf("after a failed first attempt: metadata %d, sidebar %d, want 1 each", s.ops[OpMetadata], s.ops[OpSidebar])
			}
			s.drop()
			s.now = s.m.reconnectAt
			s.do(Wake{At: s.now})
			s.connected()
			s.quiesce()
			if s.ops[OpMetadata] != 1 || s.ops[OpSidebar] != 1 {
				t.Errorf("a reconnect reread them: metadata %d, sidebar %d", s.ops[OpMetadata], s.ops[OpSidebar])
			}
		})
	}
}

// current's replacement backstop runs from the last replacement, not from
// the last connect: renewals shorter than the backstop do not hold the
// replacement off for ever. Fails on the old code (audit desktop.md #72:
// every connect restarted it, so local-desktop's current never replaced).
func TestTheReplacementBackstopRunsFromTheLastReplacementAcrossRenewals(t *testing.T) {
	p := params(ModeCurrent, 25)
	p.Backstop = 300 * time.Second
	p.Renewal, p.RenewalPhase = 110*time.Second, 1 // renewals at 110 s, 220 s, 330 s
	s := newSim(t, p)
	s.coldStart()
	for i := 0; i < 2; i++ {
		s.advance(110 * time.Second)
		s.connected()
		s.quiesce()
	}
	s.mark()
	s.advance(81 * time.Second) // the tick at 300 s
	var reqs []string
	for _, l := range s.log {
		if strings.HasPrefix(l, "REQ ") {
			reqs = append(reqs, l)
		}
	}
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0], " live live-only") {
		t.Errorf("tick at the backstop (300 s after the cold start, 80 s after a renewal): REQs %q, want one live-only replacement", reqs)
	}
}

// A session our side ended (a renewal, the human's session end) was
// healthy: the next failure backs off from the base delay. Fails on the
// old code (audit desktop.md #105: 8 s after five minutes of 25 s
// renewals that followed four failed connects).
func TestRenewedSessionsRestartTheBackoff(t *testing.T) {
	p := params(ModeCurrent, 5)
	p.Renewal, p.RenewalPhase = 25*time.Second, 1
	s := newSim(t, p)
	s.start()
	for i := 0; i < 4; i++ {
		s.do(ConnectFailed{At: s.now, Epoch: s.epoch})
		s.now = s.m.reconnectAt
		s.do(Wake{At: s.now})
	}
	s.connected()
	s.quiesce()
	for i := 0; i < 12; i++ { // five minutes of renewals
		s.advance(s.m.nextRenewal.Sub(s.now))
		s.connected()
		s.quiesce()
	}
	s.drop()
	if d := s.m.reconnectAt.Sub(s.now); d != DefaultBackoffBase {
		t.Errorf("a drop after healthy renewed sessions waits %v, want %v", d, DefaultBackoffBase)
	}
}
