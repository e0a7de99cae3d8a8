package executor

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// record is one iteration start seen by a fake VU.
type record struct {
	scenario   string
	executor   string
	offset     time.Duration // from the run's start
	inInstance int64
	inTest     int64
	vuInScen   int64
	vuID       uint64
	vuIDTest   uint64
	stage      int
	stageName  string
	progress   float64
}

// recorder collects what fake VUs and the observer see.
type recorder struct {
	NopObserver
	start time.Time

	mu          sync.Mutex
	starts      []record
	drops       []Dropped
	stages      []string
	stageEvents []StageEvent
	insuff      int
	activations map[uint64][]string
	scenarios   []string
}

func (r *recorder) ScenarioStarted(sc *ScenarioInfo) {
	r.mu.Lock()
	r.scenarios = append(r.scenarios, "start "+sc.Name)
	r.mu.Unlock()
}

func (r *recorder) ScenarioEnded(sc *ScenarioInfo) {
	r.mu.Lock()
	r.scenarios = append(r.scenarios, "end "+sc.Name)
	r.mu.Unlock()
}

func newRecorder() *recorder { return &recorder{start: time.Now(), activations: map[uint64][]string{}} }

func (r *recorder) DroppedIterations(d Dropped) {
	r.mu.Lock()
	r.drops = append(r.drops, d)
	r.mu.Unlock()
}

func (r *recorder) StageStarted(ev StageEvent) {
	r.mu.Lock()
	r.stageEvents = append(r.stageEvents, ev)
	r.mu.Unlock()
}

func (r *recorder) StageEnded(ev StageEvent) {
	r.mu.Lock()
	ev.Index = -1 - ev.Index // mark "ended" for the test
	r.stageEvents = append(r.stageEvents, ev)
	r.mu.Unlock()
}

func (r *recorder) InsufficientVUs(string, int64) {
	r.mu.Lock()
	r.insuff++
	r.mu.Unlock()
}

func (r *recorder) dropped() (n int64, reports int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.drops {
		n += d.Count
	}
	return n, len(r.drops)
}

func (r *recorder) startsOf(scenario string) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, s := range r.starts {
		if s.scenario == scenario {
			out = append(out, s)
		}
	}
	return out
}

// fakeVU records its iterations; work decides how long one takes.
type fakeVU struct {
	rec        *recorder
	id, idTest uint64
	work       func(ctx context.Context, it *Iteration)
}

func (v *fakeVU) Activate(sc *ScenarioInfo) {
	v.rec.mu.Lock()
	v.rec.activations[v.id] = append(v.rec.activations[v.id], sc.Name)
	v.rec.mu.Unlock()
}

func (v *fakeVU) RunIteration(ctx context.Context, it *Iteration) {
	rec := record{
		scenario: it.Scenario.Name, executor: it.Scenario.Executor,
		offset: time.Since(v.rec.start), inInstance: it.InInstance, inTest: it.InTest,
		vuInScen: it.VUInScenario, vuID: it.VUIDInInstance, vuIDTest: it.VUIDInTest,
		stage: it.Stage, stageName: it.StageName, progress: it.Scenario.Progress(),
	}
	if rec.vuID != v.id || rec.vuIDTest != v.idTest {
		panic("iteration carries another VU's ids")
	}
	v.rec.mu.Lock()
	v.rec.starts = append(v.rec.starts, rec)
	v.rec.mu.Unlock()
	if v.work != nil {
		v.work(ctx, it)
	}
}

