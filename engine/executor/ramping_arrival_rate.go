package executor

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"sort"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// RampingArrivalRateConfig: the rate follows Stages (targets are iterations
// per TimeUnit) from StartRate (§2.8).
type RampingArrivalRateConfig struct {
	BaseConfig
	StartRate       int64
	TimeUnit        time.Duration
	Stages          []Stage
	PreAllocatedVUs int64
	MaxVUs          int64
}

func (c *RampingArrivalRateConfig) Validate() error {
	v := c.validate()
	v.check(c.StartRate >= 0, "startRate", "must not be negative, got %d", c.StartRate)
	validateStages(v, c.Stages)
	validateArrival(v, c.TimeUnit, c.PreAllocatedVUs, c.MaxVUs)
	return v.err()
}

func (c *RampingArrivalRateConfig) ExecutionSteps(t *segment.Tuple) []Step {
	pre, maxVUs := t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs)
	return fixedSteps(pre, maxVUs-pre, stagesDuration(c.Stages)+c.GracefulStop)
}

// Duration is the regular duration: the sum of the stage durations.
func (c *RampingArrivalRateConfig) Duration() time.Duration { return stagesDuration(c.Stages) }

func (c *RampingArrivalRateConfig) Description(t *segment.Tuple) string {
	share := derivedShare(t, c.MaxVUs)
	peak := c.StartRate
	for _, s := range c.Stages {
		peak = max(peak, s.Target)
	}
	return fmt.Sprintf("Up to %s for %s over %d stages (maxVUs: %d-%d, %s%s)", rateText(float64(peak)*share, c.TimeUnit), formatDuration(c.Duration()), len(c.Stages), t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

// RampingSchedule: the rate moves linearly from stage to stage, and event n
// (1-based) starts where the area under the rate curve reaches n (§2.8).
// Fractions carry across stages; stage boundaries are decided exactly (big
// rationals), the position inside a stage in float64 (sub-nanosecond error).
type RampingSchedule struct {
	timeUnit float64
	stages   []rampStage
	events   int64
}

type rampStage struct {
	start      time.Duration
	dur        float64 // ns
	r0, r1     float64 // iterations per timeUnit
	baseFloor  int64   // floor(area before the stage)
	baseFrac   float64 // area before the stage − baseFloor
	lastEvent  int64   // floor(area at the stage's end): events up to this one are in it
	endIsExact bool    // the area at the end is a whole number: that event lands exactly on the end
}

// Schedule of this scenario.
func (c *RampingArrivalRateConfig) Schedule() *RampingSchedule {
	return NewRampingSchedule(c.StartRate, c.TimeUnit, c.Stages)
}

// NewRampingSchedule precomputes the stage areas.
func NewRampingSchedule(startRate int64, timeUnit time.Duration, stages []Stage) *RampingSchedule {
	s := &RampingSchedule{timeUnit: float64(timeUnit)}
	area := new(big.Rat)
	from := startRate
	var start time.Duration
	for _, st := range stages {
		before := new(big.Rat).Set(area)
		// area of the trapezoid: (r0+r1)·D / (2·T)
		if timeUnit > 0 {
			num := new(big.Int).Mul(big.NewInt(from+st.Target), big.NewInt(int64(st.Duration)))
			den := new(big.Int).Mul(big.NewInt(2), big.NewInt(int64(timeUnit)))
			area.Add(area, new(big.Rat).SetFrac(num, den))
		}
		bf := ratFloor(before)
		frac, _ := new(big.Rat).Sub(before, new(big.Rat).SetInt64(bf)).Float64()
		last := ratFloor(area)
		s.stages = append(s.stages, rampStage{
			start: start, dur: float64(st.Duration),
			r0: float64(from), r1: float64(st.Target),
			baseFloor: bf, baseFrac: frac, lastEvent: last,
			endIsExact: area.IsInt(),
		})
		from = st.Target
		start += st.Duration
	}
	s.events = ratFloor(area)
	return s
}

func ratFloor(r *big.Rat) int64 {
	q := new(big.Int).Quo(r.Num(), r.Denom()) // r ≥ 0, so truncation is floor
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

func (s *RampingSchedule) Events() int64 { return s.events }

func (s *RampingSchedule) stageOf(n int64) int {
	return sort.Search(len(s.stages), func(i int) bool { return s.stages[i].lastEvent >= n })
}

// Stage is the index of the stage in which global event g starts.
func (s *RampingSchedule) Stage(g int64) int { return s.stageOf(g + 1) }

// Offset solves r0·x + (r1−r0)·x²/(2D) = m·T for x, where m is what is left
// of event n = g+1 after the area before the stage. The rationalised root
// x = 2DTm / (r0·D + sqrt((r0·D)² + 2(r1−r0)·D·T·m)) has no cancellation and
// gives x = T·m/r0 for a flat stage.
func (s *RampingSchedule) Offset(g int64) time.Duration {
	n := g + 1
	i := s.stageOf(n)
	if i >= len(s.stages) {
		return -1
	}
	st := &s.stages[i]
	if n == st.lastEvent && st.endIsExact {
		return st.start + time.Duration(st.dur)
	}
	m := float64(n-st.baseFloor) - st.baseFrac
	a := st.r0 * st.dur
	x := 2 * st.dur * s.timeUnit * m / (a + math.Sqrt(a*a+2*(st.r1-st.r0)*st.dur*s.timeUnit*m))
	x = math.Min(math.Max(math.Round(x), 0), st.dur)
	return st.start + time.Duration(x)
}

// StageList is the scenario's stages.
func (c *RampingArrivalRateConfig) StageList() []Stage { return c.Stages }

// run: the arrival-rate run (run_arrival.go) on the stages' schedule, the
// stage events beside it.
func (c *RampingArrivalRateConfig) run(ctx context.Context, r *scenarioRun, t *segment.Tuple) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.runStages(ctx)
	}()
	r.runArrivalRate(ctx, c.Schedule(), c.Duration(), c.GracefulStop, c.PreAllocatedVUs, c.MaxVUs, t)
	wg.Wait()
}
