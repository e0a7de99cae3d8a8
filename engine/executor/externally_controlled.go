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
// v1.x's externally-controlled executor (docs/k6-compat.md §2). buzzload
// initialises MaxVUs VUs before the run and cannot add more while it goes:
// vus-max can be neither raised above nor lowered below the starting one.
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

// External is the run-time control of an externally-controlled scenario.
type External struct {
	mu      sync.Mutex
	vus     int64
	max     int64
	changed chan struct{} // a token when vus changed
}

func newExternal(vus, maxVUs int64) *External {
	return &External{vus: vus, max: maxVUs, changed: make(chan struct{}, 1)}
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
// through its REST API).
func (e *External) Update(vus, maxVUs *int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	nv, nm := e.vus, e.max
	if vus != nil {
		nv = *vus
	}
	if maxVUs != nil {
		nm = *maxVUs
	}
	switch {
	case nv < 0:
		return errors.New("invalid configuration supplied: the number of VUs can't be negative")
	case nm < e.max:
		return fmt.Errorf("the new number of max VUs cannot be lower than the starting number of max VUs (%d)", e.max)
	case nv > nm:
		return fmt.Errorf("invalid configuration supplied: the number of active VUs (%d) must be less than or equal to the number of maxVUs (%d)", nv, nm)
	case nm > e.max:
		return fmt.Errorf("buzzload cannot raise vus-max above the scenario's maxVUs (%d) during the run: its VUs are initialised before it starts", e.max)
	}
	if nv != e.vus {
		e.vus = nv
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
func (r *scenarioRun) runExternal(ctx context.Context, c *ExternallyControlledConfig, t *segment.Tuple) {
	e := r.sched.ext
	r.setProgress(r.elapsedProgress(c.Duration))
	reg, grace, cancel := r.durationContexts(ctx, c.Duration, c.GracefulStop)
	defer cancel()
	handles := make([]*vuHandle, t.ScaleInt64(c.MaxVUs))
	for i := range handles {
		handles[i] = &vuHandle{r: r}
	}
	var wg sync.WaitGroup
	var cur int64
	apply := func() {
		want, _ := e.Status()
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
