package executor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// record is one iteration start seen by a fake VU.
type record struct {
	due        time.Time // Iteration.Due
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
		stage: it.Stage, stageName: it.StageName, progress: it.Scenario.Progress(), due: it.Due,
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

func TestGracefulStopInterruptsALongIteration(t *testing.T) {
	c := &ConstantVUsConfig{BaseConfig: base("cv", 100*time.Millisecond), VUs: 1, Duration: 200 * time.Millisecond}
	c.Type = ConstantVUs
	begin := time.Now()
	h := runPlan(t, context.Background(), testPlan(nil, c), sleepOrCancel(time.Hour))
	took := time.Since(begin)
	if h.sched.IterationsInterrupted() != 1 || h.sched.IterationsCompleted() != 0 {
		t.Errorf("completed %d interrupted %d", h.sched.IterationsCompleted(), h.sched.IterationsInterrupted())
	}
	// At least duration + gracefulStop (a lower bound the clock cannot
	// break); far less than the hour-long iteration it interrupts (the
	// upper bound is generous for a loaded machine: code review T2).
	if took < 300*time.Millisecond || took > 30*time.Second {
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

// pastDeadline is a context whose deadline has passed but whose Done is
// not closed yet: how a WithDeadline context looks until its timer's
// goroutine runs on a saturated runner.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestIsDoneCountsAPassedDeadline(t *testing.T) {
	if !isDone(pastDeadline{context.Background()}) {
		t.Error("a context past its deadline is not done until its timer runs: loops would start iterations after their end")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if isDone(ctx) {
		t.Error("a context an hour before its deadline is done")
	}
	cancel()
	if !isDone(ctx) {
		t.Error("a cancelled context is not done")
	}
	if isDone(context.Background()) {
		t.Error("Background is done")
	}
}
