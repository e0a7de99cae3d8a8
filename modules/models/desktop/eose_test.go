package desktop

import (
	"testing"
	"time"
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
