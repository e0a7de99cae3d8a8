package metrics

import "sync"

// Buffer is a producer's own sample buffer (one per VU or per goroutine).
// Add and AddAll are cheap: one lock and an append per call however many
// samples it carries (a lock per sample was half the cost of a delivered
// event's push on 5,000 VUs' cold buffers: BenchmarkVUPush in
// engine/jshost). Close it when the producer ends.
//
// A buffer that receives samples puts itself on its collector's dirty
// list (once until the next Flush), so a Flush touches only the buffers
// that hold samples: visiting every buffer every 50 ms cost 7 % of a
// 3,000-human run's CPU on 3,000 cold mutexes that were almost all empty.
type Buffer struct {
	c       *Collector
	mu      sync.Mutex // taken by the owner on Add and by Flush
	samples []Sample
	queued  bool // on c.dirty; guarded by mu, cleared by Collector.Flush
}

// NewBuffer returns a buffer that Flush will drain. It allocates nothing
// until samples arrive and then grows only to what its producer records
// between two flushes (at most BatchSize), so idle producers cost ~100 bytes.
func (c *Collector) NewBuffer() *Buffer {
	return &Buffer{c: c}
}

// Add records a sample. When the buffer is full the caller aggregates it.
func (b *Buffer) Add(s Sample) {
	b.mu.Lock()
	b.samples = append(b.samples, s)
	b.added()
	b.mu.Unlock()
}

// AddAll records samples in order, under one lock (they may be more than
// a batch: the whole lot is aggregated at once then).
func (b *Buffer) AddAll(samples []Sample) {
	if len(samples) == 0 {
		return
	}
	b.mu.Lock()
	b.samples = append(b.samples, samples...)
	b.added()
	b.mu.Unlock()
}

// added aggregates a full buffer, or queues a buffer that has samples for
// the next Flush. The caller holds b.mu.
func (b *Buffer) added() {
	if len(b.samples) >= b.c.batch {
		b.c.ingest(b.samples)
		b.samples = b.samples[:0]
		return
	}
	if !b.queued {
		b.queued = true
		b.c.dirtyMu.Lock()
		b.c.dirty = append(b.c.dirty, b)
		b.c.dirtyMu.Unlock()
	}
}

// Flush aggregates what the buffer holds now.
func (b *Buffer) Flush() {
	b.mu.Lock()
	b.c.ingest(b.samples)
	b.samples = b.samples[:0]
	b.mu.Unlock()
}

// drain is Flush for the collector's dirty list: the buffer may queue
// itself again.
func (b *Buffer) drain() {
	b.mu.Lock()
	b.c.ingest(b.samples)
	b.samples = b.samples[:0]
	b.queued = false
	b.mu.Unlock()
}

// Close flushes the buffer. Add must not be called after. (A closed buffer
// may stay on the dirty list until the next Flush, which finds it empty.)
func (b *Buffer) Close() {
	b.Flush()
}
