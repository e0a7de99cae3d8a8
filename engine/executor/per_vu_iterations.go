package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// PerVUIterationsConfig: every VU runs Iterations iterations (§2.4).
type PerVUIterationsConfig struct {
	BaseConfig
	VUs         int64
	Iterations  int64
	MaxDuration time.Duration
}

func (c *PerVUIterationsConfig) Validate() error {
	v := c.validate()
	v.check(c.VUs > 0, "vus", "must be greater than 0, got %d", c.VUs)
	v.check(c.Iterations > 0, "iterations", "must be greater than 0, got %d", c.Iterations)
	validateMaxDuration(v, "maxDuration", c.MaxDuration)
	return v.err()
}

func (c *PerVUIterationsConfig) ExecutionSteps(t *segment.Tuple) []Step {
	return fixedSteps(t.ScaleInt64(c.VUs), 0, c.MaxDuration+c.GracefulStop)
}

func (c *PerVUIterationsConfig) Description(t *segment.Tuple) string {
	return fmt.Sprintf("%d iterations for each of %d VUs (maxDuration: %s, %s%s)", c.Iterations, t.ScaleInt64(c.VUs), formatDuration(c.MaxDuration), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

// runPerVUIterations: every VU runs the full count; at maxDuration each
// unfinished VU reports what it did not start (§2.4).
func (c *PerVUIterationsConfig) run(ctx context.Context, r *scenarioRun, t *segment.Tuple) {
	r.runPerVUIterations(ctx, c, t)
}

func (r *scenarioRun) runPerVUIterations(ctx context.Context, c *PerVUIterationsConfig, t *segment.Tuple) {
	vus := t.ScaleInt64(c.VUs)
	if vus == 0 {
		return
	}
	r.setProgress(func() float64 {
		return float64(r.completed.Load()+r.interrupted.Load()) / float64(vus*c.Iterations)
	})
	reg, grace, cancel := r.durationContexts(ctx, c.MaxDuration, c.GracefulStop)
	defer cancel()
	r.runFixedVUs(vus, grace, func(pv *pooledVU) {
		var j int64
		for ; j < c.Iterations && !isDone(reg) && !isDone(grace); j++ {
			r.iterate(grace, pv, r.nextIter.Add(1)-1)
		}
		if j < c.Iterations {
			r.drop(Dropped{Count: c.Iterations - j, VUIDInInstance: pv.idInstance, VUIDInTest: pv.idTest})
		}
	})
}
