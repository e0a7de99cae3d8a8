package scenario

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// StepPlan is one ramp step placed on the run's timeline. A step is its ramp
// followed by its hold, and it is reported and judged over both.
type StepPlan struct {
	Index int
	Users float64
	// Start, RampEnd and End are offsets from the start of the run: the ramp
	// is [Start, RampEnd), the hold [RampEnd, End).
	Start, RampEnd, End time.Duration
	// Clients is every kind's client count at the end of the ramp, all shards.
	Clients Counts
}

// Secs converts a scenario's seconds to a Duration, to the nanosecond.
func Secs(secs float64) time.Duration {
	return time.Duration(math.Round(secs * float64(time.Second)))
}

// Steps places every ramp step on the timeline, back to back.
func (s *Scenario) Steps() []StepPlan {
	out := make([]StepPlan, len(s.Ramp))
	var at time.Duration
	for i, st := range s.Ramp {
		p := StepPlan{Index: i, Users: st.Users, Start: at}
		p.RampEnd = p.Start + Secs(st.RampSecs)
		p.End = p.RampEnd + Secs(st.HoldSecs)
		p.Clients = s.CountsAt(st.Users, Shard{})
		out[i] = p
		at = p.End
	}
	return out
}

// Duration is the run's length: the end of the last step's hold. It is
// the sum Steps places, without the client counts Steps works out (a pass
// over every human per step): the extension asks for it per session.
func (s *Scenario) Duration() time.Duration {
	var at time.Duration
	for _, st := range s.Ramp {
		at += Secs(st.RampSecs) + Secs(st.HoldSecs)
	}
	return at
}

// StepAt is the index of the step whose [Start, End) holds offset, or -1
// before the run or after its end.
func (s *Scenario) StepAt(offset time.Duration) int {
	for _, p := range s.Steps() {
		if offset >= p.Start && offset < p.End {
			return p.Index
		}
	}
	return -1
}

// Stage is one ramping-vus stage: move linearly to Target VUs over Duration.
// Name labels it (exec.scenario.stage.name); the runner judges consecutive
// stages named alike as one threshold window.
type Stage struct {
	Duration time.Duration
	Target   int
	Name     string
}

// MarshalJSON writes the stage as k6 options do:
// {"duration":"1m30s","target":5,"name":"step-0"} (no name when empty).
func (st Stage) MarshalJSON() ([]byte, error) {
	b := []byte(`{"duration":"` + st.Duration.String() + `","target":` + strconv.Itoa(st.Target))
	if st.Name != "" {
		n, err := json.Marshal(st.Name) // JSON escaping, not Go's
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"name":`...), n...)
	}
	return append(b, '}'), nil
}

// StepStageName is the name of both stages of step i: the runner judges a
// step's ramp and hold as one window (buzz-LOADGEN "Abort").
func StepStageName(i int) string { return "step-" + strconv.Itoa(i) }

// Stages is the ramping-vus plan (startVUs 0) of one kind's clients in shard
// sh: two stages per ramp step, index 2·i its ramp to the step's count over
// ramp_secs and index 2·i+1 its hold at that count for hold_secs, both named
// StepStageName(i). Zero-length stages are kept so stage indices map to
// steps. The targets are VUs: with several clients per VU (ClientsPerVU) a
// step's count rounded up to whole VUs.
func (s *Scenario) Stages(k Kind, sh Shard) []Stage {
	out := make([]Stage, 0, 2*len(s.Ramp))
	for i, st := range s.Ramp {
		n := ceilDiv(s.CountsAt(st.Users, sh)[k], s.ClientsPerVU(k))
		name := StepStageName(i)
		out = append(out,
			Stage{Duration: Secs(st.RampSecs), Target: n, Name: name},
			Stage{Duration: Secs(st.HoldSecs), Target: n, Name: name})
	}
	return out
}

// MaxHumansPerVU bounds population.humans_per_vu: past a few hundred the
// runtime's share of a human is already below a hundred bytes.
const MaxHumansPerVU = 10000

// ClientsPerVU is how many clients of kind k one VU runs: population.humans_per_vu
// for basic humans, 1 for every other kind (a desktop human, an agent and a
// hot-thread author each keep a VU of their own).
func (s *Scenario) ClientsPerVU(k Kind) int {
	if k == KindHuman && s.Population.HumansPerVU > 1 {
		return s.Population.HumansPerVU
	}
	return 1
}

func ceilDiv(n, d int) int { return (n + d - 1) / d }
