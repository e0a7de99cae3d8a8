package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

// RunStatus is k6's numeric execution state, as GET /v1/status shows it
// (docs/k6-operator.md; k6 REST API reference).
type RunStatus int

// The execution states, in the order a run passes through them.
const (
	StatusCreated         RunStatus = 0
	StatusInitVUs         RunStatus = 1
	StatusInitExecutors   RunStatus = 2
	StatusInitDone        RunStatus = 3
	StatusPausedBeforeRun RunStatus = 4
	StatusStarted         RunStatus = 5
	StatusSetup           RunStatus = 6
	StatusRunning         RunStatus = 7
	StatusTeardown        RunStatus = 8
	StatusEnded           RunStatus = 9
)

// ErrStoppedByAPI is the cause when PATCH /v1/status stops the run (exit 103).
var ErrStoppedByAPI = errors.New("test run stopped from REST API")

// ErrAlreadyPaused answers a pause of a run held by --paused (k6 v2.2).
var ErrAlreadyPaused = errors.New("execution is already paused")

// ErrPauseRunning is returned when a pause or resume is asked of a run
// whose scenarios are not known yet and that was not started paused.
var ErrPauseRunning = errors.New("pausing a run that has started is not supported; start it with --paused")

// ErrNotLoaded is returned by the setup and teardown calls before the
// script has loaded.
var ErrNotLoaded = errors.New("the script has not been initialised yet")

// StatusInfo is the status document's attributes.
type StatusInfo struct {
	Status      RunStatus
	Paused      bool
	VUs, VUsMax int64
	Stopped     bool
	Running     bool
	Tainted     bool
}

// Control is one run as the REST API sees and steers it: its status, the
// resume of a --paused run, the stop, the metrics, groups and setup data.
// Create it with NewControl, pass it as RunConfig.Control before Run, and
// serve it (engine/restapi). Every method is safe from any goroutine.
type Control struct {
	mu      sync.Mutex
	status  RunStatus
	paused  bool
	resumed chan struct{} // closed by the resume
	stopped bool
	done    chan struct{} // closed when the run's last phase ended
	stopCh  chan struct{} // closed by Stop
	r       *runner       // nil until Run starts
}

// NewControl is the control of a run that waits for a resume when paused.
func NewControl(paused bool) *Control {
	return &Control{paused: paused, resumed: make(chan struct{}), done: make(chan struct{}), stopCh: make(chan struct{})}
}

// attach binds the control to the run that uses it.
func (c *Control) attach(r *runner) {
	c.mu.Lock()
	c.r = r
	c.mu.Unlock()
}

func (c *Control) setStatus(s RunStatus) {
	c.mu.Lock()
	c.status = s
	c.mu.Unlock()
}

func (c *Control) runner() *runner {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r
}

// ended marks the run over (status 9); Done is closed.
func (c *Control) ended() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status = StatusEnded
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}

// Done is closed when the run has ended (after the summary).
func (c *Control) Done() <-chan struct{} { return c.done }

// Status is the status document's attributes now.
func (c *Control) Status() StatusInfo {
	c.mu.Lock()
	st := StatusInfo{Status: c.status, Paused: c.paused, Stopped: c.stopped}
	r := c.r
	c.mu.Unlock()
	st.Running = st.Status >= StatusStarted && st.Status < StatusEnded
	if r != nil {
		if s := r.sched.Load(); s != nil {
			st.VUs, st.VUsMax = s.ActiveVUs(), s.AllocatedVUs()
		} else if p := r.poolRef.Load(); p != nil {
			st.VUsMax = p.Allocated()
		}
		st.Tainted = r.tainted.Load()
	}
	return st
}

// SetPaused is the REST API's pause and resume as k6 v2.2 answers them
// (internal/execution/scheduler.go SetPaused, read 2026-12-06): a run held
// by --paused before its start resumes (false) or is already paused
// (true); otherwise, since no executor of k6 v2 can pause once started
// (externally-controlled, the one that could, is gone), every pause and
// resume names the first scenario's executor.
func (c *Control) SetPaused(paused bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		if paused {
			return ErrAlreadyPaused
		}
		c.paused = false
		close(c.resumed)
		return nil
	}
	if c.r != nil && c.r.plan != nil && len(c.r.plan.Scenarios) > 0 {
		b := c.r.plan.Scenarios[0].Base()
		return fmt.Errorf("%s executor '%s' doesn't support pause and resume operations after its start", b.Type, b.Name)
	}
	return ErrPauseRunning
}

