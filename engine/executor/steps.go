package executor

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// Step is one point of an execution plan: from Offset on (until the next
// step) the scenario needs PlannedVUs initialised VUs and may create up to
// MaxUnplannedVUs more while it runs (arrival-rate executors only).
type Step struct {
	Offset          time.Duration
	PlannedVUs      int64
	MaxUnplannedVUs int64
}

// mulDivCeil returns ceil(a·b/c) for non-negative a, b and positive c
// without overflowing the product (128-bit intermediate); a quotient beyond
// int64 is clamped to math.MaxInt64 (only absurd configs get there).
func mulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	return clampInt64(q)
}

// mulDivFloor returns floor(a·b/c), like mulDivCeil.
func mulDivFloor(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	return clampInt64(q)
}

func clampInt64(q uint64) int64 {
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

func fixedSteps(vus int64, unplanned int64, end time.Duration) []Step {
	return []Step{{Offset: 0, PlannedVUs: vus, MaxUnplannedVUs: unplanned}, {Offset: end}}
}

// ExecutionSteps: all VUs are reserved for maxDuration + gracefulStop even if
// the iterations finish early (§2.3).
func (c *SharedIterationsConfig) ExecutionSteps(t *segment.Tuple) []Step {
	return fixedSteps(t.ScaleInt64(c.VUs), 0, c.MaxDuration+c.GracefulStop)
}

func (c *PerVUIterationsConfig) ExecutionSteps(t *segment.Tuple) []Step {
	return fixedSteps(t.ScaleInt64(c.VUs), 0, c.MaxDuration+c.GracefulStop)
}

func (c *ConstantVUsConfig) ExecutionSteps(t *segment.Tuple) []Step {
	return fixedSteps(t.ScaleInt64(c.VUs), 0, c.Duration+c.GracefulStop)
}

func (c *ConstantArrivalRateConfig) ExecutionSteps(t *segment.Tuple) []Step {
	pre, maxVUs := t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs)
	return fixedSteps(pre, maxVUs-pre, c.Duration+c.GracefulStop)
}

func (c *RampingArrivalRateConfig) ExecutionSteps(t *segment.Tuple) []Step {
	pre, maxVUs := t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs)
	return fixedSteps(pre, maxVUs-pre, stagesDuration(c.Stages)+c.GracefulStop)
}

func stagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, s := range stages {
		d += s.Duration
	}
	return d
}

// Duration is the regular duration: the sum of the stage durations.
func (c *RampingVUsConfig) Duration() time.Duration { return stagesDuration(c.Stages) }

// Duration is the regular duration: the sum of the stage durations.
func (c *RampingArrivalRateConfig) Duration() time.Duration { return stagesDuration(c.Stages) }

// RawSteps is the ramping-vus staircase on the instance described by t: the
// number of VUs that should be running from each Offset on (PlannedVUs),
// without the graceful ramp-down reservations. The first step is at 0.
//
// Globally, going up from a to b over d, VU number n (a < n ≤ b) starts at
// ceil(d·(n−a)/(b−a)) after the stage start, so running = floor(target(t));
// going down, VU n (b < n ≤ a) stops at ceil(d·(a−n+1)/(a−b)), so running =
// ceil(target(t)). An instance owns the global VU numbers its stripe gives
// it, so it walks only those: its staircase is ScaleInt64 of the global one,
// and the instances' staircases add up to the single-instance curve.
func (c *RampingVUsConfig) RawSteps(t *segment.Tuple) []Step {
	cur := c.StartVUs
	local := t.ScaleInt64(cur)
	steps := []Step{{Offset: 0, PlannedVUs: local}}
	add := func(off time.Duration, n int64) {
		if last := &steps[len(steps)-1]; last.Offset == off {
			last.PlannedVUs = n
			return
		}
		steps = append(steps, Step{Offset: off, PlannedVUs: n})
	}
	var start time.Duration
	for _, s := range c.Stages {
		a, b, d := cur, s.Target, int64(s.Duration)
		switch {
		case d == 0:
			if nb := t.ScaleInt64(b); nb != local {
				local = nb
				add(start, local)
			}
		case b > a:
			for k := local + 1; k <= t.ScaleInt64(b); k++ {
				n := t.GlobalIndex(k-1) + 1 // global 1-based VU number
				add(start+time.Duration(mulDivCeil(d, n-a, b-a)), k)
			}
			local = t.ScaleInt64(b)
		case b < a:
			for k := local; k > t.ScaleInt64(b); k-- {
				n := t.GlobalIndex(k-1) + 1
				add(start+time.Duration(mulDivCeil(d, a-n+1, a-b)), k-1)
			}
			local = t.ScaleInt64(b)
		}
		cur = b
		start += s.Duration
	}
	return steps
}

// ExecutionSteps adds to the staircase the VUs that are winding down: a VU
// asked to stop stays reserved for gracefulRampDown (so the target can rise
// again and reuse it), and everything ends at duration + gracefulStop.
func (c *RampingVUsConfig) ExecutionSteps(t *segment.Tuple) []Step {
	return reserveRampDowns(c.RawSteps(t), c.GracefulRampDown, c.Duration()+c.GracefulStop)
}

