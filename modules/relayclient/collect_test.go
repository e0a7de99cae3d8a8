package relayclient

import "sync"

// CollectSink is relayclienttest.CollectSink for this package's own tests,
// which cannot import relayclienttest (it imports this package).
// CollectSink keeps every Result in memory (for tests and small tools).
type CollectSink struct {
	mu      sync.Mutex
	results []Result
}

// Record implements Sink.
func (s *CollectSink) Record(r Result) {
	s.mu.Lock()
	s.results = append(s.results, r)
	s.mu.Unlock()
}

// Results returns a copy of everything recorded so far.
func (s *CollectSink) Results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Result(nil), s.results...)
}

// Op returns the Results recorded under op name.
func (s *CollectSink) Op(op string) []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Result
	for _, r := range s.results {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// Count returns how many Results of op ended with outcome o.
func (s *CollectSink) Count(op string, o Outcome) int {
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
