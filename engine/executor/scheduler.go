package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// ScenarioInfo is what a VU can read about the scenario it runs
// (k6/execution `scenario.*`). It is shared by all VUs of the scenario.
type ScenarioInfo struct {
	Name     string
	Executor string
	Exec     string
	Env      map[string]string
	Tags     map[string]string
	Options  json.RawMessage
	Config   Config
	// StartTime is when the scenario's timeline starts (the run's start plus
	// the scenario's startTime); set before any VU is activated.
	StartTime time.Time
	run       *scenarioRun
}

// Progress is 0..1 as k6 defines it per executor.
func (sc *ScenarioInfo) Progress() float64 { return sc.run.progress() }

// Stage is the current stage index and name of a ramping executor, by the
// clock: the stage whose time span contains now (the last stage after the
// stages end; zero-length stages are never current). -1 and "" for other
// executors or before the scenario starts.
func (sc *ScenarioInfo) Stage() (int, string) {
	r := sc.run
	if len(r.stageEnds) == 0 || !r.started.Load() {
		return -1, ""
	}
	i := stageAt(r.stageEnds, time.Since(sc.StartTime))
	return i, r.stages[i].Name
}

// stageAt is the first stage whose end is after elapsed (the last stage
// once all have ended).
func stageAt(ends []time.Duration, elapsed time.Duration) int {
	i := sort.Search(len(ends), func(k int) bool { return ends[k] > elapsed })
	return min(i, len(ends)-1)
}

// Iteration is the per-iteration information handed to VU.RunIteration
// (k6/execution `scenario.iterationIn*`, `vu.*`). It is reused.
type Iteration struct {
	Scenario *ScenarioInfo
	// InInstance is scenario.iterationInInstance (0-based, this instance).
	InInstance int64
	// InTest is scenario.iterationInTest: unique across all instances.
	InTest int64
	// VUInScenario is vu.iterationInScenario: this VU's 0-based count in the scenario.
	VUInScenario int64
	// VUIDInInstance / VUIDInTest are vu.idInInstance / vu.idInTest.
	VUIDInInstance uint64
	VUIDInTest     uint64
	// Due is when an arrival-rate start was planned (zero for the other
	// executors): the iteration's start minus Due is the generator's
	// scheduling lag (issue 14).
	Due time.Time
	// Stage / StageName: our extension for ramping executors (-1, "" otherwise).
	Stage     int
	StageName string
}

// Dropped reports iterations that did not start: one report per missed
// arrival-rate start (Count 1), one per scenario for shared-iterations, one
// per unfinished VU for per-vu-iterations (VUIDInInstance set).
type Dropped struct {
	Scenario       string
	Count          int64
	VUIDInInstance uint64 // 0 when the sample has no vu tag
	VUIDInTest     uint64
	Time           time.Time
}

// StageEvent marks a stage boundary of a ramping executor; thresholds use
// them for per-stage windows.
type StageEvent struct {
	Scenario    string
	Index       int
	Name        string
	Time        time.Time     // wall time of the boundary
	Offset      time.Duration // from the scenario's start
	Interrupted bool          // StageEnded only: the run stopped before the stage's end
}

// Observer receives the scheduler's events. Methods are called from several
// goroutines and must not block for long. Embed NopObserver to implement a
// subset.
type Observer interface {
	ScenarioStarted(sc *ScenarioInfo)
	ScenarioEnded(sc *ScenarioInfo)
	StageStarted(ev StageEvent)
	StageEnded(ev StageEvent)
	// DroppedIterations becomes one dropped_iterations sample.
	DroppedIterations(d Dropped)
	// InsufficientVUs is called once per scenario when an arrival-rate
	// executor has maxVUs VUs and still misses starts.
	InsufficientVUs(scenario string, maxVUs int64)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) ScenarioStarted(*ScenarioInfo) {}
func (NopObserver) ScenarioEnded(*ScenarioInfo)   {}
func (NopObserver) StageStarted(StageEvent)       {}
func (NopObserver) StageEnded(StageEvent)         {}
func (NopObserver) DroppedIterations(Dropped)     {}
func (NopObserver) InsufficientVUs(string, int64) {}

var _ Observer = NopObserver{}

// ScenarioProgress is a snapshot for the live progress line.
type ScenarioProgress struct {
	Name        string
	Executor    string
	Started     bool
	Done        bool
	Progress    float64
	ActiveVUs   int64
	Completed   int64
	Interrupted int64
	Dropped     int64
}

