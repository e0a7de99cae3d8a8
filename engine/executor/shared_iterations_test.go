package executor

import (
	"context"
	"testing"
	"time"
)

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

// An instance whose segment gets none of the VUs plans nothing: k6 inspect
// reports maxVUs 0 and totalDuration "0s" for it (docs/k6-operator.md).
func TestSharedIterationsWithoutVUsOnASegmentPlanNothing(t *testing.T) {
	c := &SharedIterationsConfig{BaseConfig: base("s", 30*time.Second), VUs: 1, Iterations: 3, MaxDuration: 10 * time.Minute}
	c.Type = SharedIterations
	for i, tu := range tuplesOf(t, "0,1/3,2/3,1") {
		p, err := NewPlan([]Config{c}, tu)
		if err != nil {
			t.Fatal(err)
		}
		wantVUs, wantDur := int64(0), time.Duration(0)
		if i == 0 {
			wantVUs, wantDur = 1, 10*time.Minute+30*time.Second
		}
		if p.MaxVUs != wantVUs || p.MaxDuration != wantDur {
			t.Errorf("segment %s: maxVUs %d, duration %s; want %d, %s", tu.Segment(), p.MaxVUs, p.MaxDuration, wantVUs, wantDur)
		}
	}
}
