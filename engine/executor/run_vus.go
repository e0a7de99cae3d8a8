package executor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

func (r *scenarioRun) hold() {
	r.active.Add(1)
	r.sched.active.Add(1)
}

func (r *scenarioRun) release(pv *pooledVU) {
	r.active.Add(-1)
	r.sched.active.Add(-1)
	r.sched.pool.put(pv)
}

// runFixedVUs takes n VUs from the pool (fewer if grace ends first), runs
// body on each in its own goroutine, and returns when every body has
// returned and its VU is back in the pool. The fixed-VU executors differ
// only in body.
func (r *scenarioRun) runFixedVUs(n int64, grace context.Context, body func(pv *pooledVU)) {
	var wg sync.WaitGroup
	for i := int64(0); i < n; i++ {
		pv, ok := r.activate(grace)
		if !ok {
			break
		}
		r.hold()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.release(pv)
			body(pv)
		}()
	}
	wg.Wait()
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

// runSharedIterations: the instance's VUs take iterations from one counter
// until its share of the iterations has started or maxDuration passes (§2.3).
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

// runPerVUIterations: every VU runs the full count; at maxDuration each
// unfinished VU reports what it did not start (§2.4).
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

// --- ramping-vus ----------------------------------------------------------------

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