// Scheduler runs a plan's scenarios on a pool. Create it with NewScheduler,
// read its counters from any goroutine while Run runs.
type Scheduler struct {
	plan   *Plan
	pool   *Pool
	obs    Observer
	runs   []*scenarioRun
	active atomic.Int64

	errOnce sync.Once
	err     error
	cancel  context.CancelFunc
}

// NewScheduler prepares to run plan on pool. obs may be nil.
func NewScheduler(plan *Plan, pool *Pool, obs Observer) *Scheduler {
	if obs == nil {
		obs = NopObserver{}
	}
	s := &Scheduler{plan: plan, pool: pool, obs: obs}
	for _, c := range plan.Scenarios {
		b := c.Base()
		r := &scenarioRun{sched: s, cfg: c}
		r.info = ScenarioInfo{Name: b.Name, Executor: b.Type, Exec: b.Exec, Env: b.Env, Tags: b.Tags, Options: b.Options, Config: c, run: r}
		c.prepare(s)
		r.stages = c.StageList()
		var end time.Duration
		for _, st := range r.stages {
			end += st.Duration
			r.stageEnds = append(r.stageEnds, end)
		}
		s.runs = append(s.runs, r)
	}
	return s
}

// Run is NewScheduler(plan, pool, obs).Run(ctx, start). Unreachable from the binary (deadcode), kept: the
// one-call form for plain-Go users (the engine keeps its Scheduler).
func Run(ctx context.Context, plan *Plan, pool *Pool, obs Observer, start time.Time) error {
	return NewScheduler(plan, pool, obs).Run(ctx, start)
}

// Run runs every scenario, each startTime after start (the end of setup(),
// or an absolute time shared by all instances for --start-at; zero means
// now), and returns when all have ended. Cancelling ctx aborts the run:
// running iterations are interrupted at once. The error is the first fatal
// one (a VU that could not be had or initialised); an abort is not an error.
func (s *Scheduler) Run(ctx context.Context, start time.Time) error {
	if start.IsZero() {
		start = time.Now()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.cancel = cancel
	var wg sync.WaitGroup
	for _, r := range s.runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.info.StartTime = start.Add(r.cfg.Base().StartTime)
			if !sleepUntil(ctx, r.info.StartTime) {
				return
			}
			r.started.Store(true)
			s.obs.ScenarioStarted(&r.info)
			r.execute(ctx)
			r.done.Store(true)
			s.obs.ScenarioEnded(&r.info)
		}()
	}
	wg.Wait()
	return s.err
}

// fail records the first fatal error and aborts the run.
func (s *Scheduler) fail(err error) {
	s.errOnce.Do(func() {
		s.err = err
		s.cancel()
	})
}

// ActiveVUs is the `vus` metric: VUs held by VU-based scenarios plus VUs
// running an iteration in arrival-rate scenarios.
func (s *Scheduler) ActiveVUs() int64 { return s.active.Load() }

// AllocatedVUs is the `vus_max` metric.
func (s *Scheduler) AllocatedVUs() int64 { return s.pool.Allocated() }

// IterationsCompleted and IterationsInterrupted are exec.instance counters.
func (s *Scheduler) IterationsCompleted() (n int64) {
	for _, r := range s.runs {
		n += r.completed.Load()
	}
	return n
}

func (s *Scheduler) IterationsInterrupted() (n int64) {
	for _, r := range s.runs {
		n += r.interrupted.Load()
	}
	return n
}

// Progress snapshots every scenario, in plan order.
func (s *Scheduler) Progress() []ScenarioProgress {
	out := make([]ScenarioProgress, len(s.runs))
	for i, r := range s.runs {
		out[i] = ScenarioProgress{
			Name: r.info.Name, Executor: r.info.Executor,
			Started: r.started.Load(), Done: r.done.Load(),
			ActiveVUs: r.active.Load(), Completed: r.completed.Load(),
			Interrupted: r.interrupted.Load(), Dropped: r.dropped.Load(),
		}
		if out[i].Started {
			out[i].Progress = r.progress()
		}
	}
	return out
}

// Scenario returns the info of a scenario by name (nil if unknown).
func (s *Scheduler) Scenario(name string) *ScenarioInfo {
	for _, r := range s.runs {
		if r.info.Name == name {
			return &r.info
		}
	}
	return nil
}

