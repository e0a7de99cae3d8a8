// Package relayclienttest holds the relay client's test doubles for other
// packages' tests: a sink that keeps every Result.
package relayclienttest

import (
	"sync"

	"github.com/buzzload/buzzload/modules/relayclient"
)

// CollectSink keeps every Result in memory (for tests).
type CollectSink struct {
	mu      sync.Mutex
	results []relayclient.Result
}

// Record implements relayclient.Sink.
func (s *CollectSink) Record(r relayclient.Result) {
	s.mu.Lock()
	s.results = append(s.results, r)
	s.mu.Unlock()
}

// Results returns a copy of everything recorded so far.
func (s *CollectSink) Results() []relayclient.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]relayclient.Result(nil), s.results...)
}

// Op returns the Results recorded under op name.
func (s *CollectSink) Op(op string) []relayclient.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []relayclient.Result
	for _, r := range s.results {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// Count returns how many Results of op ended with outcome o.
func (s *CollectSink) Count(op string, o relayclient.Outcome) int {
	n := 0
	for _, r := range s.Op(op) {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

// Reset forgets everything recorded.
func (s *CollectSink) Reset() {
	s.mu.Lock()
	s.results = nil
	s.mu.Unlock()
}