// sleepOrCancel simulates an iteration that takes d unless interrupted.
func sleepOrCancel(d time.Duration) func(context.Context, *Iteration) {
	return func(ctx context.Context, _ *Iteration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// testPlan builds a plan without NewPlan's validation, so tests can use
// durations below k6's 1s minimum and stay short.
func testPlan(t *segment.Tuple, cs ...Config) *Plan {
	if t == nil {
		t = segment.FullTuple()
	}
	SortConfigs(cs)
	p := &Plan{Scenarios: cs, Tuple: t}
	for _, c := range cs {
		p.Steps = append(p.Steps, c.ExecutionSteps(t))
	}
	p.MaxPlannedVUs, p.MaxVUs = MaxVUs(cs, p.Steps)
	return p
}

type harness struct {
	rec   *recorder
	pool  *Pool
	sched *Scheduler
	err   error
}

// runPlan initialises the planned VUs and runs the plan to the end.
func runPlan(t *testing.T, ctx context.Context, p *Plan, work func(context.Context, *Iteration)) *harness {
	t.Helper()
	rec := newRecorder()
	factory := func(_ context.Context, id, idTest uint64) (VU, error) {
		return &fakeVU{rec: rec, id: id, idTest: idTest, work: work}, nil
	}
	pool := NewPool(factory, p.Tuple, p.MaxVUs)
	if err := pool.Init(ctx, p.MaxPlannedVUs, 2); err != nil {
		t.Fatal(err)
	}
	h := &harness{rec: rec, pool: pool, sched: NewScheduler(p, pool, rec)}
	rec.start = time.Now()
	h.err = h.sched.Run(ctx, rec.start)
	return h
}

func base(name string, gracefulStop time.Duration) BaseConfig {
	return BaseConfig{Name: name, Exec: "default", GracefulStop: gracefulStop}
}

func TestConstantArrivalRateStartsOnSchedule(t *testing.T) {
	c := &ConstantArrivalRateConfig{BaseConfig: base("car", 0), Rate: 20, TimeUnit: time.Second, Duration: time.Second, PreAllocatedVUs: 20, MaxVUs: 20}
	c.Type = ConstantArrivalRate
	// As many VUs as starts: nothing can be dropped however loaded the machine is.
	h := runPlan(t, context.Background(), testPlan(nil, c), nil)
	starts := h.rec.startsOf("car")
	dropped, _ := h.rec.dropped()
	if len(starts) != 20 || dropped != 0 {
		t.Fatalf("%d starts and %d dropped, want 20 starts", len(starts), dropped)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].inInstance < starts[j].inInstance })
	for i, s := range starts {
		// never early; late only by scheduling delay
		want := time.Duration(i) * 50 * time.Millisecond
		if s.offset < want || s.offset > want+time.Second {
			t.Errorf("start %d at %v, planned at %v", i, s.offset, want)
		}
		if s.inInstance != int64(i) || s.inTest != int64(i) {
			t.Errorf("start %d has iteration ids %d/%d", i, s.inInstance, s.inTest)
		}
		if s.executor != ConstantArrivalRate || s.stage != -1 {
			t.Errorf("iteration info %+v", s)
		}
	}
	if got := h.sched.IterationsCompleted(); got != int64(len(starts)) {
		t.Errorf("completed %d", got)
	}
	for _, s := range starts {
		// progress = elapsed/duration, read by the VU during the iteration
		if s.progress < float64(s.offset-50*time.Millisecond)/float64(time.Second) || s.progress > 1 {
			t.Errorf("start at %v saw progress %v", s.offset, s.progress)
		}
	}
	if len(h.rec.scenarios) != 2 || h.rec.scenarios[0] != "start car" || h.rec.scenarios[1] != "end car" {
		t.Errorf("scenario events %v", h.rec.scenarios)
	}
	if p := h.sched.Progress()[0]; !p.Started || !p.Done || p.Progress != 1 || p.ActiveVUs != 0 || p.Completed != 20 {
		t.Errorf("final progress %+v", p)
	}
}

func TestArrivalRateDropsWhenVUsAreBusy(t *testing.T) {
	// §2.4 vector, shifted off the race: 20/s for 1s, one VU, 275ms
	// iterations, gracefulStop 0: starts at 0, 300, 600, 900 ms; the 900 ms
	// one is interrupted; every other tick is one dropped report of 1.
	c := &ConstantArrivalRateConfig{BaseConfig: base("drop", 0), Rate: 20, TimeUnit: time.Second, Duration: time.Second, PreAllocatedVUs: 1, MaxVUs: 1}
	c.Type = ConstantArrivalRate
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(275*time.Millisecond))
	starts := len(h.rec.startsOf("drop"))
	dropped, reports := h.rec.dropped()
	// On a starved machine the last ticks may fall past the hard end and
	// are then neither started nor dropped.
	if n := int64(starts) + dropped; n < 18 || n > 20 {
		t.Fatalf("%d starts + %d dropped = %d, want 20", starts, dropped, n)
	}
	if starts < 2 || starts > 5 || int64(reports) != dropped {
		t.Errorf("%d starts, %d dropped in %d reports", starts, dropped, reports)
	}
	for _, d := range h.rec.drops {
		if d.Count != 1 || d.Scenario != "drop" || d.VUIDInInstance != 0 {
			t.Errorf("drop report %+v", d)
		}
	}
	if h.rec.insuff != 1 {
		t.Errorf("InsufficientVUs called %d times, want once", h.rec.insuff)
	}
	if h.sched.IterationsInterrupted() > 1 {
		t.Errorf("interrupted %d, want at most the last one", h.sched.IterationsInterrupted())
	}
}

