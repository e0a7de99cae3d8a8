package executor

import (
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// Schedule is the pure start-time plan of an arrival-rate scenario, in global
// event numbers (0-based, before any split across instances).
type Schedule interface {
	// Events is how many iterations the whole test starts.
	Events() int64
	// Offset is when global event g (0 ≤ g < Events) starts, from the
	// scenario's start.
	Offset(g int64) time.Duration
	// Stage is the index of the stage event g falls in (-1 when the executor
	// has no stages).
	Stage(g int64) int
}

// LocalOffsets lists the start offsets of the events that the instance with
// derived tuple d (from Tuple.Derive(maxVUs)) runs, in order. For tests and
// tools; the scheduler walks the same indices lazily. Unreachable from the binary (deadcode), kept:
// the tests' oracle of the lazy walk.
func LocalOffsets(s Schedule, d *segment.Tuple) []time.Duration {
	var out []time.Duration
	for l := int64(0); ; l++ {
		g := d.GlobalIndex(l)
		if g >= s.Events() {
			return out
		}
		out = append(out, s.Offset(g))
	}
}

func validateArrival(v *validator, timeUnit time.Duration, pre, maxVUs int64) {
	v.check(timeUnit > 0, "timeUnit", "must be greater than 0, got %s", timeUnit)
	v.check(pre >= 0, "preAllocatedVUs", "must not be negative, got %d", pre)
	v.check(maxVUs >= pre, "maxVUs", "can't be less than preAllocatedVUs (%d), got %d", pre, maxVUs)
}
