package client

import (
	"testing"
	"time"
)

func BenchmarkScheduleNext(b *testing.B) {
	cfg := ScheduleConfig{PresenceInterval: 30 * time.Second, TypingPerHour: 60, MessagesPerHour: 20,
		ReactionsPerHour: 10, ThreadReplyFraction: 0.2, Weights: []float64{1, 1, 1, 1, 1, 1}}
	s := NewSchedule(cfg, NewRand("bench", 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Next(); !ok {
			b.Fatal("exhausted")
		}
	}
}

func BenchmarkNewActivityAndSchedule(b *testing.B) {
	sc := testScenario(b, "ws://127.0.0.1:1", "http://127.0.0.1:1", nil)
	k := sc.Keys(0)
	b.ReportAllocs()
	for b.Loop() {
		a := NewActivity(sc, 0, k, NewRand(sc.RunID, 0), nil)
		_ = NewSchedule(a.cfg, a.rng)
	}
}