func TestArrivalRateGrowsOneVUAtATimeUpToMaxVUs(t *testing.T) {
	c := &ConstantArrivalRateConfig{BaseConfig: base("grow", 0), Rate: 40, TimeUnit: time.Second, Duration: 500 * time.Millisecond, PreAllocatedVUs: 0, MaxVUs: 3}
	c.Type = ConstantArrivalRate
	var created atomic.Int64
	rec := newRecorder()
	p := testPlan(nil, c)
	pool := NewPool(func(_ context.Context, id, idTest uint64) (VU, error) {
		created.Add(1)
		time.Sleep(5 * time.Millisecond) // a VU takes time to initialise
		return &fakeVU{rec: rec, id: id, idTest: idTest, work: sleepOrCancel(60 * time.Millisecond)}, nil
	}, p.Tuple, p.MaxVUs)
	if p.MaxPlannedVUs != 0 || p.MaxVUs != 3 {
		t.Fatalf("plan %d/%d", p.MaxPlannedVUs, p.MaxVUs)
	}
	rec.start = time.Now()
	if err := Run(context.Background(), p, pool, rec, rec.start); err != nil {
		t.Fatal(err)
	}
	starts := len(rec.startsOf("grow"))
	dropped, _ := rec.dropped()
	if created.Load() < 2 || created.Load() > 3 || pool.Allocated() != created.Load() {
		t.Errorf("created %d VUs, want up to maxVUs=3", created.Load())
	}
	if n := int64(starts) + dropped; n < 18 || n > 20 || starts < 3 || dropped < 1 {
		t.Errorf("%d starts, %d dropped", starts, dropped)
	}
}

func TestRampingArrivalRateStartsAndStages(t *testing.T) {
	c := &RampingArrivalRateConfig{BaseConfig: base("rar", 100*time.Millisecond), TimeUnit: time.Second, PreAllocatedVUs: 15, MaxVUs: 15,
		Stages: []Stage{{200 * time.Millisecond, 50, "up"}, {200 * time.Millisecond, 50, "flat"}}}
	c.Type = RampingArrivalRate
	h := runPlan(t, context.Background(), testPlan(nil, c), nil)
	starts := h.rec.startsOf("rar")
	dropped, _ := h.rec.dropped()
	// area: 0.2·50/2 + 0.2·50 = 5 + 10 = 15
	sort.Slice(starts, func(i, j int) bool { return starts[i].inInstance < starts[j].inInstance })
	if len(starts) != 15 || dropped != 0 {
		t.Fatalf("%d starts, %d dropped; want 15", len(starts), dropped)
	}
	for i, s := range starts {
		wantStage := 0
		if i >= 5 {
			wantStage = 1
		}
		if s.stage != wantStage || s.stageName != c.Stages[wantStage].Name {
			t.Errorf("start %d in stage %d %q", i, s.stage, s.stageName)
		}
	}
	var names []string
	for _, ev := range h.rec.stageEvents {
		names = append(names, ev.Name)
		if ev.Index < 0 && ev.Offset != []time.Duration{200, 400}[-1-ev.Index]*time.Millisecond {
			t.Errorf("stage %d ended at offset %v", -1-ev.Index, ev.Offset)
		}
	}
	if len(h.rec.stageEvents) != 4 || h.rec.stageEvents[0].Index != 0 || h.rec.stageEvents[1].Index != -1 || h.rec.stageEvents[2].Index != 1 || h.rec.stageEvents[3].Index != -2 {
		t.Errorf("stage events %+v", h.rec.stageEvents)
	}
}

