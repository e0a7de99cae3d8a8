package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// ConstantArrivalRateConfig: Rate iterations per TimeUnit for Duration (§2.7).
type ConstantArrivalRateConfig struct {
	BaseConfig
	Rate            int64
	TimeUnit        time.Duration
	Duration        time.Duration
	PreAllocatedVUs int64
	MaxVUs          int64
}

func (c *ConstantArrivalRateConfig) Validate() error {
	v := c.validate()
	v.check(c.Rate > 0, "rate", "must be greater than 0, got %d", c.Rate)
	validateMaxDuration(v, "duration", c.Duration)
	validateArrival(v, c.TimeUnit, c.PreAllocatedVUs, c.MaxVUs)
	return v.err()
}

func (c *ConstantArrivalRateConfig) ExecutionSteps(t *segment.Tuple) []Step {
	pre, maxVUs := t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs)
	return fixedSteps(pre, maxVUs-pre, c.Duration+c.GracefulStop)
}

func (c *ConstantArrivalRateConfig) Description(t *segment.Tuple) string {
	share := derivedShare(t, c.MaxVUs)
	return fmt.Sprintf("%s for %s (maxVUs: %d-%d, %s%s)", rateText(float64(c.Rate)*share, c.TimeUnit), formatDuration(c.Duration), t.ScaleInt64(c.PreAllocatedVUs), t.ScaleInt64(c.MaxVUs), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
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

// run: the arrival-rate run (run_arrival.go) on the constant schedule.
func (c *ConstantArrivalRateConfig) run(ctx context.Context, r *scenarioRun, t *segment.Tuple) {
	r.runArrivalRate(ctx, c.Schedule(), c.Duration, c.GracefulStop, c.PreAllocatedVUs, c.MaxVUs, t)
}
