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

func stagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, s := range stages {
		d += s.Duration
	}
	return d
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

func rateText(rate float64, unit time.Duration) string {
	return fmt.Sprintf("%.2f iterations/s", rate*float64(time.Second)/float64(unit))
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
