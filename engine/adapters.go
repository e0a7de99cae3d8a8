// Adapters between the engine's parts: executor.VU over jshost.VU, and the run as k6/execution controls it.

package engine

import (
	"context"
	"errors"
	"time"

	"github.com/buzzload/buzzload/engine/executor"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/jshost/eventloop"
)

// newVU is the pool's factory.
func (r *runner) newVU(ctx context.Context, id, idInTest uint64) (executor.VU, error) {
	vu, err := r.bundle.NewVU(ctx, id, idInTest)
	if err != nil {
		return nil, err
	}
	return &vuAdapter{r: r, vu: vu}, nil
}

// vuAdapter runs executor iterations on a jshost.VU.
type vuAdapter struct {
	r        *runner
	vu       *jshost.VU
	setupSet bool
	sc       *jshost.Scenario
	scFor    *executor.ScenarioInfo
}

func (a *vuAdapter) Activate(sc *executor.ScenarioInfo) {
	if !a.setupSet {
		a.vu.SetSetup(a.r.setupForVUs())
		a.setupSet = true
	}
	if a.scFor != sc {
		a.sc = &jshost.Scenario{Name: sc.Name, Executor: sc.Executor, StartTime: sc.StartTime, Progress: sc.Progress}
		a.scFor = sc
	}
	tags := make(map[string]string, len(a.r.opts.Tags)+len(sc.Tags))
	for k, v := range a.r.opts.Tags {
		tags[k] = v
	}
	for k, v := range sc.Tags {
		tags[k] = v
	}
	a.vu.Activate(a.sc, sc.Exec, sc.Env, tags)
}

func (a *vuAdapter) RunIteration(ctx context.Context, it *executor.Iteration) {
	start := time.Now()
	res := a.vu.RunIteration(ctx, jshost.Iteration{InInstance: it.InInstance, InTest: it.InTest, Stage: it.Stage, StageName: it.StageName, Due: it.Due})
	var pe *eventloop.PanicError
	if errors.As(res.Err, &pe) {
		// A Go panic is a bug, not a script error: stop the run (exit 109).
		a.r.fail(ExitGoPanic, pe)
		a.r.cancelRun(pe)
	}
	// minIterationDuration: a full iteration that ended early sleeps the rest.
	if rest := a.r.opts.MinIterationDuration - time.Since(start); rest > 0 && res.Full {
		t := time.NewTimer(rest)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

type control runner

func (c *control) Abort(reason string) {
	r := (*runner)(c)
	if r.cancelRun != nil {
		r.cancelRun(&jshost.AbortError{Reason: reason})
	} else {
		r.fail(ExitScriptAborted, &jshost.AbortError{Reason: reason})
	}
}

func (c *control) Fail(string) { (*runner)(c).failed.Store(true) }

func (c *control) Instance() jshost.InstanceStats {
	r := (*runner)(c)
	var st jshost.InstanceStats
	if !r.runStart.IsZero() {
		st.CurrentTestRunDuration = r.now().Sub(r.runStart)
	}
	if s := r.sched.Load(); s != nil {
		st.IterationsCompleted = s.IterationsCompleted()
		st.IterationsInterrupted = s.IterationsInterrupted()
		st.VUsActive = s.ActiveVUs()
		st.VUsInitialized = s.AllocatedVUs()
	} else if r.pool != nil {
		st.VUsInitialized = r.pool.Allocated()
	}
	return st
}
