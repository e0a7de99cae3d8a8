package metrics

import (
	"sync"
	"testing"
)

type valueLog struct{ vals []float64 }

func (l *valueLog) AddSamples(batch []Sample) {
	for i := range batch {
		l.vals = append(l.vals, batch[i].Value)
	}
}

// AddAll keeps the order of Add, aggregates once the buffer holds a batch
// (also when one call brings more than a batch), and Flush hands over the
// rest.
func TestBufferAddAllKeepsOrderAcrossBatches(t *testing.T) {
	c, _, _, count := newTestCollector(t) // batches of 64
	log := &valueLog{}
	c.AddConsumer(log)
	b := c.NewBuffer()
	next := 0.0
	sample := func() Sample { next++; return Sample{Metric: count, Time: t0, Value: next} }
	b.AddAll(nil)
	for range 60 {
		b.Add(sample())
	}
	b.AddAll([]Sample{sample(), sample(), sample()})
	if len(log.vals) != 0 {
		t.Fatalf("aggregated %d samples before a batch was full", len(log.vals))
	}
	b.AddAll([]Sample{sample(), sample()}) // 65: one batch
	if len(log.vals) != 65 {
		t.Fatalf("aggregated %d samples once 65 were buffered, want 65", len(log.vals))
	}
	big := make([]Sample, 150)
	for i := range big {
		big[i] = sample()
	}
	b.AddAll(big)
	if len(log.vals) != 215 {
		t.Fatalf("aggregated %d samples after a call of 150, want 215", len(log.vals))
	}
	b.AddAll([]Sample{sample()})
	b.Close()
	if len(log.vals) != int(next) {
		t.Fatalf("aggregated %d samples after Close, want %v", len(log.vals), next)
	}
	for i, v := range log.vals {
		if v != float64(i+1) {
			t.Fatalf("sample %d is %v: out of order", i, v)
		}
	}
	s, _ := c.Snapshot(0).Lookup("x_ops")
	if s == nil || s.(*CounterSink).Sum() != next*(next+1)/2 {
		t.Fatalf("counter = %v", s)
	}
}

// Collector.Flush drains exactly the buffers that received samples: one
// that was flushed before gets drained again when it receives more, one
// that aggregated a full batch still hands over what came after, and a
// closed buffer's samples are not lost or counted twice.
func TestCollectorFlushDrainsBuffersThatReceivedSamples(t *testing.T) {
	c, _, _, count := newTestCollector(t) // batches of 64
	log := &valueLog{}
	c.AddConsumer(log)
	bufs := make([]*Buffer, 10)
	for i := range bufs {
		bufs[i] = c.NewBuffer()
	}
	one := Sample{Metric: count, Time: t0, Value: 1}
	for round := 1; round <= 3; round++ {
		bufs[round].Add(one)
		bufs[0].Add(one)
		c.Flush()
		if got, want := len(log.vals), 2*round; got != want {
			t.Fatalf("round %d: %d samples after Flush, want %d", round, got, want)
		}
	}
	full := make([]Sample, 70)
	for i := range full {
		full[i] = one
	}
	bufs[5].AddAll(full) // aggregated at once: not left on the list
	bufs[5].Add(one)     // this one waits for Flush
	if len(log.vals) != 6+70 {
		t.Fatalf("%d samples after a full batch, want %d", len(log.vals), 6+70)
	}
	c.Flush()
	if len(log.vals) != 6+71 {
		t.Fatalf("%d samples after Flush, want %d", len(log.vals), 6+71)
	}
	bufs[7].Add(one)
	bufs[7].Close()
	c.Flush()
	c.Flush()
	if len(log.vals) != 6+72 {
		t.Fatalf("%d samples after Close and two Flushes, want %d", len(log.vals), 6+72)
	}
}

// Samples added while Flush runs on other goroutines all arrive once.
func TestCollectorFlushConcurrentWithAdd(t *testing.T) {
	c, _, _, count := newTestCollector(t)
	var wg sync.WaitGroup
	const producers, each = 8, 2000
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := c.NewBuffer()
			defer b.Close()
			for range each {
				b.Add(Sample{Metric: count, Time: t0, Value: 1})
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				c.Flush()
			}
		}
	}()
	wg.Wait()
	close(done)
	c.Flush()
	s, _ := c.Snapshot(0).Lookup("x_ops")
	if s == nil || s.(*CounterSink).Sum() != producers*each {
		t.Fatalf("counter = %v, want %d", s, producers*each)
	}
}
