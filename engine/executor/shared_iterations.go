package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// SharedIterationsConfig: VUs share one pool of Iterations (§2.3).
type SharedIterationsConfig struct {
	BaseConfig
	VUs         int64
	Iterations  int64
	MaxDuration time.Duration
}

func (c *SharedIterationsConfig) Validate() error {
	v := c.validate()
	v.check(c.VUs > 0, "vus", "must be greater than 0, got %d", c.VUs)
	v.check(c.Iterations >= c.VUs, "iterations", "the number of iterations (%d) can't be less than the number of VUs (%d)", c.Iterations, c.VUs)
	validateMaxDuration(v, "maxDuration", c.MaxDuration)
	return v.err()
}

// ExecutionSteps: all VUs are reserved for maxDuration + gracefulStop even if
// the iterations finish early (§2.3).
// An instance whose segment gets no VUs has nothing to wait for: its plan
// ends at 0 (k6 inspect: maxVUs 0, totalDuration "0s").
func (c *SharedIterationsConfig) ExecutionSteps(t *segment.Tuple) []Step {
	vus := t.ScaleInt64(c.VUs)
	if vus == 0 {
		return []Step{{Offset: 0}}
	}
	return fixedSteps(vus, 0, c.MaxDuration+c.GracefulStop)
}

func (c *SharedIterationsConfig) Description(t *segment.Tuple) string {
	// The instance's share of the iterations, from its share of the VUs; 0
	// where the segment cannot be derived (k6 prints 0 then too).
	var iters int64
	if d, ok, err := t.Derive(c.VUs); err == nil && ok {
		iters = d.ScaleInt64(c.Iterations)
	}
	return fmt.Sprintf("%d iterations shared among %d VUs (maxDuration: %s, %s%s)", iters, t.ScaleInt64(c.VUs), formatDuration(c.MaxDuration), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

// runSharedIterations: the instance's VUs take iterations from one counter
// until its share of the iterations has started or maxDuration passes (§2.3).
func (c *SharedIterationsConfig) shortcutJSON(m map[string]any) {
	m["vus"], m["iterations"], m["maxDuration"] = c.VUs, c.Iterations, c.MaxDuration.String()
}

func (c *SharedIterationsConfig) run(ctx context.Context, r *scenarioRun, t *segment.Tuple) {
	r.runSharedIterations(ctx, c, t)
}

func (r *scenarioRun) runSharedIterations(ctx context.Context, c *SharedIterationsConfig, t *segment.Tuple) {
	vus := t.ScaleInt64(c.VUs)
	d, ok, err := t.Derive(c.VUs)
	if err != nil {
		r.sched.fail(fmt.Errorf("scenario %s: %w", r.info.Name, err))
		return
	}
	if !ok || vus == 0 {
		return
	}
	total := d.ScaleInt64(c.Iterations)
	r.iterTuple = d
	r.setProgress(func() float64 { return float64(r.completed.Load()) / float64(total) })
	reg, grace, cancel := r.durationContexts(ctx, c.MaxDuration, c.GracefulStop)
	defer cancel()
	r.runFixedVUs(vus, grace, func(pv *pooledVU) {
		for !isDone(reg) && !isDone(grace) {
			local := r.nextIter.Add(1) - 1
			if local >= total {
				return
			}
			r.iterate(grace, pv, local)
		}
	})
	if started := min(r.nextIter.Load(), total); started < total {
		r.drop(Dropped{Count: total - started})
	}
}
