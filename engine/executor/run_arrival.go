package executor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// ticket is one start handed to an idle VU; passed by value, no allocation.
type ticket struct {
	local int64
	stage int32
	due   time.Time // when the start was planned
}

// runArrivalRate runs both arrival-rate executors (§2.7, §2.8): one
// dispatcher walks the instance's events (striped by the tuple derived from
// maxVUs) at their planned offsets and hands each to a VU waiting for work.
// When no VU waits, the start is dropped and reported; if VUs remain
// unplanned, one more is created in the background (one at a time).
func (r *scenarioRun) runArrivalRate(ctx context.Context, sched Schedule, regular, gracefulStop time.Duration, pre, maxVUs int64, t *segment.Tuple) {
	preL, maxL := t.ScaleInt64(pre), t.ScaleInt64(maxVUs)
	d, ok, err := t.Derive(maxVUs)
	if err != nil {
		r.sched.fail(fmt.Errorf("scenario %s: %w", r.info.Name, err))
		return
	}
	if !ok || maxL == 0 {
		return
	}
	r.iterTuple = d
	r.eventStages = true
	r.setProgress(r.elapsedProgress(regular))
	_, grace, cancel := r.durationContexts(ctx, regular, gracefulStop)
	defer cancel()

	// idle counts VUs free to take a start: a VU is counted when it is
	// created and again after each iteration, before its goroutine waits on
	// work. So a start is missed only when every VU is really busy, not when
	// an idle VU's goroutine has not been scheduled yet.
	work := make(chan ticket)
	var idle atomic.Int64
	var vus, creators sync.WaitGroup
	var allocated atomic.Int64
	run := func(pv *pooledVU) {
		idle.Add(1)
		vus.Add(1)
		go r.arrivalVU(grace, pv, work, &idle, &vus)
	}
	for i := int64(0); i < preL; i++ {
		pv, ok := r.activate(grace)
		if !ok {
			break
		}
		allocated.Add(1)
		run(pv)
	}

	var creating atomic.Bool
	warned := false
	grow := func() {
		if allocated.Load() >= maxL {
			if !warned {
				warned = true
				r.sched.obs.InsufficientVUs(r.info.Name, maxL)
			}
			return
		}
		if !creating.CompareAndSwap(false, true) {
			return
		}
		creators.Add(1)
		go func() {
			defer creators.Done()
			defer creating.Store(false)
			pv, err := r.sched.pool.getOrCreate(grace)
			if err != nil {
				if grace.Err() == nil {
					r.sched.fail(fmt.Errorf("scenario %s: %w", r.info.Name, err))
				}
				return
			}
			r.bind(pv)
			allocated.Add(1)
			run(pv)
		}()
	}

	events := sched.Events()
	start := r.info.StartTime
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	now := time.Now()
	var started int64
dispatch:
	for l := int64(0); ; l++ {
		g := d.GlobalIndex(l)
		if g >= events {
			break
		}
		at := start.Add(sched.Offset(g))
		if at.After(now) {
			now = time.Now()
			if wait := at.Sub(now); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-grace.Done():
					break dispatch
				}
				now = time.Now()
			}
		}
		if idle.Load() <= 0 {
			r.drop(Dropped{Count: 1})
			grow()
			continue
		}
		idle.Add(-1) // only the dispatcher takes from idle
		select {
		case work <- ticket{local: started, stage: int32(sched.Stage(g)), due: at}:
			started++
		case <-grace.Done():
			break dispatch
		}
	}
	timer.Stop()
	// The scenario lasts its regular duration even when its last start came
	// earlier (the gap after the last tick, or a final ramping stage at rate 0).
	sleepUntil(grace, start.Add(regular))
	creators.Wait()
	close(work)
	vus.Wait()
}

// arrivalVU runs the starts handed to it until the dispatcher is done.
func (r *scenarioRun) arrivalVU(ctx context.Context, pv *pooledVU, work <-chan ticket, idle *atomic.Int64, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.sched.pool.put(pv)
	s := r.sched
	for {
		tk, ok := <-work
		if !ok {
			return
		}
		s.active.Add(1)
		r.active.Add(1)
		if tk.stage >= 0 {
			pv.it.Stage, pv.it.StageName = int(tk.stage), r.stages[tk.stage].Name
		}
		pv.it.Due = tk.due
		r.iterate(ctx, pv, tk.local)
		r.active.Add(-1)
		s.active.Add(-1)
		idle.Add(1)
	}
}