func TestGracefulStopInterruptsALongIteration(t *testing.T) {
	c := &ConstantVUsConfig{BaseConfig: base("cv", 100*time.Millisecond), VUs: 1, Duration: 200 * time.Millisecond}
	c.Type = ConstantVUs
	begin := time.Now()
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(time.Hour))
	took := time.Since(begin)
	if h.sched.IterationsInterrupted() != 1 || h.sched.IterationsCompleted() != 0 {
		t.Errorf("completed %d interrupted %d", h.sched.IterationsCompleted(), h.sched.IterationsInterrupted())
	}
	if took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("run took %v, want duration + gracefulStop = 300ms", took)
	}
}

func TestIterationsFinishingWithinGracefulStopComplete(t *testing.T) {
	c := &ConstantVUsConfig{BaseConfig: base("cv", time.Second), VUs: 2, Duration: 100 * time.Millisecond}
	c.Type = ConstantVUs
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(80*time.Millisecond))
	if h.sched.IterationsInterrupted() != 0 || h.sched.IterationsCompleted() < 2 || h.sched.IterationsCompleted() > 4 {
		t.Errorf("completed %d interrupted %d, want 2-4 and 0", h.sched.IterationsCompleted(), h.sched.IterationsInterrupted())
	}
	if h.sched.ActiveVUs() != 0 || len(h.pool.idle) != 2 {
		t.Errorf("after the run: %d active, %d back in the pool", h.sched.ActiveVUs(), len(h.pool.idle))
	}
}

func TestPerVUIterationsExactCounts(t *testing.T) {
	c := &PerVUIterationsConfig{BaseConfig: base("pv", 0), VUs: 3, Iterations: 5, MaxDuration: 10 * time.Second}
	c.Type = PerVUIterations
	h := runPlan(t, context.Background(), testPlan(nil, c), nil)
	perVU := map[uint64][]int64{}
	ids := map[int64]bool{}
	for _, s := range h.rec.startsOf("pv") {
		perVU[s.vuID] = append(perVU[s.vuID], s.vuInScen)
		ids[s.inInstance] = true
	}
	if len(perVU) != 3 || len(ids) != 15 {
		t.Fatalf("per VU %v, %d distinct iteration ids", perVU, len(ids))
	}
	for vu, its := range perVU {
		if len(its) != 5 || its[0] != 0 || its[4] != 4 {
			t.Errorf("VU %d ran %v", vu, its)
		}
	}
	if n, _ := h.rec.dropped(); n != 0 {
		t.Errorf("dropped %d", n)
	}
}

func TestPerVUIterationsDropsPerVUAtMaxDuration(t *testing.T) {
	// §2.4 vector shifted off the race: 2 VUs × 10, 275 ms iterations,
	// maxDuration 1s, gracefulStop 0: 4 starts each, two reports of 6.
	c := &PerVUIterationsConfig{BaseConfig: base("pv", 0), VUs: 2, Iterations: 10, MaxDuration: time.Second}
	c.Type = PerVUIterations
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(275*time.Millisecond))
	if len(h.rec.drops) != 2 {
		t.Fatalf("drops %+v", h.rec.drops)
	}
	for _, d := range h.rec.drops {
		if d.Count < 5 || d.Count > 9 || d.VUIDInInstance == 0 {
			t.Errorf("drop %+v", d)
		}
	}
	total, _ := h.rec.dropped()
	if got := int64(len(h.rec.startsOf("pv"))) + total; got != 20 {
		t.Errorf("starts + dropped = %d, want 20", got)
	}
}

