package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// ConstantVUsConfig: VUs loop for Duration (§2.5).
type ConstantVUsConfig struct {
	BaseConfig
	VUs      int64
	Duration time.Duration
}

func (c *ConstantVUsConfig) Validate() error {
	v := c.validate()
	v.check(c.VUs > 0, "vus", "must be greater than 0, got %d", c.VUs)
	validateMaxDuration(v, "duration", c.Duration)
	return v.err()
}

func (c *ConstantVUsConfig) ExecutionSteps(t *segment.Tuple) []Step {
	return fixedSteps(t.ScaleInt64(c.VUs), 0, c.Duration+c.GracefulStop)
}

func (c *ConstantVUsConfig) Description(t *segment.Tuple) string {
	return fmt.Sprintf("%d looping VUs for %s (%s%s)", t.ScaleInt64(c.VUs), formatDuration(c.Duration), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

func (c *ConstantVUsConfig) shortcutJSON(m map[string]any) {
	m["vus"], m["duration"] = c.VUs, c.Duration.String()
}

func (c *ConstantVUsConfig) run(ctx context.Context, r *scenarioRun, t *segment.Tuple) {
	r.setProgress(r.elapsedProgress(c.Duration))
	r.runLoopingVUs(ctx, t.ScaleInt64(c.VUs), c.Duration, c.GracefulStop)
}

// runLoopingVUs (constant-vus): n VUs loop until the regular duration ends.
func (r *scenarioRun) runLoopingVUs(ctx context.Context, n int64, regular, gracefulStop time.Duration) {
	reg, grace, cancel := r.durationContexts(ctx, regular, gracefulStop)
	defer cancel()
	r.runFixedVUs(n, grace, func(pv *pooledVU) {
		for !isDone(reg) && !isDone(grace) {
			r.iterate(grace, pv, r.nextIter.Add(1)-1)
		}
	})
}
