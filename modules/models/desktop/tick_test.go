package desktop

import (
	"strings"
	"testing"
	"time"
)

// reqs returns the REQ lines of the log since the mark.
func (s *sim) reqs() []string {
	var out []string
	for _, l := range s.log {
		if strings.HasPrefix(l, "REQ ") {
			out = append(out, l)
		}
	}
	return out
}

// Each live-only route counts its backstop from its own last replacement:
// one that missed its EOSE retries at the next tick while its siblings,
// replaced a tick ago, wait for the backstop. Mutant "one lastReplaced for
// all routes, set by any replacement's EOSE" sends no retry and fails.
func TestAReplacementThatMissedItsDeadlineRetriesAtTheNextTickWhileItsSiblingsWait(t *testing.T) {
	p := params(ModeCurrent, 25)
	p.Backstop, p.LiveOnlyScope = 300*time.Second, 10 // live(10) live(10) live(5)
	s := newSim(t, p)
	s.coldStart()
	s.lastFrame = s.now.Add(300 * time.Second)
	s.mark()
	s.advance(300 * time.Second)
	if n := len(s.reqs()); n != 3 {
		t.Fatalf("backstop tick: %d replacement REQs, want 3: %q", n, s.log)
	}
	s.failSub(isRoute(RouteLive))
	s.quiesce() // the two siblings reach EOSE
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	if r := s.reqs(); len(r) != 1 || !strings.HasSuffix(r[0], " live live-only") {
		t.Errorf("next tick REQs %q, want the one failed route's retry", r)
	}
	s.quiesce()
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	if r := s.reqs(); len(r) != 0 {
		t.Errorf("a tick after the retry succeeded sent %q, want nothing before the backstop", r)
	}
}

// A read-state snapshot that failed is retried on the next tick even
// before the backstop. Mutant "a failed snapshot is not owed" reads
// nothing on the next tick.
func TestAFailedReadStateSnapshotIsRetriedOnTheNextTick(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	s.eoseAll(nil)
	s.settle(func(r Read) (bool, bool) { return true, r.Key.Kind != ReadUnread })
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	s.wantReads("unread+snapshot")
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	s.wantReads() // it succeeded: nothing owed
}

// A tick replacement's EOSE swaps the subscription and reads nothing, even
// with a full replay count. Mutant "a replacement's EOSE establishes its
// route" reads the channels again.
func TestATickReplacementsEOSETriggersNoReads(t *testing.T) {
	for _, mode := range []Mode{ModeLegacy, ModeCurrent} {
		t.Run(mode.String(), func(t *testing.T) {
			p := params(mode, 5)
			p.Backstop = 0 // every tick replaces
			s := newSim(t, p)
			s.coldStart()
			s.lastFrame = s.now.Add(time.Minute)
			s.advance(time.Minute)
			s.settle(nil) // the tick's own roster and repair
			s.mark()
			s.eoseAll(everywhere(ReplayLimit))
			s.wantReads()
			if n := len(s.wire); n != 4 {
				t.Errorf("%d REQs open after the replacement, want 4", n)
			}
		})
	}
}
