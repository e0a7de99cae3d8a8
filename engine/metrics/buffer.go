package metrics

import "sync"

// Buffer is a producer's own sample buffer (one per VU or per goroutine).
// Add and AddAll are cheap: one lock and an append per call however many
// samples it carries (a lock per sample was half the cost of a delivered
// event's push on 5,000 VUs' cold buffers: BenchmarkVUPush in
// engine/jshost). Close it when the producer ends.
type Buffer struct {
	c       *Collector
	mu      sync.Mutex // taken by the owner on Add and by Flush
	samples []Sample
	pos     int // index in c.buffers
}

// NewBuffer registers a buffer that Flush will drain. It allocates nothing
// until samples arrive and then grows only to what its producer records
// between two flushes (at most BatchSize), so idle producers cost ~100 bytes.
func (c *Collector) NewBuffer() *Buffer {
	b := &Buffer{c: c}
	c.bufMu.Lock()
	b.pos = len(c.buffers)
	c.buffers = append(c.buffers, b)
	c.bufMu.Unlock()
	return b
}

// Add records a sample. When the buffer is full the caller aggregates it.
func (b *Buffer) Add(s Sample) {
	b.mu.Lock()
	b.samples = append(b.samples, s)
	if len(b.samples) >= b.c.batch {
		b.c.ingest(b.samples)
		b.samples = b.samples[:0]
	}
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
	if len(b.samples) >= b.c.batch {
		b.c.ingest(b.samples)
		b.samples = b.samples[:0]
	}
	b.mu.Unlock()
}

// Flush aggregates what the buffer holds now.
func (b *Buffer) Flush() {
	b.mu.Lock()
	b.c.ingest(b.samples)
	b.samples = b.samples[:0]
	b.mu.Unlock()
}

// Close flushes the buffer and unregisters it. Add must not be called after.
func (b *Buffer) Close() {
	b.Flush()
	c := b.c
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	if b.pos < 0 {
		return
	}
	last := len(c.buffers) - 1
	c.buffers[b.pos] = c.buffers[last]
	c.buffers[b.pos].pos = b.pos
	c.buffers[last] = nil
	c.buffers = c.buffers[:last]
	b.pos = -1
}
