package models

import (
	"context"
	"time"
)

// waitUntil waits until start+at, or until ctx or stop ends; false when
// either ended first. stop may be nil (never closes).
func waitUntil(ctx context.Context, stop <-chan struct{}, start time.Time, at time.Duration) bool {
	d := time.Until(start.Add(at))
	if d <= 0 {
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// RunSchedule drives s in real time from start: it sleeps until each event
// is due and calls do with it, until do returns false, the schedule is
// exhausted (returns nil), stop is closed or ctx ends (returns ctx's error,
// or nil for stop). The schedule is open-loop: an event that comes due while
// do was busy runs at once, late, rather than being skipped.
func RunSchedule(ctx context.Context, stop <-chan struct{}, s *Schedule, start time.Time, do func(Event) bool) error {
	for {
		_, at, ok := s.Peek()
		if !ok {
			return nil
		}
		if !waitUntil(ctx, stop, start, at) {
			return ctx.Err()
		}
		ev, _ := s.Next()
		if !do(ev) {
			return nil
		}
	}
}