// reserveRampDowns computes planned(τ) = max of raw over (τ−grace, τ],
// truncated at end (where it drops to 0). A sliding-window maximum over the
// step values: the window at τ covers the step in force at τ−grace and all
// steps after it up to τ.
func reserveRampDowns(raw []Step, grace, end time.Duration) []Step {
	var out []Step
	emit := func(off time.Duration, v int64) {
		if off >= end {
			return
		}
		if n := len(out); n > 0 {
			if out[n-1].Offset == off {
				out[n-1].PlannedVUs = v
				if n > 1 && out[n-2].PlannedVUs == v {
					out = out[:n-1]
				}
				return
			}
			if out[n-1].PlannedVUs == v {
				return
			}
		}
		out = append(out, Step{Offset: off, PlannedVUs: v})
	}
	// Candidate times: each raw step (the window's head moves) and each
	// expiry raw[i].Offset+grace (the window's tail moves past step i−1).
	var deque []int // indices into raw, values decreasing
	hi, lo := -1, 0
	i, j := 0, 1
	for i < len(raw) || j < len(raw) {
		var tau time.Duration
		switch {
		case j >= len(raw) || (i < len(raw) && raw[i].Offset <= raw[j].Offset+grace):
			tau = raw[i].Offset
		default:
			tau = raw[j].Offset + grace
		}
		if tau >= end {
			break
		}
		for i < len(raw) && raw[i].Offset <= tau {
			hi = i
			for len(deque) > 0 && raw[deque[len(deque)-1]].PlannedVUs <= raw[i].PlannedVUs {
				deque = deque[:len(deque)-1]
			}
			deque = append(deque, i)
			i++
		}
		for j < len(raw) && raw[j].Offset+grace <= tau {
			lo = j
			j++
		}
		for len(deque) > 0 && deque[0] < lo {
			deque = deque[1:]
		}
		if hi >= 0 && len(deque) > 0 {
			emit(tau, raw[deque[0]].PlannedVUs)
		}
	}
	// Always close at the end, so EndOffset is duration + gracefulStop.
	return append(out, Step{Offset: end})
}

// EndOffset is when the last step of steps ends (the scenario's share of
// "max duration" in the banner, before adding startTime).
func EndOffset(steps []Step) time.Duration {
	if len(steps) == 0 {
		return 0
	}
	return steps[len(steps)-1].Offset
}

// --- banner descriptions ------------------------------------------------------

func gracefulText(c *BaseConfig) string {
	return "gracefulStop: " + formatDuration(c.GracefulStop)
}

func startText(c *BaseConfig) string {
	if c.StartTime == 0 {
		return ""
	}
	return "startTime: " + formatDuration(c.StartTime) + ", "
}

func (c *SharedIterationsConfig) Description(t *segment.Tuple) string {
	iters := c.Iterations
	if d, ok, err := t.Derive(c.VUs); err == nil && ok {
		iters = d.ScaleInt64(c.Iterations)
	} else {
		iters = 0
	}
	return fmt.Sprintf("%d iterations shared among %d VUs (maxDuration: %s, %s%s)", iters, t.ScaleInt64(c.VUs), formatDuration(c.MaxDuration), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

func (c *PerVUIterationsConfig) Description(t *segment.Tuple) string {
	return fmt.Sprintf("%d iterations for each of %d VUs (maxDuration: %s, %s%s)", c.Iterations, t.ScaleInt64(c.VUs), formatDuration(c.MaxDuration), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

func (c *ConstantVUsConfig) Description(t *segment.Tuple) string {
	return fmt.Sprintf("%d looping VUs for %s (%s%s)", t.ScaleInt64(c.VUs), formatDuration(c.Duration), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

func (c *RampingVUsConfig) Description(t *segment.Tuple) string {
	var maxVUs int64
	for _, s := range c.RawSteps(t) {
		maxVUs = max(maxVUs, s.PlannedVUs)
	}
	return fmt.Sprintf("Up to %d looping VUs for %s over %d stages (gracefulRampDown: %s, %s%s)", maxVUs, formatDuration(c.Duration()), len(c.Stages), formatDuration(c.GracefulRampDown), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

func rateText(rate float64, unit time.Duration) string {
	return fmt.Sprintf("%.2f iterations/s", rate*float64(time.Second)/float64(unit))
}

func (c *ConstantArrivalRateConfig) Description(t *segment.Tuple) string {
	share := derivedShare(t, c.MaxVUs)
	return fmt.Sprintf("%s for %s (maxVUs: %d-%d, %s%s)", rateText(float64(c.Rate)*share, c.TimeUnit), formatDuration(c.Duration), t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

func (c *RampingArrivalRateConfig) Description(t *segment.Tuple) string {
	share := derivedShare(t, c.MaxVUs)
	peak := c.StartRate
	for _, s := range c.Stages {
		peak = max(peak, s.Target)
	}
	return fmt.Sprintf("Up to %s for %s over %d stages (maxVUs: %d-%d, %s%s)", rateText(float64(peak)*share, c.TimeUnit), formatDuration(c.Duration()), len(c.Stages), t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

// derivedShare is this instance's fraction of the arrival-rate events.
func derivedShare(t *segment.Tuple, maxVUs int64) float64 {
	d, ok, err := t.Derive(maxVUs)
	if err != nil || !ok {
		return 0
	}
	f, _ := d.Segment().Length().Float64()
	return f
}
