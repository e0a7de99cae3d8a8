package executor

import (
	"context"
	"testing"
	"time"
)

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
