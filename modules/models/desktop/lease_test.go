package desktop

import (
	"strings"
	"testing"
)

// Issue 41 item 2: the end of a NIP-FI session lease is an ordinary
// reconnect: at once, the backoff not counted; a drop still waits out a
// backoff. Fails without Lease: the lease's end waited as a failure.
func TestALeaseEndReconnectsAtOnce(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.coldStart()
	s.mark()
	s.do(Disconnected{At: s.now, Epoch: s.epoch, Lease: true})
	if n := strings.Count(strings.Join(s.log, "\n"), "connect nip11"); n != 1 || s.m.attempts != 0 {
		t.Errorf("after a lease's end: %d connects at once (want 1), %d failed attempts: %v", n, s.m.attempts, s.log)
	}
	s.connected()
	s.quiesce()
	s.mark()
	s.drop()
	if strings.Contains(strings.Join(s.log, "\n"), "connect nip11") || s.m.attempts != 1 {
		t.Errorf("a drop reconnected at once or was not counted: %v", s.log)
	}
}
