package desktop

import (
	"slices"
	"testing"
	"time"
)

func TestSilenceProbe(t *testing.T) {
	t.Run("a tick after no frame probes and no answer within 10 s fails the session", func(t *testing.T) {
		s := newSim(t, params(ModeCurrent, 5))
		s.silent = true
		s.coldStart()
		s.mark()
		s.advance(time.Minute) // no frame since the cold start's
		if s.ops[OpProbe] != 1 {
			t.Fatalf("no probe: %q", s.log)
		}
		s.advance(DefaultProbeWindow)
		if !slices.Contains(s.log, "disconnect") {
			t.Fatalf("unanswered probe kept the session: %q", s.log)
		}
		s.advance(DefaultBackoffBase)
		if !slices.Contains(s.log, "connect nip11=true renewal=false") {
			t.Errorf("no reconnect after the backoff: %q", s.log)
		}
	})
	t.Run("any frame within 10 s answers it", func(t *testing.T) {
		s := newSim(t, params(ModeLegacy, 5))
		s.silent = true
		s.coldStart()
		s.mark()
		s.advance(time.Minute)
		if s.ops[OpProbe] != 1 {
			t.Fatalf("no probe: %q", s.log)
		}
		s.lastFrame = s.now.Add(3 * time.Second) // an OK for a publish, say
		s.advance(DefaultProbeWindow)
		if slices.Contains(s.log, "disconnect") {
			t.Errorf("an answered probe failed the session: %q", s.log)
		}
	})
	t.Run("a tick after frames sends no probe", func(t *testing.T) {
		s := newSim(t, params(ModeCurrent, 5))
		s.coldStart()
		s.mark()
		s.lastFrame = s.now.Add(30 * time.Second)
		s.advance(time.Minute)
		if s.ops[OpProbe] != 0 {
			t.Errorf("probe on a live socket: %q", s.log)
		}
	})
}

func TestConnectsAndFailedSessionsBackOff(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	var delays []time.Duration
	for i := 0; i < 8; i++ {
		s.do(ConnectFailed{At: s.now, Epoch: s.epoch})
		delays = append(delays, s.m.reconnectAt.Sub(s.now))
		s.now = s.m.reconnectAt
		s.do(Wake{At: s.now})
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(delays, want) {
		t.Errorf("backoff %v, want %v", delays, want)
	}
	// a session that lasted restarts the backoff from the base...
	s.connected()
	s.quiesce()
	s.now = s.now.Add(2 * HealthySession)
	s.drop()
	if d := s.m.reconnectAt.Sub(s.now); d != DefaultBackoffBase {
		t.Errorf("after a healthy session the delay is %v", d)
	}
	// ...and a session that failed at once backs off further
	s.now = s.m.reconnectAt
	s.do(Wake{At: s.now})
	s.connected()
	s.drop()
	if d := s.m.reconnectAt.Sub(s.now); d != 2*DefaultBackoffBase {
		t.Errorf("after a failed short session the delay is %v", d)
	}
}

func TestJitteredBackoffStaysInTheUpperHalfOfItsCeiling(t *testing.T) {
	p := params(ModeCurrent, 5)
	draws := []float64{0, 0.5, 0.999}
	p.Jitter = func() float64 { d := draws[0]; draws = append(draws[1:], d); return d }
	s := newSim(t, p)
	s.start()
	var got []time.Duration
	for i := 0; i < 3; i++ {
		s.do(ConnectFailed{At: s.now, Epoch: s.epoch})
		got = append(got, s.m.reconnectAt.Sub(s.now))
		s.now = s.m.reconnectAt
		s.do(Wake{At: s.now})
	}
	// ceilings 500 ms, 1 s, 2 s
	want := []time.Duration{250 * time.Millisecond, 750 * time.Millisecond, 1999 * time.Millisecond}
	for i := range want {
		if d := got[i] - want[i]; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("delay %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestStaleConnectionEventsAreIgnored(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.coldStart()
	old := s.epoch
	s.do(SessionEnd{At: s.now})
	s.mark()
	s.do(Disconnected{At: s.now, Epoch: old}) // the closed socket's own report
	if len(s.log) != 0 {
		t.Errorf("a stale disconnect acted: %q", s.log)
	}
}
