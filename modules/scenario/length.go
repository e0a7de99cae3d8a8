package scenario

import (
	"math"
	"time"
)

// SetDuration makes the run d long: a shorter d cuts the ramp at d (the
// steps begun by then, the last one shortened), a longer one lengthens the
// last hold. It is `run -d D scenario.toml` and `plan --duration D`: the
// scenario's own length is its ramp (docs/scenario.md), so a duration asked
// for on the command line reshapes the ramp rather than replacing the
// populations' scenarios as k6's -d does for a script.
func (s *Scenario) SetDuration(d time.Duration) {
	if d <= 0 || len(s.Ramp) == 0 {
		return
	}
	run := s.Duration()
	switch {
	case d < run:
		left := d.Seconds()
		var out []Step
		for _, st := range s.Ramp {
			if left <= 0 {
				break
			}
			st.RampSecs = math.Min(st.RampSecs, left)
			left -= st.RampSecs
			st.HoldSecs = math.Min(st.HoldSecs, left)
			left -= st.HoldSecs
			out = append(out, st)
		}
		s.Ramp = out
	case d > run:
		s.Ramp[len(s.Ramp)-1].HoldSecs += (d - run).Seconds()
	}
}
