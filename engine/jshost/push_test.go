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
	testPushFromManyGoroutines(t, (*VU).Push, true)
}

// PushShared's samples (the bundle's shared buffers) reach the consumers
// exactly once too, those pushed during the last flush included (the VUs'
// Close flushes the shared buffers), and the samples of one call in order;
// one goroutine's calls may be ingested in another order (it can move to
// another P, whose buffer drains first). Mutant "Close flushes only the
// VU's own buffer": samples go missing.
func TestPushSharedFromManyGoroutinesIsSeenOnce(t *testing.T) {
	testPushFromManyGoroutines(t, (*VU).PushShared, false)
}

func testPushFromManyGoroutines(t *testing.T, push func(*VU, ...metrics.Sample), callOrder bool) {
	const goroutines, pushes = 8, 3000
	f := newPushFixture(t, 3)
	f.stop() // only this test's Run flushes, then the VUs' Close
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
				push(vu,
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
		if i%2 == 1 && count[i-1] == 0 {
			t.Fatalf("sample %v arrived before %v, pushed before it in the same call", v, v-1)
		}
		g := i / (2 * pushes)
		if callOrder && v <= last[g] {
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

// A delivered event's PushShared allocates nothing (the shared buffer's
// slice is reused after each batch; its P token comes back from the pool).
func TestPushSharedAllocatesNothing(t *testing.T) {
	f := newPushFixture(t, 1)
	defer f.stop()
	vu, now := f.vus[0], time.Now()
	samples := &[2]metrics.Sample{
		{Metric: f.dur, Tags: f.tags, Time: now, Value: 1.5},
		{Metric: f.fail, Tags: f.tags, Time: now, Value: 0},
	}
	for range 200 { // every buffer grown once
		vu.PushShared(samples[:]...)
	}
	if n := testing.AllocsPerRun(1000, func() { vu.PushShared(samples[:]...) }); n != 0 {
		t.Fatalf("PushShared allocates %v times per call", n)
	}
}
