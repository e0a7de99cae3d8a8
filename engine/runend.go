package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output"
)

// The run's end: thresholds judged while it goes, the VU gauges, and how it
// stops and tells the outputs.

func (r *runner) checkThresholds(ctx context.Context) {
	t := time.NewTicker(thresholdInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.coll.Flush()
			out := r.ev.Check()
			if len(out.Failed) > 0 {
				r.tainted.Store(true)
			}
			if out.Abort {
				r.log.Log(jshost.LevelError, "thresholds on metrics '"+out.AbortedBy.Key+"' were crossed; at least one has abortOnFail enabled, stopping test prematurely")
				r.cancelRun(errThresholdAbort)
				return
			}
		}
	}
}

// emitVUGauges records vus and vus_max once a second (k6: a run shorter
// than a second has none).
func (r *runner) emitVUGauges(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			var active, allocated int64
			if s := r.sched.Load(); s != nil {
				active, allocated = s.ActiveVUs(), s.AllocatedVUs()
			} else if r.pool != nil {
				allocated = r.pool.Allocated()
			}
			r.coll.Add(metrics.Sample{Metric: r.bi.VUs, Tags: r.testWide, Time: now, Value: float64(active)})
			r.coll.Add(metrics.Sample{Metric: r.bi.VUsMax, Tags: r.testWide, Time: now, Value: float64(allocated)})
		}
	}
}

// markStart starts the run's clock.
func (r *runner) markStart() {
	r.runStart = r.now()
	t := r.runStart
	r.started.Store(&t)
}

// stopRun ends the run for an output: exit code first, then the context.
func (r *runner) stopRun(code int, err error) {
	r.fail(code, fmt.Errorf("%w: %w", errOutputAbort, err))
	r.mu.Lock()
	cancel := r.cancelRun
	r.mu.Unlock()
	if cancel != nil {
		cancel(err)
	}
}

// tellEnding returns what Ender outputs learn of the run's end.
func (r *runner) tellEnding() func(output.Ender) {
	res := r.result()
	r.mu.Lock()
	aborted := res.ExitCode == ExitThresholdsFailed && !r.endThresholds
	r.mu.Unlock()
	code := res.ExitCode
	if errors.Is(res.Err, errOutputAbort) {
		code = ExitGeneric
	}
	results := map[string]map[string]bool{}
	for _, st := range res.Thresholds {
		if results[st.Key] == nil {
			results[st.Key] = map[string]bool{}
		}
		results[st.Key][st.Source] = st.Evaluated && !st.OK
	}
	return func(e output.Ender) {
		e.RunEnded(code, aborted, results)
		if ee, ok := e.(output.ErrorEnder); ok {
			ee.RunError(res.Err)
		}
	}
}
