package desktop

import (
	"slices"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// Frames are judged by arrival: an EOSE that arrived within its deadline
// counts as in time however late it is read, measured from when the REQ
// actually went out. Mutant "judge from the model's sentAt, ignoring Sent"
// makes the first case a timeout.
func TestAnEOSEIsJudgedByItsArrivalFromTheActualSend(t *testing.T) {
	for _, c := range []struct {
		name    string
		sent    time.Duration // after the model asked
		arrival time.Duration // after the model asked
		timeout bool
	}{
		{"an EOSE within the deadline of the actual send is in time", 50 * time.Millisecond, DefaultEOSETimeout + 20*time.Millisecond, false},
		{"an EOSE after the deadline of the actual send is a timeout", 10 * time.Millisecond, DefaultEOSETimeout + 20*time.Millisecond, true},
		{"without a send time the deadline counts from the model's ask", 0, DefaultEOSETimeout + time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, params(ModeCurrent, 5))
			s.start()
			s.connected()
			id := s.sentIDs()[1] // membership
			delete(s.sent, id)
			var sent time.Time
			if c.sent > 0 {
				sent = s.now.Add(c.sent)
			}
			s.do(EOSE{Sub: id, At: s.now.Add(c.arrival), Sent: sent})
			if got := !s.m.routes[1].caughtUp; got != c.timeout {
				t.Errorf("timeout %v, want %v", got, c.timeout)
			}
		})
	}
}

// A presence subscription that misses its deadline establishes nothing
// and is not a cut: during a current renewal the continuous routes stay
// held. Mutant "presence failures go through arrive like other routes"
// ends the carry and the held routes read.
func TestAPresenceSubscriptionsMissedDeadlineIsNotACut(t *testing.T) {
	p := params(ModeCurrent, 5)
	p.Renewal, p.RenewalPhase = 10*time.Minute, 0.5
	s := newSim(t, p)
	s.coldStart()
	s.lastFrame = s.now.Add(5 * time.Minute)
	s.advance(5 * time.Minute) // the renewal
	s.connected()
	s.mark()
	s.failSub(isRoute(RoutePresence))
	s.eoseAll(nil) // every other replay complete and continuous
	s.wantReads()
	if s.m.carry != true {
		t.Error("the presence failure ended the renewal's carry")
	}
}

// A relay that never sends EOSE: each of the first four REQs fails at its
// EOSE timeout and frees its setup slot then, so the fifth goes out one
// timeout after the first, not two (audit desktop.md #98: 801 ms for a
// 400 ms timeout on the old code, where the wait was always extended).
func TestEndToEndAWithheldEOSEFreesItsSetupSlotAtTheTimeout(t *testing.T) {
	e := newE2E(t, 25)
	e.relay.Faults().WithholdEOSE("")
	p := e.params(ModeCurrent)
	p.EOSETimeout = 400 * time.Millisecond
	e.run(p)
	var first, fifth time.Time
	var waits []time.Duration
	waitfor.Within(10*time.Second, func() bool {
		waits, first, fifth = nil, time.Time{}, time.Time{}
		var starts []time.Time
		for _, r := range e.sink.Results() {
			if r.Op == OpLiveEOSE || r.Op == OpReplayEOSE {
				starts = append(starts, r.Start)
				if len(starts) <= 4 {
					waits = append(waits, r.Duration)
				}
			}
		}
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		if len(starts) >= 5 {
			first, fifth = starts[0], starts[4]
		}
		return !fifth.IsZero()
	})
	e.stop()
	if fifth.IsZero() {
		t.Fatal("no fifth REQ settled within 10 s")
	}
	if gap := fifth.Sub(first); gap < 350*time.Millisecond || gap > 700*time.Millisecond {
		t.Errorf("the fifth REQ went out %v after the first, want one 400ms timeout", gap)
	}
	for _, w := range waits {
		if w > 700*time.Millisecond {
			t.Errorf("a withheld EOSE was waited for %v (timeout 400ms)", w)
		}
	}
}
