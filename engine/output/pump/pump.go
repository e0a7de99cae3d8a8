// Package pump is the periodic writer of the file and stream outputs (json,
// csv, opentelemetry): AddSamples only copies a batch under a mutex, so the
// sample path never waits on I/O; a goroutine hands what piled up to the
// output's write function every interval, and once more when halted.
package pump

import (
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Pump holds copied samples and runs the periodic writer. Set Interval and
// Write, then Start; Halt after the last Add.
type Pump struct {
	Interval time.Duration
	Write    func([]metrics.Sample) error

	mu      sync.Mutex
	pending []metrics.Sample
	stop    chan struct{}
	done    chan struct{}
	errMu   sync.Mutex
	err     error
}

// Add copies samples for the next write.
func (p *Pump) Add(samples []metrics.Sample) {
	p.mu.Lock()
	p.pending = append(p.pending, samples...)
	p.mu.Unlock()
}

func (p *Pump) flush() {
	p.mu.Lock()
	batch := p.pending
	p.pending = nil
	p.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := p.Write(batch); err != nil {
		p.errMu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.errMu.Unlock()
	}
}

// Start starts the writer.
func (p *Pump) Start() {
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.Interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				p.flush()
				return
			case <-t.C:
				p.flush()
			}
		}
	}()
}

// Halt stops the writer after a last write and returns the first write
// error. It may be called more than once.
func (p *Pump) Halt() error {
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}
