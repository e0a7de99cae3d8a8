// Calling into a VU's runtime: the event loop, interrupts by context, unhandled rejections.

package jshost

import (
	"context"
	"errors"
	"fmt"

	"github.com/grafana/sobek"
)

// call runs first on the event loop and waits for everything it started.
// The context interrupts the runtime and clears its timers when it ends.
func (v *VU) call(ctx context.Context, first func() error) error {
	base := v.watch(ctx)
	// Each call gets its own context, cancelled when the call ends, so Go
	// work a module started (and that the script did not wait for) stops;
	// its parent is per VU, so VUs do not contend on a shared context.
	callCtx, cancel := context.WithCancel(base)
	v.ctx = callCtx
	v.intMu.Lock()
	v.running = true
	if base.Err() != nil {
		// The context ended before the call: its AfterFunc has already run.
		v.rt.Interrupt(errInterrupted)
	}
	v.intMu.Unlock()
	err := v.loop.Start(first)
	cancel()
	v.timers.clearAll()
	v.loop.WaitOnRegistered()
	v.intMu.Lock()
	v.running = false
	v.intMu.Unlock()
	v.rt.ClearInterrupt()
	v.rejected = v.rejected[:0]
	return jsError(err)
}

// watch returns the VU's own child of ctx, whose end interrupts the running
// call and releases its timers. It is kept while calls use the same
// context (all iterations of a scenario share one): deriving from a shared
// context on every iteration makes the VUs contend on its mutex.
func (v *VU) watch(ctx context.Context) context.Context {
	if ctx == v.watchCtx {
		return v.watchBase
	}
	v.unwatch()
	v.watchCtx = ctx
	v.watchBase, v.watchCancel = context.WithCancel(ctx)
	v.watchStop = context.AfterFunc(v.watchBase, v.onDone)
	return v.watchBase
}

func (v *VU) unwatch() {
	if v.watchStop != nil {
		v.watchStop()
		v.watchCancel()
		v.watchStop, v.watchCancel, v.watchCtx, v.watchBase = nil, nil, nil, nil
	}
}

func (v *VU) onDone() {
	v.timers.clearAll()
	v.intMu.Lock()
	if v.running {
		v.rt.Interrupt(errInterrupted)
	}
	v.intMu.Unlock()
}

func (v *VU) trackRejection(p *sobek.Promise, op sobek.PromiseRejectionOperation) {
	switch op {
	case sobek.PromiseRejectionReject:
		v.rejected = append(v.rejected, p)
	case sobek.PromiseRejectionHandle:
		for i, q := range v.rejected {
			if q == p {
				v.rejected = append(v.rejected[:i], v.rejected[i+1:]...)
				break
			}
		}
	}
}

func (v *VU) checkRejections() error {
	if len(v.rejected) == 0 {
		return nil
	}
	p := v.rejected[0]
	v.rejected = v.rejected[:0]
	//lint:ignore ST1005 k6's own text for a rejected promise, observed on k6 v1.8.1
	return fmt.Errorf("Uncaught (in promise) %w", valueError(p.Result()))
}

// throw raises a plain JS Error with err's message (a GoError would put
// Go function names in the script's stack trace).
func (v *VU) throw(err error) {
	ctor, ok := sobek.AssertConstructor(v.rt.Get("Error"))
	if !ok {
		panic(v.rt.NewGoError(err))
	}
	obj, cerr := ctor(nil, v.rt.ToValue(err.Error()))
	if cerr != nil {
		panic(v.rt.NewGoError(err))
	}
	panic(obj)
}

// callFn calls fn on the event loop and unwraps a returned promise.
func (v *VU) callFn(ctx context.Context, fn sobek.Callable, args ...sobek.Value) (sobek.Value, error) {
	var ret sobek.Value
	err := v.call(ctx, func() error {
		r, err := fn(sobek.Undefined(), args...)
		ret = r
		return err
	})
	if err != nil {
		return nil, err
	}
	if ret == nil {
		return sobek.Undefined(), nil
	}
	if p, ok := ret.Export().(*sobek.Promise); ok {
		switch p.State() {
		case sobek.PromiseStateRejected:
			return nil, valueError(p.Result())
		case sobek.PromiseStatePending:
			if ctx.Err() != nil {
				return nil, errInterrupted
			}
			return nil, errors.New("the function's promise never settled")
		}
		return p.Result(), nil
	}
	return ret, nil
}
