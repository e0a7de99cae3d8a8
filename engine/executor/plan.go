package executor

import (
	"fmt"
	"sort"
	"time"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/segment"
)

// Plan is everything the scheduler and the banner need, computed once from
// the configs and this instance's tuple. It holds no clock.
type Plan struct {
	Scenarios []Config // sorted by (startTime, name)
	Tuple     *segment.Tuple
	// Steps are each scenario's execution steps (same order), offsets relative
	// to the scenario's startTime.
	Steps [][]Step
	// MaxPlannedVUs is the most VUs the scenarios need at once: the VUs to
	// initialise before setup().
	MaxPlannedVUs int64
	// MaxVUs adds the unplanned VUs the arrival-rate executors may create:
	// the "max VUs" of the banner.
	MaxVUs int64
	// MaxDuration is the end of the plan as k6 computes it (inspect's
	// totalDuration, the banner's max duration): the offset of the last
	// change of the summed VUs — the latest startTime + duration +
	// gracefulStop (plus ramp-down reservations) of a scenario with work; a
	// segment with no work at all ends where it starts, 0s.
	MaxDuration time.Duration
}

// NewPlan validates the configs (again: configs may be built in Go) and
// computes their steps on tuple t (nil means a run that is not split).
func NewPlan(configs []Config, t *segment.Tuple) (*Plan, error) {
	if t == nil {
		t = segment.FullTuple()
	}
	cs := append([]Config(nil), configs...)
	SortConfigs(cs)
	seen := map[string]bool{}
	for _, c := range cs {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if n := c.Base().Name; seen[n] {
			return nil, configerr.Errorf(n, "", "duplicate scenario name")
		} else {
			seen[n] = true
		}
	}
	p := &Plan{Scenarios: cs, Tuple: t}
	for _, c := range cs {
		p.Steps = append(p.Steps, c.ExecutionSteps(t))
	}
	p.MaxPlannedVUs, p.MaxVUs = MaxVUs(cs, p.Steps)
	p.MaxDuration = PlanEnd(cs, p.Steps)
	return p, nil
}

// PlanEnd is k6's end of a plan (lib.GetEndOffset over
// ScenarioConfigs.GetFullExecutionRequirements, k6 v2.2.0): the scenarios'
// steps, shifted by their startTime and taken in time order (ties in
// scenario order), make a consolidated step whenever the summed planned or
// unplanned VUs change, the first always; the plan ends at the last one. A
// scenario with no VUs in this segment changes nothing, so it does not
// stretch the plan (observed: inspect of a segment with no work says 0s).
func PlanEnd(configs []Config, steps [][]Step) time.Duration {
	type tracked struct {
		at   time.Duration
		cfg  int
		p, u int64
	}
	var ts []tracked
	for i, st := range steps {
		for _, s := range st {
			ts = append(ts, tracked{configs[i].Base().StartTime + s.Offset, i, s.PlannedVUs, s.MaxUnplannedVUs})
		}
	}
	sort.SliceStable(ts, func(a, b int) bool {
		if ts[a].at == ts[b].at {
			return ts[a].cfg < ts[b].cfg
		}
		return ts[a].at < ts[b].at
	})
	curP, curU := make([]int64, len(steps)), make([]int64, len(steps))
	var end time.Duration
	var lastP, lastU int64
	for k, s := range ts {
		curP[s.cfg], curU[s.cfg] = s.p, s.u
		var sp, su int64
		for i := range curP {
			sp += curP[i]
			su += curU[i]
		}
		if k == 0 || sp != lastP || su != lastU {
			end, lastP, lastU = s.at, sp, su
		}
	}
	return end
}

// MaxVUs sums the scenarios' steps, each shifted by its startTime, and
// returns the largest planned sum and the largest planned + unplanned sum
// (§2.11). VUs sit in one shared pool, so scenarios that do not overlap in
// the plan reuse them.
func MaxVUs(configs []Config, steps [][]Step) (planned, total int64) {
	type change struct {
		at             time.Duration
		dPlan, dUnplan int64
	}
	var ch []change
	for i, st := range steps {
		shift := configs[i].Base().StartTime
		var prevP, prevU int64
		for _, s := range st {
			ch = append(ch, change{shift + s.Offset, s.PlannedVUs - prevP, s.MaxUnplannedVUs - prevU})
			prevP, prevU = s.PlannedVUs, s.MaxUnplannedVUs
		}
	}
	sort.SliceStable(ch, func(a, b int) bool { return ch[a].at < ch[b].at })
	var p, u int64
	for k := 0; k < len(ch); {
		at := ch[k].at
		for ; k < len(ch) && ch[k].at == at; k++ {
			p += ch[k].dPlan
			u += ch[k].dUnplan
		}
		planned = max(planned, p)
		total = max(total, p+u)
	}
	return planned, total
}

// Banner describes the plan like k6's "scenarios:" block.
func (p *Plan) Banner() []string {
	f, _ := p.Tuple.Segment().Length().Float64()
	lines := []string{fmt.Sprintf("scenarios: (%.2f%%) %d scenario(s), %d max VUs, %s max duration (incl. graceful stop):",
		f*100, len(p.Scenarios), p.MaxVUs, p.MaxDuration)}
	for _, c := range p.Scenarios {
		b := c.Base()
		lines = append(lines, fmt.Sprintf("* %s: %s", b.Name, c.Description(p.Tuple)))
	}
	return lines
}