// Stop ends the run as k6's REST stop does: exit 103, teardown and the
// summary still run. Stopping twice is a no-op.
func (c *Control) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	close(c.stopCh)
	r := c.r
	c.mu.Unlock()
	if r != nil {
		r.stopFromAPI()
	}
}

// Stopped is closed once Stop was called (a lingering process ends then).
func (c *Control) Stopped() <-chan struct{} { return c.stopCh }

// isStopped reports whether Stop was called.
func (c *Control) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// waitResume blocks until the run is resumed, stopped or ctx ends.
func (c *Control) waitResume(ctx context.Context) error {
	c.mu.Lock()
	resumed := c.resumed
	c.mu.Unlock()
	select {
	case <-resumed:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Metrics is a snapshot of every metric now, and for each metric with
// thresholds whether one of them failed (its "tainted").
func (c *Control) Metrics() (*metrics.Snapshot, map[string]bool) {
	r := c.runner()
	if r == nil || r.coll == nil {
		return &metrics.Snapshot{}, nil
	}
	var d time.Duration
	if start := r.startTime(); !start.IsZero() {
		d = r.now().Sub(start)
	}
	snap := r.coll.Snapshot(d)
	tainted := map[string]bool{}
	if ev := r.evaluator(); ev != nil {
		for _, s := range ev.Statuses() {
			name := s.Metric.Name
			tainted[name] = tainted[name] || (s.Evaluated && !s.OK)
		}
	}
	return snap, tainted
}

// SetupData is the current setup data (null when none).
func (c *Control) SetupData() json.RawMessage {
	r := c.runner()
	if r == nil {
		return nil
	}
	return r.setup()
}

// SetSetupData replaces the setup data the VUs get (PUT /v1/setup).
func (c *Control) SetSetupData(raw json.RawMessage) error {
	r := c.runner()
	if r == nil {
		return ErrNotLoaded
	}
	r.setSetup(raw)
	return nil
}

// RunSetup runs setup() now and keeps its result (POST /v1/setup).
func (c *Control) RunSetup(ctx context.Context) (json.RawMessage, error) {
	r := c.runner()
	if r == nil || r.loadedBundle() == nil {
		return nil, ErrNotLoaded
	}
	data, err := r.loadedBundle().RunSetup(ctx, r.opts.SetupTimeout)
	if err != nil {
		return nil, err
	}
	r.setSetup(data)
	return data, nil
}

// RunTeardown runs teardown(data) now with the current setup data
// (POST /v1/teardown).
func (c *Control) RunTeardown(ctx context.Context) error {
	r := c.runner()
	if r == nil || r.loadedBundle() == nil {
		return ErrNotLoaded
	}
	return r.loadedBundle().RunTeardown(ctx, r.opts.TeardownTimeout, r.setup())
}

// startTime is when the clock started (zero before), for other goroutines.
func (r *runner) startTime() time.Time {
	if t := r.started.Load(); t != nil {
		return *t
	}
	return time.Time{}
}

func (r *runner) setStatus(s RunStatus) {
	if r.cfg.Control != nil {
		r.cfg.Control.setStatus(s)
	}
}

func (r *runner) evaluator() *thresholds.Evaluator { return r.evRef.Load() }

func (r *runner) loadedBundle() *jshost.Bundle { return r.bundleRef.Load() }

func (r *runner) setup() []byte { return r.setupForVUs().Raw() }

func (r *runner) setSetup(b []byte) {
	r.setupMu.Lock()
	r.setupData = jshost.NewSetupData(b)
	r.setupMu.Unlock()
}

// setupForVUs is the setup data as the VUs take it: one parse for all.
func (r *runner) setupForVUs() *jshost.SetupData {
	r.setupMu.Lock()
	defer r.setupMu.Unlock()
	if r.setupData == nil {
		r.setupData = jshost.NewSetupData(nil)
	}
	return r.setupData
}

// stopFromAPI stops the execution with ErrStoppedByAPI (exit 103).
func (r *runner) stopFromAPI() {
	r.mu.Lock()
	cancel := r.cancelRun
	r.mu.Unlock()
	if cancel != nil {
		cancel(ErrStoppedByAPI)
	}
}
