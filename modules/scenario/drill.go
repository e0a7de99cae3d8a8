package scenario

import (
	"fmt"
	"slices"
	"strings"
)

// Drill is one [[drill]]: a disruption the run performs at a moment of its
// timeline (issue 42, modules/drill). Against the embedded relay the relay
// does it itself; against a real deployment a command does (an argv run
// where buzzload runs, e.g. kubectl rollout restart).
type Drill struct {
	// AtSecs is when, from the population scenarios' start.
	AtSecs float64 `toml:"at_secs" json:"at_secs"`
	// Kind is what the drill does: restart, stall, limiter_outage or
	// slow_store (the embedded relay's), or any name of your own with a
	// command.
	Kind string `toml:"kind" json:"kind"`
	// DurationSecs is how long the relay stays restarting (refusing new
	// connections), stalled, without its limiter or slow.
	DurationSecs float64 `toml:"duration_secs" json:"duration_secs"`
	// JitterSecs spreads a restart's 1012 closes over [1 ms, jitter]
	// (Buzz's BUZZ_DRAIN_JITTER_MS).
	JitterSecs float64 `toml:"jitter_secs" json:"jitter_secs"`
	// DelayMs is how much longer each store read and write takes in a
	// slow_store drill (default 200).
	DelayMs float64 `toml:"delay_ms" json:"delay_ms"`
	// Command, when set, is run instead (argv, no shell), bounded by
	// TimeoutSecs (default 120); its exit code and first output are
	// reported.
	Command     []string `toml:"command" json:"command"`
	TimeoutSecs float64  `toml:"timeout_secs" json:"timeout_secs"`
}

// DrillKinds are the drills the embedded relay performs itself.
var DrillKinds = []string{"restart", "stall", "limiter_outage", "slow_store"}

// Drill defaults.
const (
	DefaultDrillTimeoutSecs = 120
	DefaultDrillDelayMs     = 200
	MaxDrillJitterSecs      = 20 // Buzz's MAX_DRAIN_JITTER_MS
)

// AimedAtEmbedded marks a copy of a scenario that names no relay as aimed
// at the embedded one (its URLs filled in): its drills are still the
// embedded relay's to perform.
func (s *Scenario) AimedAtEmbedded() { s.aimed = true }

// AddDrills adds a script's drills (buzz.load's drills option) after the
// file's and checks them by the same rules, each named
// "buzz.load drills[i]".
func (s *Scenario) AddDrills(ds []Drill) error {
	c := &checker{}
	probe := *s
	probe.Drills = ds
	probe.validateDrills(c)
	if len(c.probs) > 0 {
		for i := range c.probs {
			c.probs[i].Key = "buzz.load drills" + strings.TrimPrefix(c.probs[i].Key, "drill")
		}
		return &Error{File: s.File, Problems: c.probs}
	}
	s.Drills = append(s.Drills, ds...)
	return nil
}

func (s *Scenario) validateDrills(c *checker) {
	end := s.Duration().Seconds()
	for i, d := range s.Drills {
		key := fmt.Sprintf("drill[%d]", i)
		c.floatAtLeast(key+".at_secs", d.AtSecs, 0, true)
		if d.AtSecs > end {
			c.add(key+".at_secs", "%s is after the run's end (%ss)", num(d.AtSecs), num(end))
		}
		c.floatAtLeast(key+".duration_secs", d.DurationSecs, 0, true)
		c.floatAtLeast(key+".jitter_secs", d.JitterSecs, 0, true)
		if d.JitterSecs > MaxDrillJitterSecs {
			c.add(key+".jitter_secs", "%s is above %d (Buzz caps BUZZ_DRAIN_JITTER_MS at 20000)", num(d.JitterSecs), MaxDrillJitterSecs)
		}
		c.floatAtLeast(key+".delay_ms", d.DelayMs, 0, true)
		c.floatAtLeast(key+".timeout_secs", d.TimeoutSecs, 0, true)
		switch {
		case d.Kind == "":
			c.add(key+".kind", "is required (%v, or a name of your own with a command)", DrillKinds)
		case len(d.Command) == 0 && !slices.Contains(DrillKinds, d.Kind):
			c.add(key+".kind", "%q is not a drill the embedded relay performs (%v); give a command for others", d.Kind, DrillKinds)
		case len(d.Command) == 0 && !s.Embedded() && !s.aimed:
			c.add(key+".command", "is required against a real relay: buzzload cannot %s it itself (e.g. [\"kubectl\", \"rollout\", \"restart\", \"deployment/buzz-relay\"])", d.Kind)
		}
		if len(d.Command) > 0 && d.Command[0] == "" {
			c.add(key+".command", "names no program")
		}
	}
}