func TestSharedIterationsExactTotal(t *testing.T) {
	c := &SharedIterationsConfig{BaseConfig: base("si", 0), VUs: 4, Iterations: 50, MaxDuration: 10 * time.Second}
	c.Type = SharedIterations
	h := runPlan(t, context.Background(), testPlan(nil, c), nil)
	starts := h.rec.startsOf("si")
	seen := map[int64]bool{}
	for _, s := range starts {
		seen[s.inTest] = true
	}
	if len(starts) != 50 || len(seen) != 50 {
		t.Fatalf("%d starts, %d distinct ids", len(starts), len(seen))
	}
	if n, _ := h.rec.dropped(); n != 0 {
		t.Errorf("dropped %d", n)
	}
	if p := h.sched.Progress()[0]; !p.Done || p.Progress != 1 || p.Completed != 50 {
		t.Errorf("progress %+v", p)
	}
}

func TestSharedIterationsDropsTheRestOnceAtMaxDuration(t *testing.T) {
	c := &SharedIterationsConfig{BaseConfig: base("si", 0), VUs: 1, Iterations: 100, MaxDuration: 300 * time.Millisecond}
	c.Type = SharedIterations
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(70*time.Millisecond))
	starts := int64(len(h.rec.startsOf("si")))
	if len(h.rec.drops) != 1 || h.rec.drops[0].Count != 100-starts || h.rec.drops[0].VUIDInInstance != 0 {
		t.Fatalf("%d starts, drops %+v", starts, h.rec.drops)
	}
}

func TestRampingVUsRampsUpAndDownLIFO(t *testing.T) {
	c := &RampingVUsConfig{BaseConfig: base("rv", 0), StartVUs: 0, GracefulRampDown: 0,
		Stages: []Stage{{300 * time.Millisecond, 3, "up"}, {300 * time.Millisecond, 0, "down"}}}
	c.Type = RampingVUs
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(10*time.Millisecond))
	first := map[uint64]time.Duration{}
	last := map[uint64]time.Duration{}
	for _, s := range h.rec.startsOf("rv") {
		if _, ok := first[s.vuID]; !ok {
			first[s.vuID] = s.offset
		}
		last[s.vuID] = s.offset
		wantStage := 0
		if s.offset > 320*time.Millisecond {
			wantStage = 1
		}
		if s.offset < 280*time.Millisecond || s.offset > 320*time.Millisecond {
			if s.stage != wantStage || s.stageName != c.Stages[wantStage].Name {
				t.Errorf("iteration at %v in stage %d %q", s.offset, s.stage, s.stageName)
			}
		}
	}
	if len(first) != 3 {
		t.Fatalf("%d VUs ran", len(first))
	}
	// VUs join at 100, 200, 300 ms and leave at 400, 500, 600 ms, last in first out.
	type span struct {
		id          uint64
		first, last time.Duration
	}
	var spans []span
	for id := range first {
		spans = append(spans, span{id, first[id], last[id]})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	for i, sp := range spans {
		joinAt := time.Duration(i+1) * 100 * time.Millisecond
		leaveAt := time.Duration(6-i) * 100 * time.Millisecond
		// never early; late only by scheduling delay
		if sp.first < joinAt || sp.first > joinAt+300*time.Millisecond {
			t.Errorf("VU %d joined at %v, want ≈%v", sp.id, sp.first, joinAt)
		}
		if sp.last > leaveAt+300*time.Millisecond {
			t.Errorf("VU %d last started at %v, want before %v", sp.id, sp.last, leaveAt)
		}
		// last in, first out (50ms slack: a starved controller may
		// process two stops at once)
		if i > 0 && sp.last > spans[i-1].last+50*time.Millisecond {
			t.Errorf("VU %d (joined %d.) last started at %v, after VU %d at %v", sp.id, i+1, sp.last, spans[i-1].id, spans[i-1].last)
		}
	}
	if len(h.rec.stageEvents) != 4 {
		t.Errorf("stage events %+v", h.rec.stageEvents)
	}
}