// scenarioRun is one scenario's runtime state.
type scenarioRun struct {
	sched     *Scheduler
	cfg       Config
	info      ScenarioInfo
	stages    []Stage
	stageEnds []time.Duration // cumulative ends of stages, from the scenario start

	started, done atomic.Bool
	nextIter      atomic.Int64 // iterations started on this instance
	completed     atomic.Int64
	interrupted   atomic.Int64
	dropped       atomic.Int64
	active        atomic.Int64

	// iterTuple maps local iteration numbers to global ones.
	iterTuple *segment.Tuple
	// eventStages: iterations take their stage from the event (arrival
	// rate), not from the clock.
	eventStages bool
	// progressFn is set when the executor starts; read by Progress().
	progressFn atomic.Pointer[func() float64]
}

func (r *scenarioRun) setProgress(f func() float64) { r.progressFn.Store(&f) }

func (r *scenarioRun) progress() float64 {
	f := r.progressFn.Load()
	if f == nil {
		return 0
	}
	return min(1, max(0, (*f)()))
}

func (r *scenarioRun) elapsedProgress(d time.Duration) func() float64 {
	start := r.info.StartTime
	return func() float64 {
		if d <= 0 {
			return 1
		}
		return float64(time.Since(start)) / float64(d)
	}
}

// execute runs the scenario's executor until it ends.
func (r *scenarioRun) execute(ctx context.Context) {
	t := r.sched.plan.Tuple
	r.iterTuple = t
	r.cfg.run(ctx, r, t)
}

// durationContexts returns the context that ends when no new iterations may
// start (regular) and the one that interrupts running iterations (graceful).
// Loops must check both before starting an iteration: a parent context is
// marked done before its children are, so when the run is aborted there is
// a moment where graceful is done and regular is not yet.
func (r *scenarioRun) durationContexts(ctx context.Context, regular, gracefulStop time.Duration) (reg, grace context.Context, cancel func()) {
	start := r.info.StartTime
	grace, c1 := context.WithDeadline(ctx, start.Add(regular+gracefulStop))
	reg, c2 := context.WithDeadline(grace, start.Add(regular))
	return reg, grace, func() { c2(); c1() }
}

// activate takes a VU from the pool for this scenario.
func (r *scenarioRun) activate(ctx context.Context) (*pooledVU, bool) {
	pv, err := r.sched.pool.get(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.sched.fail(fmt.Errorf("scenario %s: %w", r.info.Name, err))
		}
		return nil, false
	}
	r.bind(pv)
	return pv, true
}

func (r *scenarioRun) bind(pv *pooledVU) {
	pv.it = Iteration{Scenario: &r.info, VUIDInInstance: pv.idInstance, VUIDInTest: pv.idTest, Stage: -1}
	pv.vu.Activate(&r.info)
}

// iterate runs one iteration on pv with the next iteration number and counts
// it as completed or interrupted.
func (r *scenarioRun) iterate(ctx context.Context, pv *pooledVU, local int64) {
	it := &pv.it
	it.InInstance = local
	it.InTest = r.iterTuple.GlobalIndex(local)
	if r.stages != nil && !r.eventStages {
		it.Stage, it.StageName = r.info.Stage()
	}
	pv.vu.RunIteration(ctx, it)
	it.VUInScenario++
	if isDone(ctx) {
		r.interrupted.Add(1)
	} else {
		r.completed.Add(1)
	}
}

func (r *scenarioRun) drop(d Dropped) {
	r.dropped.Add(d.Count)
	d.Scenario = r.info.Name
	d.Time = time.Now()
	r.sched.obs.DroppedIterations(d)
}

// isDone reports whether ctx has ended, counting a deadline that has
// passed as ended before its timer's goroutine has run: on a saturated
// runner that goroutine waits behind every runnable one, and until it runs
// a loop checking only Done would keep starting iterations after its
// scenario's end (a 19,000-VU stop spun so for 15 s).
func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// sleepUntil waits for t or ctx; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return !isDone(ctx)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runStages emits the stage boundaries of a ramping scenario.
func (r *scenarioRun) runStages(ctx context.Context) {
	obs := r.sched.obs
	start := r.info.StartTime
	var off time.Duration
	for i, st := range r.stages {
		if !sleepUntil(ctx, start.Add(off)) {
			return
		}
		obs.StageStarted(StageEvent{Scenario: r.info.Name, Index: i, Name: st.Name, Time: time.Now(), Offset: off})
		off += st.Duration
		ended := sleepUntil(ctx, start.Add(off))
		ev := StageEvent{Scenario: r.info.Name, Index: i, Name: st.Name, Time: time.Now(), Offset: off, Interrupted: !ended}
		if !ended {
			ev.Offset = time.Since(start)
		}
		obs.StageEnded(ev)
		if !ended {
			return
		}
	}
}
