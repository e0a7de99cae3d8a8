package jshost

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// seenSamples records every aggregated sample's value, in arrival order.
type seenSamples struct {
	mu   sync.Mutex
	vals []float64
}

func (s *seenSamples) AddSamples(batch []metrics.Sample) {
	s.mu.Lock()
	for i := range batch {
		s.vals = append(s.vals, batch[i].Value)
	}
	s.mu.Unlock()
}

// Samples pushed into VUs from many goroutines at once (connection readers)
// reach the collector's consumers exactly once and, per goroutine, in the
// order pushed — also those pushed while the collector's last flush runs
// (the run ending), which the VUs' Close flushes.
func TestPushFromManyGoroutinesIsSeenOnceInOrder(t *testing.T) {
	const goroutines, pushes = 8, 3000
	f := newPushFixture(t, 3)
	seen := &seenSamples{}
	f.coll.AddConsumer(seen)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runWG sync.WaitGroup
	runWG.Add(1)
	go func() { defer runWG.Done(); f.coll.Run(ctx, time.Millisecond) }()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vu := f.vus[g%len(f.vus)]
			now := time.Now()
			for i := range pushes {
				v := float64(2 * (g*pushes + i))
				vu.Push(
					metrics.Sample{Metric: f.dur, Tags: f.tags, Time: now, Value: v},
					metrics.Sample{Metric: f.dur, Tags: f.tags, Time: now, Value: v + 1},
				)
				if g == 0 && i == pushes/2 {
					cancel() // the run ends: the collector's last flush, pushes still coming
				}
			}
		}()
	}
	wg.Wait()
	runWG.Wait()
	f.stop()
	for _, vu := range f.vus {
		vu.Close()
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if got, want := len(seen.vals), 2*goroutines*pushes; got != want {
		t.Errorf("consumers saw %d samples, want %d", got, want)
	}
	count := make([]int, 2*goroutines*pushes)
	last := make([]float64, goroutines)
	for g := range last {
		last[g] = -1
	}
	for _, v := range seen.vals {
		i := int(v)
		if i < 0 || i >= len(count) {
			t.Fatalf("unexpected sample value %v", v)
		}
		count[i]++
		g := i / (2 * pushes)
		if v <= last[g] {
			t.Fatalf("goroutine %d's sample %v arrived after %v", g, v, last[g])
		}
		last[g] = v
	}
	for i, n := range count {
		if n != 1 {
			t.Fatalf("sample %d seen %d times", i, n)
		}
	}
}
