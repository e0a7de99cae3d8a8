package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// ExternallyControlledConfig: VUs loop for Duration, their number set at
// run time through the REST API (PATCH /v1/status vus and vus-max), as k6
// v1.x's externally-controlled executor (docs/k6-compat.md §2). MaxVUs VUs
// are initialised before the run; raising vus-max initialises more while
// it goes (up to MaxRaisedVUs above the plan's VUs per instance); it can
// never go below the starting MaxVUs.
type ExternallyControlledConfig struct {
	BaseConfig
	VUs, MaxVUs int64
	Duration    time.Duration
}

func (c *ExternallyControlledConfig) Validate() error {
	v := c.validate()
	v.check(c.VUs >= 0, "vus", "must be 0 or more, got %d", c.VUs)
	v.check(c.MaxVUs >= c.VUs, "maxVUs", "must be at least vus (%d), got %d", c.VUs, c.MaxVUs)
	validateMaxDuration(v, "duration", c.Duration)
	return v.err()
}

func (c *ExternallyControlledConfig) ExecutionSteps(t *segment.Tuple) []Step {
	return fixedSteps(t.ScaleInt64(c.MaxVUs), 0, c.Duration+c.GracefulStop)
}

func (c *ExternallyControlledConfig) Description(t *segment.Tuple) string {
	return fmt.Sprintf("Up to %d looping VUs for %s controlled externally (%s%s)", t.ScaleInt64(c.MaxVUs), formatDuration(c.Duration),
		startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

// MaxRaisedVUs is how many VUs above the plan's an instance can add by
// raising vus-max during a run: the pool's channel is sized for them (8
// bytes each) when the run has an externally-controlled scenario.
const MaxRaisedVUs = 100_000

// External is the run-time control of an externally-controlled scenario.
type External struct {
	update  sync.Mutex // one Update at a time (raising initialises VUs)
	mu      sync.Mutex
	vus     int64
	max     int64
	start   int64                                    // the configured maxVUs: vus-max never goes below it
	raise   func(ctx context.Context, n int64) error // adds n VUs (this instance's share) to the pool
	scale   func(int64) int64                        // the whole test's VUs → this instance's
	ctx     context.Context                          // the scenario's, once it runs (VU init)
	changed chan struct{}                            // a token when vus or max changed
}

func newExternal(vus, maxVUs int64, raise func(context.Context, int64) error, scale func(int64) int64) *External {
	return &External{vus: vus, max: maxVUs, start: maxVUs, raise: raise, scale: scale, changed: make(chan struct{}, 1)}
}

// Status is the wanted VUs and the maximum.
func (e *External) Status() (vus, maxVUs int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.vus, e.max
}

// ErrNoExternal: the run has no externally-controlled scenario.
var ErrNoExternal = errors.New("an externally-controlled executor needs to be configured for live configuration updates")

// Update sets the VUs and the maximum, with k6 v1.8.1's refusals (observed
// through its REST API). A higher maximum initialises the new VUs before it
// returns, as k6's PATCH does.
func (e *External) Update(vus, maxVUs *int64) error {
	e.update.Lock()
	defer e.update.Unlock()
	e.mu.Lock()
	nv, nm, ctx := e.vus, e.max, e.ctx
	e.mu.Unlock()
	if vus != nil {
		nv = *vus
	}
	if maxVUs != nil {
		nm = *maxVUs
	}
	switch {
	case nv < 0:
		return errors.New("invalid configuration supplied: the number of VUs can't be negative")
	case nv > nm: // k6 validates the new numbers before comparing with the start
		return fmt.Errorf("invalid configuration supplied: the number of active VUs (%d) must be less than or equal to the number of maxVUs (%d)", nv, nm)
	case nm < e.start:
		return fmt.Errorf("the new number of max VUs cannot be lower than the starting number of max VUs (%d)", e.start)
	}
	e.mu.Lock()
	old := e.max
	e.mu.Unlock()
	if grow := e.scale(nm) - e.scale(old); grow > 0 {
		if ctx == nil {
			ctx = context.Background()
		}
		if err := e.raise(ctx, grow); err != nil {
			return fmt.Errorf("raising vus-max to %d: %w", nm, err)
		}
	}
	e.mu.Lock()
	changed := nv != e.vus || nm != e.max
	e.vus, e.max = nv, nm
	e.mu.Unlock()
	if changed {
		select {
		case e.changed <- struct{}{}:
		default:
		}
	}
	return nil
}

// runExternal keeps as many looping VUs as External says until the
// duration ends (ramping-vus's slots, driven by the REST API instead of
// stages; a VU taken away finishes its iteration within gracefulStop).
// prepare gives the scheduler the run's control (the REST API's).
func (c *ExternallyControlledConfig) prepare(s *Scheduler) {
	s.ext = newExternal(c.VUs, c.MaxVUs, s.pool.Raise, s.plan.Tuple.ScaleInt64)
}

func (c *ExternallyControlledConfig) run(ctx context.Context, r *scenarioRun, t *segment.Tuple) {
	r.runExternal(ctx, c, t)
}

func (r *scenarioRun) runExternal(ctx context.Context, c *ExternallyControlledConfig, t *segment.Tuple) {
	e := r.sched.ext
	r.setProgress(r.elapsedProgress(c.Duration))
	reg, grace, cancel := r.durationContexts(ctx, c.Duration, c.GracefulStop)
	defer cancel()
	e.mu.Lock()
	e.ctx = reg
	e.mu.Unlock()
	var handles []*vuHandle
	var wg sync.WaitGroup
	var cur int64
	apply := func() {
		want, most := e.Status()
		for int64(len(handles)) < t.ScaleInt64(most) {
			handles = append(handles, &vuHandle{r: r})
		}
		want = min(t.ScaleInt64(want), int64(len(handles)))
		for ; cur < want; cur++ {
			handles[cur].start(reg, grace, &wg)
		}
		for cur > want {
			cur--
			handles[cur].stop(c.GracefulStop)
		}
	}
	apply()
	for done := false; !done; {
		select {
		case <-e.changed:
			apply()
		case <-reg.Done():
			done = true
		}
	}
	wg.Wait()
}
