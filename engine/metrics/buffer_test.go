package metrics

import (
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
	s, _ := c.Snapshot(0).Lookup("buzz_ops")
	if s == nil || s.(*CounterSink).Sum() != next*(next+1)/2 {
		t.Fatalf("counter = %v", s)
	}
}
