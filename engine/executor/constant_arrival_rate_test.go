package executor

import (
	"context"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// §2.7: a drop starts the creation of at most ONE unplanned VU; further drops
// while it is being created do not start more. Creation is made slow (40 ms)
// at a rate (200/s) that drops several starts per creation, so a scheduler
// that created a VU per drop would overlap creations.
func TestArrivalRateCreatesOneVUAtATime(t *testing.T) {
	c := &ConstantArrivalRateConfig{BaseConfig: base("grow", 0), Rate: 200, TimeUnit: time.Second,
		Duration: 400 * time.Millisecond, PreAllocatedVUs: 0, MaxVUs: 50}
	c.Type = ConstantArrivalRate
	var created, inFlight, maxInFlight atomic.Int64
	rec := newRecorder()
	p := testPlan(nil, c)
	pool := NewPool(func(_ context.Context, id, idTest uint64) (VU, error) {
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(40 * time.Millisecond) // the fake iteration's work
		inFlight.Add(-1)
		created.Add(1)
		return &fakeVU{rec: rec, id: id, idTest: idTest, work: sleepOrCancel(200 * time.Millisecond)}, nil
	}, p.Tuple, p.MaxVUs)
	rec.start = time.Now()
	if err := Run(context.Background(), p, pool, rec, rec.start); err != nil {
		t.Fatal(err)
	}
	if created.Load() < 2 {
		t.Fatalf("only %d VUs created; the test needs several creations to mean anything", created.Load())
	}
	if maxInFlight.Load() != 1 {
		t.Errorf("%d VUs were being created at the same time, want at most one", maxInFlight.Load())
	}
	// ~400ms / 40ms per creation: far fewer VUs than drops, and never above maxVUs.
	if created.Load() > 12 {
		t.Errorf("created %d VUs in 400ms at 40ms each", created.Load())
	}
	dropped, reports := rec.dropped()
	if dropped < 20 || int64(reports) != dropped {
		t.Errorf("%d dropped in %d reports; want many drops, one report of 1 each", dropped, reports)
	}
}

// §2.5/§2.3: startTime delays a scenario relative to the scheduler's start
// (which the runner sets to the end of setup), for every executor type.
func TestStartTimeForArrivalRate(t *testing.T) {
	c := &ConstantArrivalRateConfig{BaseConfig: base("late", 0), Rate: 10, TimeUnit: time.Second,
		Duration: 250 * time.Millisecond, PreAllocatedVUs: 2, MaxVUs: 2}
	c.Type = ConstantArrivalRate
	c.StartTime = 200 * time.Millisecond
	h := runPlan(t, context.Background(), testPlan(nil, c), nil)
	starts := h.rec.startsOf("late")
	if len(starts) != 3 {
		t.Fatalf("%d starts, want 3 (at 0, 100, 200 ms after startTime)", len(starts))
	}
	for _, s := range starts {
		if s.offset < 200*time.Millisecond {
			t.Errorf("an iteration started at %v, before startTime 200ms", s.offset)
		}
	}
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

func TestConstantArrivalStartTimes(t *testing.T) {
	cases := []struct {
		name  string
		sched ConstantSchedule
		want  []time.Duration
	}{
		{"12/s for 1s starts at k·83.33ms from 0, 12 iterations",
			ConstantSchedule{Rate: 12, TimeUnit: s, Duration: s},
			[]time.Duration{0, 83333333, 166666666, 250 * ms, 333333333, 416666666, 500 * ms, 583333333, 666666666, 750 * ms, 833333333, 916666666}},
		{"an event exactly at the end does not start",
			ConstantSchedule{Rate: 2, TimeUnit: s, Duration: s},
			[]time.Duration{0, 500 * ms}},
		{"fractional rates: 2 per 3s",
			ConstantSchedule{Rate: 2, TimeUnit: 3 * s, Duration: 4 * s},
			[]time.Duration{0, 1500 * ms, 3 * s}},
		{"1 per minute over 1s starts once",
			ConstantSchedule{Rate: 1, TimeUnit: time.Minute, Duration: s},
			[]time.Duration{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := LocalOffsets(c.sched, segment.FullTuple())
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

// Issue 14: an arrival-rate iteration carries its planned start (Due): the
// k-th start of a 20/s scenario is due k×50 ms after the first, and none
// starts before it is due; a constant-vus iteration has none.
func TestArrivalRateIterationsCarryTheirDueTime(t *testing.T) {
	c := &ConstantArrivalRateConfig{BaseConfig: base("paced", 0), Rate: 20, TimeUnit: time.Second,
		Duration: 300 * time.Millisecond, PreAllocatedVUs: 6, MaxVUs: 6}
	c.Type = ConstantArrivalRate
	v := &ConstantVUsConfig{BaseConfig: base("closed", 0), VUs: 1, Duration: 100 * time.Millisecond}
	v.Type = ConstantVUs
	h := runPlan(t, context.Background(), testPlan(nil, c, v), nil)
	starts := h.rec.startsOf("paced")
	if len(starts) != 6 {
		t.Fatalf("%d starts, want 6", len(starts))
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].inInstance < starts[j].inInstance })
	for i, s := range starts {
		if s.due.IsZero() {
			t.Fatalf("start %d has no due time", i)
		}
		if got := s.due.Sub(starts[0].due); got != time.Duration(i)*50*time.Millisecond {
			t.Errorf("start %d due %v after the first, want %v", i, got, time.Duration(i)*50*time.Millisecond)
		}
		if started := h.rec.start.Add(s.offset); started.Before(s.due) {
			t.Errorf("start %d began %v before it was due", i, s.due.Sub(started))
		}
	}
	for _, s := range h.rec.startsOf("closed") {
		if !s.due.IsZero() {
			t.Fatalf("a constant-vus iteration has a due time")
		}
	}
}
