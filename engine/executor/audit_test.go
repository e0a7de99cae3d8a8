package executor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Audit tests: behaviours of spec §2 that the other tests exercised only
// indirectly. Durations are short and tolerances generous (loaded 2 cores).

// §2.7: a drop starts the creation of at most ONE unplanned VU; further drops
// while it is being created do not start more. Creation is made slow (40 ms)
// at a rate (200/s) that drops several starts per creation, so a scheduler
// that created a VU per drop would overlap creations.
func TestAuditArrivalRateCreatesOneVUAtATime(t *testing.T) {
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
		time.Sleep(40 * time.Millisecond)
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

// §2.6: a VU asked to stop by a ramp-down finishes its current iteration when
// that fits in gracefulRampDown (it is not interrupted) and starts no new one.
func TestAuditRampDownLetsTheCurrentIterationFinish(t *testing.T) {
	c := &RampingVUsConfig{BaseConfig: base("rv", 5*time.Second), StartVUs: 1, GracefulRampDown: 2 * time.Second,
		Stages: []Stage{{50 * time.Millisecond, 1, ""}, {0, 0, ""}, {400 * time.Millisecond, 0, ""}}}
	c.Type = RampingVUs
	var finished atomic.Int64
	h := runPlan(t, context.Background(), testPlan(nil, c), func(ctx context.Context, _ *Iteration) {
		t := time.NewTimer(200 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			finished.Add(1)
		case <-ctx.Done():
		}
	})
	if n := h.sched.IterationsInterrupted(); n != 0 {
		t.Errorf("%d iterations interrupted; the ramp-down grace (2s) covers the 200ms iteration", n)
	}
	if finished.Load() != 1 {
		t.Errorf("%d iterations finished, want the one running at the ramp-down", finished.Load())
	}
	if starts := h.rec.startsOf("rv"); len(starts) != 1 {
		t.Errorf("%d iterations started; a ramped-down VU must not start another", len(starts))
	}
}

// §2.5/§2.3: startTime delays a scenario relative to the scheduler's start
// (which the runner sets to the end of setup), for every executor type.
func TestAuditStartTimeForArrivalRate(t *testing.T) {
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
