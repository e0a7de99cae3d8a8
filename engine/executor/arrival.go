package executor

import (
	"math"
	"math/big"
	"sort"
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

// ConstantSchedule: event k starts at exactly k·TimeUnit/Rate, the first at
// 0; events at or after Duration do not start (§2.7).
type ConstantSchedule struct {
	Rate     int64
	TimeUnit time.Duration
	Duration time.Duration
}

// Schedule of this scenario.
func (c *ConstantArrivalRateConfig) Schedule() ConstantSchedule {
	return ConstantSchedule{Rate: c.Rate, TimeUnit: c.TimeUnit, Duration: c.Duration}
}

// Events = the number of k with k·TimeUnit/Rate < Duration = ceil(Duration·Rate/TimeUnit).
func (s ConstantSchedule) Events() int64 {
	if s.Rate <= 0 || s.TimeUnit <= 0 || s.Duration <= 0 {
		return 0
	}
	return mulDivCeil(int64(s.Duration), s.Rate, int64(s.TimeUnit))
}

// Offset is floor(g·TimeUnit/Rate) nanoseconds: absolute offsets, no drift.
func (s ConstantSchedule) Offset(g int64) time.Duration {
	return time.Duration(mulDivFloor(g, int64(s.TimeUnit), s.Rate))
}

func (s ConstantSchedule) Stage(int64) int { return -1 }

func (s ConstantSchedule) String() string {
	return rateText(float64(s.Rate), s.TimeUnit) + " for " + s.Duration.String()
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

// LocalOffsets lists the start offsets of the events that the instance with
// derived tuple d (from Tuple.Derive(maxVUs)) runs, in order. For tests and
// tools; the scheduler walks the same indices lazily.
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