func TestRampingVUsGracefulRampDownInterrupts(t *testing.T) {
	// One VU, ramped to 0 at 100ms with a 50ms gracefulRampDown, runs a
	// never-ending iteration: it is interrupted at ≈150ms, long before the
	// scenario's gracefulStop.
	c := &RampingVUsConfig{BaseConfig: base("rv", 10*time.Second), StartVUs: 1, GracefulRampDown: 50 * time.Millisecond,
		Stages: []Stage{{100 * time.Millisecond, 1, ""}, {0, 0, ""}, {300 * time.Millisecond, 0, ""}}}
	c.Type = RampingVUs
	var interruptedAt atomic.Int64
	begin := time.Now()
	h := runPlan(t, context.Background(), testPlan(nil, c), func(ctx context.Context, _ *Iteration) {
		<-ctx.Done()
		interruptedAt.Store(int64(time.Since(begin)))
	})
	at := time.Duration(interruptedAt.Load())
	if h.sched.IterationsInterrupted() != 1 || at < 140*time.Millisecond || at > 400*time.Millisecond {
		t.Errorf("interrupted %d iterations, at %v", h.sched.IterationsInterrupted(), at)
	}
}

func TestRampingVUsRestartCancelsAPendingStop(t *testing.T) {
	// Down to 0 at 100ms and back to 1 at 200ms, within gracefulRampDown,
	// while the first 400ms iteration runs: the same VU carries on, nothing
	// is interrupted, and a second iteration starts after the first.
	c := &RampingVUsConfig{BaseConfig: base("rv", time.Second), StartVUs: 1, GracefulRampDown: time.Second,
		Stages: []Stage{{100 * time.Millisecond, 1, ""}, {0, 0, ""}, {100 * time.Millisecond, 0, ""}, {0, 1, ""}, {300 * time.Millisecond, 1, ""}}}
	c.Type = RampingVUs
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(400*time.Millisecond))
	if h.sched.IterationsInterrupted() != 0 {
		t.Errorf("interrupted %d", h.sched.IterationsInterrupted())
	}
	starts := h.rec.startsOf("rv")
	if len(starts) != 2 || starts[0].vuID != starts[1].vuID || starts[1].vuInScen != 1 {
		t.Errorf("starts %+v", starts)
	}
}

func TestStartTimeDelaysAScenarioAndVUsAreReused(t *testing.T) {
	a := &SharedIterationsConfig{BaseConfig: base("a", 0), VUs: 2, Iterations: 2, MaxDuration: 100 * time.Millisecond}
	a.Type = SharedIterations
	b := &PerVUIterationsConfig{BaseConfig: base("b", 0), VUs: 2, Iterations: 1, MaxDuration: time.Second}
	b.Type = PerVUIterations
	b.StartTime = 150 * time.Millisecond
	p := testPlan(nil, b, a)
	if p.MaxPlannedVUs != 2 {
		t.Fatalf("planned %d VUs, want 2 (a ends before b starts)", p.MaxPlannedVUs)
	}
	h := runPlan(t, context.Background(), p, nil)
	for _, s := range h.rec.startsOf("b") {
		if s.offset < 150*time.Millisecond {
			t.Errorf("b started at %v", s.offset)
		}
	}
	if len(h.rec.startsOf("b")) != 2 || h.pool.Allocated() != 2 {
		t.Errorf("b ran %d iterations on %d VUs", len(h.rec.startsOf("b")), h.pool.Allocated())
	}
	for id, acts := range h.rec.activations {
		if len(acts) != 2 || acts[0] != "a" || acts[1] != "b" {
			t.Errorf("VU %d activations %v", id, acts)
		}
	}
}

