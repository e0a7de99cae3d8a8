package extension

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/seed"
)

// seedProgress prints the seed's progress inside a run (issue 26 item 7):
// a seed of a real deployment can take minutes, and a console that says
// nothing meanwhile reads as a hang. A seed that ends within its first
// seedQuiet prints nothing (the smoke run's 250 ms seed adds no lines);
// after that, a line at every phase's end and at most every seedEvery.
type seedProgress struct {
	w     io.Writer
	now   func() time.Time
	start time.Time

	mu      sync.Mutex
	printed time.Time
	last    seed.Progress
}

const (
	seedQuiet = 2 * time.Second
	seedEvery = 5 * time.Second
)

func newSeedProgress(w io.Writer, now func() time.Time) *seedProgress {
	if now == nil {
		now = time.Now
	}
	return &seedProgress{w: w, now: now, start: now()}
}

func (s *seedProgress) update(p seed.Progress) {
	if s == nil || s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.start) < seedQuiet || p == s.last {
		return
	}
	phaseEnd := p.Total > 0 && p.Done == p.Total
	if !phaseEnd && now.Sub(s.printed) < seedEvery {
		return
	}
	fmt.Fprintf(s.w, "  seed: %s %d/%d (%s)\n", p.Phase, p.Done, p.Total, now.Sub(s.start).Round(time.Second))
	s.last, s.printed = p, now
}
