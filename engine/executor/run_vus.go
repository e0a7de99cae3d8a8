package executor

import (
	"context"
	"sync"
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

// --- ramping-vus ----------------------------------------------------------------