func TestAbsoluteStartInTheFuture(t *testing.T) {
	c := &PerVUIterationsConfig{BaseConfig: base("p", 0), VUs: 1, Iterations: 1, MaxDuration: time.Second}
	c.Type = PerVUIterations
	p := testPlan(nil, c)
	rec := newRecorder()
	pool := NewPool(func(_ context.Context, id, idTest uint64) (VU, error) {
		return &fakeVU{rec: rec, id: id, idTest: idTest}, nil
	}, nil, p.MaxVUs)
	if err := pool.Init(context.Background(), 1, 1); err != nil {
		t.Fatal(err)
	}
	rec.start = time.Now()
	if err := Run(context.Background(), p, pool, rec, rec.start.Add(120*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if s := rec.startsOf("p"); len(s) != 1 || s[0].offset < 120*time.Millisecond {
		t.Errorf("starts %+v", s)
	}
}

func TestAbortInterruptsAtOnce(t *testing.T) {
	c := &ConstantVUsConfig{BaseConfig: base("cv", time.Hour), VUs: 2, Duration: time.Hour}
	c.Type = ConstantVUs
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	begin := time.Now()
	h := runPlan(t, ctx, testPlan(nil, c), sleepOrCancel(time.Hour))
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("abort took %v", took)
	}
	if h.err != nil || h.sched.IterationsInterrupted() != 2 {
		t.Errorf("err %v, interrupted %d", h.err, h.sched.IterationsInterrupted())
	}
}

func TestMissingVUIsAnErrorAfterTheWait(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 2s")
	}
	c := &ConstantVUsConfig{BaseConfig: base("cv", 0), VUs: 2, Duration: 10 * time.Second}
	c.Type = ConstantVUs
	p := testPlan(nil, c)
	rec := newRecorder()
	pool := NewPool(func(_ context.Context, id, idTest uint64) (VU, error) {
		return &fakeVU{rec: rec, id: id, idTest: idTest, work: sleepOrCancel(50 * time.Millisecond)}, nil
	}, nil, 2)
	if err := pool.Init(context.Background(), 1, 1); err != nil { // one short
		t.Fatal(err)
	}
	err := Run(context.Background(), p, pool, nil, time.Time{})
	if !errors.Is(err, ErrNoVU) {
		t.Fatalf("err = %v", err)
	}
}

func TestFactoryErrorIsFatal(t *testing.T) {
	c := &ConstantArrivalRateConfig{BaseConfig: base("car", 0), Rate: 50, TimeUnit: time.Second, Duration: 10 * time.Second, PreAllocatedVUs: 0, MaxVUs: 1}
	c.Type = ConstantArrivalRate
	p := testPlan(nil, c)
	boom := errors.New("init exploded")
	pool := NewPool(func(context.Context, uint64, uint64) (VU, error) { return nil, boom }, nil, p.MaxVUs)
	begin := time.Now()
	err := Run(context.Background(), p, pool, nil, time.Time{})
	if !errors.Is(err, boom) || time.Since(begin) > 2*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(begin))
	}
}

// Two instances on halves together run shared-iterations exactly once per
// global id, and their VUs have distinct idInTest.
func TestSegmentedInstancesTogetherRunTheWhole(t *testing.T) {
	q, _ := segment.ParseSequence("0,1/3,2/3,1")
	var all []record
	vuIDs := map[uint64]int{} // idInTest → instance
	for i := 0; i < 3; i++ {
		tu, err := segment.NewTuple(segment.Segment{From: q[i], To: q[i+1]}, q)
		if err != nil {
			t.Fatal(err)
		}
		si := &SharedIterationsConfig{BaseConfig: base("si", 0), VUs: 5, Iterations: 10, MaxDuration: 10 * time.Second}
		si.Type = SharedIterations
		car := &ConstantArrivalRateConfig{BaseConfig: base("car", time.Second), Rate: 60, TimeUnit: time.Second, Duration: 200 * time.Millisecond, PreAllocatedVUs: 12, MaxVUs: 12}
		car.Type = ConstantArrivalRate
		h := runPlan(t, context.Background(), testPlan(tu, si, car), nil)
		want := []int{4, 4, 2}[i]
		if n := len(h.rec.startsOf("si")); n != want {
			t.Errorf("instance %d ran %d shared iterations, want %d", i, n, want)
		}
		all = append(all, h.rec.starts...)
		for _, s := range h.rec.starts {
			if prev, ok := vuIDs[s.vuIDTest]; ok && prev != i {
				t.Errorf("idInTest %d on instances %d and %d", s.vuIDTest, prev, i)
			}
			vuIDs[s.vuIDTest] = i
		}
		if n, _ := h.rec.dropped(); n != 0 {
			t.Errorf("instance %d dropped %d", i, n)
		}
	}
	for _, sc := range []struct {
		name string
		n    int
	}{{"si", 10}, {"car", 12}} {
		seen := map[int64]int{}
		for _, s := range all {
			if s.scenario == sc.name {
				seen[s.inTest]++
			}
		}
		for g := int64(0); g < int64(sc.n); g++ {
			if seen[g] != 1 {
				t.Errorf("%s: global iteration %d ran %d times (all %v)", sc.name, g, seen[g], seen)
			}
		}
	}
}
