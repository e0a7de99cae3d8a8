package models

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/scenario"
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

// BenchmarkConnectedHumanMemory connects 200 idle humans (subscribed, history
// read, presence once) to an in-process relay and reports the heap growth per
// human. The relay's side of each connection is included, so the client's
// own share is smaller than reported.
func BenchmarkConnectedHumanMemory(b *testing.B) {
	const humans = 200
	for b.Loop() {
		r := startRelay(b, func(c *relay.Config) { c.MaxConnections = 1000 })
		u := r.URLs()
		sc := testScenario(b, u.WS, u.HTTP, func(sc *scenario.Scenario) {
			sc.Population.Humans = humans
			sc.Shape.ChannelsPerCommunity = 20
			sc.Population.ChannelsPerMember = 3
			sc.Human = scenario.Human{HistoryLimit: 5, PresenceIntervalSecs: 3600}
		})
		newSeeder(b, sc, sc.OwnerKeys(0)).channels()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		sink := &collect{}
		stop, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for g := 0; g < humans; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = Run(stop, nil, Config{Scenario: sc, Global: g, Sink: sink})
			}()
		}
		waitfor.Within(30*time.Second, func() bool { return sink.ok(OpHistory) >= humans*3 })
		sink.Reset()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse)/humans, "bytes/human")
		cancel()
		wg.Wait()
	}
}
