package jshost

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/buzzload/buzzload/engine/metrics"
)

// sharedBuffers are a bundle's sample buffers for VU.PushShared: a few
// (twice GOMAXPROCS), each picked by a token a sync.Pool keeps per P, so a
// goroutine usually finds the buffer its core touched last. They are a
// fixed list, so a VU's Close can flush them all.
type sharedBuffers struct {
	bufs []*metrics.Buffer
	tok  sync.Pool // *int: an index into bufs
	next atomic.Uint32
}

func (s *sharedBuffers) init(c *metrics.Collector) {
	s.bufs = make([]*metrics.Buffer, 2*max(runtime.GOMAXPROCS(0), 1))
	for i := range s.bufs {
		s.bufs[i] = c.NewBuffer()
	}
}

// add records samples into the buffer of the caller's P (under its lock).
func (s *sharedBuffers) add(samples []metrics.Sample) {
	t, _ := s.tok.Get().(*int)
	if t == nil { // a P's first push, or the pool was emptied by a GC
		t = new(int)
		*t = int(s.next.Add(1)-1) % len(s.bufs)
	}
	s.bufs[*t].AddAll(samples)
	s.tok.Put(t)
}

// flush aggregates what every shared buffer holds now.
func (s *sharedBuffers) flush() {
	for _, b := range s.bufs {
		b.Flush()
	}
}
