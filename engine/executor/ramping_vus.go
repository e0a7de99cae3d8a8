package executor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// RampingVUsConfig: the VU count follows Stages from StartVUs (§2.6).
type RampingVUsConfig struct {
	BaseConfig
	StartVUs         int64
	Stages           []Stage
	GracefulRampDown time.Duration
}

func validateStages(v *validator, stages []Stage) {
	v.check(len(stages) > 0, "stages", "at least one stage is required")
	for i, s := range stages {
		k := fmt.Sprintf("stages[%d]", i)
		v.check(s.Duration >= 0, k+".duration", "must not be negative, got %s", s.Duration)
		v.check(s.Target >= 0, k+".target", "must not be negative, got %d", s.Target)
	}
}

func (c *RampingVUsConfig) Validate() error {
	v := c.validate()
	v.check(c.StartVUs >= 0, "startVUs", "must not be negative, got %d", c.StartVUs)
	v.check(c.StartVUs <= maxRampingVUs, "startVUs", "must not be above %d, got %d", maxRampingVUs, c.StartVUs)
	v.check(c.GracefulRampDown >= 0, "gracefulRampDown", "must not be negative, got %s", c.GracefulRampDown)
	validateStages(v, c.Stages)
	maxVUs := c.StartVUs
	for i, s := range c.Stages {
		v.check(s.Target <= maxRampingVUs, fmt.Sprintf("stages[%d].target", i), "must not be above %d, got %d", maxRampingVUs, s.Target)
		maxVUs = max(maxVUs, s.Target)
	}
	v.check(maxVUs > 0, "", "either startVUs or one of the stage targets must be greater than 0")
	return v.err()
}

// Duration is the regular duration: the sum of the stage durations.
func (c *RampingVUsConfig) Duration() time.Duration { return stagesDuration(c.Stages) }

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

func (c *RampingVUsConfig) Description(t *segment.Tuple) string {
	var maxVUs int64
	for _, s := range c.RawSteps(t) {
		maxVUs = max(maxVUs, s.PlannedVUs)
	}
	return fmt.Sprintf("Up to %d looping VUs for %s over %d stages (gracefulRampDown: %s, %s%s)", maxVUs, formatDuration(c.Duration()), len(c.Stages), formatDuration(c.GracefulRampDown), startText(&c.BaseConfig), gracefulText(&c.BaseConfig))
}

const (
	handleIdle int32 = iota
	handleRunning
	handleStopping
)

// vuHandle is one slot of the ramping-vus staircase (slot k runs while the
// staircase is above k). Ramp-down stops the highest slots first.
type vuHandle struct {
	r     *scenarioRun
	state atomic.Int32 // read lock-free by the running loop

	mu     sync.Mutex // guards the fields below and state changes
	ctx    context.Context
	cancel context.CancelFunc
	hard   *time.Timer
	gen    uint64
}

// start makes the slot run: a pending graceful stop is cancelled, an idle
// slot gets a goroutine that takes a VU from the pool.
func (h *vuHandle) start(reg, grace context.Context, wg *sync.WaitGroup) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.state.Load() {
	case handleStopping:
		if h.hard != nil {
			h.hard.Stop()
			h.hard = nil
		}
		h.state.Store(handleRunning)
	case handleIdle:
		h.state.Store(handleRunning)
		h.ctx, h.cancel = context.WithCancel(grace)
		wg.Add(1)
		go h.loop(reg, grace, h.ctx, wg)
	}
}

// stop asks the slot to finish its iteration; after grace the iteration is
// interrupted.
func (h *vuHandle) stop(grace time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state.Load() != handleRunning {
		return
	}
	h.state.Store(handleStopping)
	h.gen++
	gen, cancel := h.gen, h.cancel
	h.hard = time.AfterFunc(grace, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.gen == gen && h.state.Load() == handleStopping {
			cancel()
		}
	})
}

func (h *vuHandle) loop(reg, grace, ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	r := h.r
	pv, ok := r.activate(grace)
	if !ok {
		h.mu.Lock()
		h.state.Store(handleIdle)
		h.cancel()
		h.mu.Unlock()
		return
	}
	r.hold()
	defer r.release(pv)
	for {
		for h.state.Load() == handleRunning && !isDone(reg) && !isDone(grace) && !isDone(ctx) {
			r.iterate(ctx, pv, r.nextIter.Add(1)-1)
		}
		h.mu.Lock()
		if h.state.Load() == handleRunning && !isDone(reg) && !isDone(grace) {
			// A hard stop fired just before a restart: keep the VU.
			h.cancel()
			h.ctx, h.cancel = context.WithCancel(grace)
			ctx = h.ctx
			h.mu.Unlock()
			continue
		}
		h.state.Store(handleIdle)
		if h.hard != nil {
			h.hard.Stop()
			h.hard = nil
		}
		h.cancel()
		h.mu.Unlock()
		return
	}
}

// runRampingVUs walks the instance's staircase (§2.6).
// StageList is the scenario's stages.
func (c *RampingVUsConfig) StageList() []Stage { return c.Stages }

func (c *RampingVUsConfig) shortcutJSON(m map[string]any) {
	st := make([]map[string]any, len(c.Stages))
	for i, s := range c.Stages {
		st[i] = map[string]any{"duration": s.Duration.String(), "target": s.Target}
		if s.Name != "" {
			st[i]["name"] = s.Name
		}
	}
	m["startVUs"], m["stages"], m["gracefulRampDown"] = c.StartVUs, st, c.GracefulRampDown.String()
}

func (c *RampingVUsConfig) run(ctx context.Context, r *scenarioRun, t *segment.Tuple) {
	r.runRampingVUs(ctx, c, t)
}

func (r *scenarioRun) runRampingVUs(ctx context.Context, c *RampingVUsConfig, t *segment.Tuple) {
	steps := c.RawSteps(t)
	var maxVUs int64
	for _, st := range steps {
		maxVUs = max(maxVUs, st.PlannedVUs)
	}
	r.setProgress(r.elapsedProgress(c.Duration()))
	reg, grace, cancel := r.durationContexts(ctx, c.Duration(), c.GracefulStop)
	defer cancel()
	var stagesDone sync.WaitGroup
	stagesDone.Add(1)
	go func() {
		defer stagesDone.Done()
		r.runStages(ctx)
	}()
	handles := make([]*vuHandle, maxVUs)
	for i := range handles {
		handles[i] = &vuHandle{r: r}
	}
	var wg sync.WaitGroup
	var cur int64
	start := r.info.StartTime
	for _, st := range steps {
		if !sleepUntil(reg, start.Add(st.Offset)) {
			break
		}
		for ; cur < st.PlannedVUs; cur++ {
			handles[cur].start(reg, grace, &wg)
		}
		for cur > st.PlannedVUs {
			cur--
			handles[cur].stop(c.GracefulRampDown)
		}
	}
	<-reg.Done()
	wg.Wait()
	stagesDone.Wait()
}
