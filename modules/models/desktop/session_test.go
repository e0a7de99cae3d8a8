package desktop

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStopIgnoresEverythingAfter(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	acts := s.do(Stop{At: s.now})
	if len(acts) != 1 {
		t.Fatalf("stop: %v", acts)
	}
	if _, ok := acts[0].(Disconnect); !ok {
		t.Fatalf("stop: %v", acts)
	}
	for _, id := range s.sentIDs() {
		if acts := s.m.Step(EOSE{Sub: id, At: s.now}); len(acts) != 0 {
			t.Errorf("acted after stop: %v", acts)
		}
	}
	if !s.m.NextWake().IsZero() {
		t.Error("timers after stop")
	}
}

func TestARelayCLOSEDOnALiveRouteEndsTheSession(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	ids := s.sentIDs()
	s.eoseAll(nil)
	s.settle(nil)
	s.mark()
	s.do(SubClosed{Sub: ids[3], At: s.now}) // the channel batch, live since its EOSE
	if !slices.Contains(s.log, "disconnect") {
		t.Errorf("CLOSED on a live route kept the session: %q", s.log)
	}
}

// Mutant "any settled route's CLOSED ends the session" (rec.settled for
// rec.live) turns a refused REQ into a reconnect and fails this test.
func TestARelayCLOSEDBeforeEOSEIsAMissedRouteNotAFailedSession(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	batch := s.sentIDs()[3]
	s.mark()
	delete(s.sent, batch)
	s.do(SubFailed{Sub: batch, At: s.now}) // the relay's CLOSED settles the EOSE wait as an error...
	s.do(SubClosed{Sub: batch, At: s.now}) // ...and then reports the CLOSED itself
	if slices.Contains(s.log, "disconnect") {
		t.Errorf("a refused REQ failed the session: %q", s.log)
	}
	// the route is cut and recovered
	s.wantReads("window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]")
}

func TestTicksRunOnTheClientsClockAcrossConnections(t *testing.T) {
	s := newSim(t, params(ModeLegacy, 5))
	s.coldStart()
	s.now = s.now.Add(30 * time.Second)
	s.drop()
	s.advance(time.Second)
	s.connected()
	s.quiesce()
	if next := s.m.nextTick; !next.Equal(t0.Add(time.Minute)) {
		t.Errorf("next tick at %v after start, want 60 s: the reconnect moved it", next.Sub(t0))
	}
	s.mark()
	s.advance(t0.Add(time.Minute).Sub(s.now))
	s.wantReads("roster", "unread+snapshot")
}

func TestATickWhileDisconnectedDoesNothing(t *testing.T) {
	p := params(ModeLegacy, 5)
	p.BackoffBase = time.Minute // still waiting at the tick
	s := newSim(t, p)
	s.coldStart()
	s.now = s.now.Add(50 * time.Second)
	s.drop()
	s.mark()
	s.advance(15 * time.Second) // the tick at 60 s passes
	for _, l := range s.log {
		if strings.HasPrefix(l, "read ") || strings.HasPrefix(l, "REQ ") {
			t.Errorf("acted while disconnected: %q", s.log)
		}
	}
}

func TestAReplacementKeepsTheReplacedSubscriptionsSince(t *testing.T) {
	p := params(ModeLegacy, 5)
	s := newSim(t, p)
	s.coldStart()
	s.now = s.now.Add(3600 * time.Second) // long after the connection's since
	s.lastFrame = s.now
	s.mark()
	s.do(Wake{At: s.now, LastFrame: s.lastFrame})
	n := 0
	for _, sp := range s.sent {
		if sp.Route == RouteBatch && sp.LiveOnly {
			n++
			if sp.Since != t0.Unix()-300 || len(sp.Channels) != 5 {
				t.Errorf("replacement since %d over %d channels, want %d over 5", sp.Since, len(sp.Channels), t0.Unix()-300)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d replacements", n)
	}
}
