package jshost

import (
	"sync"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/eventloop"
)

// timers implements setTimeout/setInterval on the VU's event loop. Each live
// timer holds one loop reservation, so an iteration waits for its timers;
// clearAll (on context end or when the call finished with an error) releases
// them all.
type timers struct {
	vu     *VU
	mu     sync.Mutex
	next   int64
	active map[int64]*timer
}

type timer struct {
	t       *time.Timer
	enqueue eventloop.Enqueue
}

func newTimers(vu *VU) *timers { return &timers{vu: vu} }

func delayOf(v sobek.Value) time.Duration {
	if v == nil || sobek.IsUndefined(v) {
		return 0
	}
	ms := v.ToFloat()
	if ms != ms || ms < 0 { // NaN or negative
		ms = 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func (t *timers) setTimeout(call sobek.FunctionCall) sobek.Value {
	return t.schedule(call, false)
}

func (t *timers) setInterval(call sobek.FunctionCall) sobek.Value {
	return t.schedule(call, true)
}

func (t *timers) schedule(call sobek.FunctionCall, repeat bool) sobek.Value {
	rt := t.vu.rt
	fn, ok := sobek.AssertFunction(call.Argument(0))
	if !ok {
		panic(rt.NewTypeError("setTimeout/setInterval: the callback must be a function"))
	}
	d := delayOf(call.Argument(1))
	var args []sobek.Value
	if len(call.Arguments) > 2 {
		args = append(args, call.Arguments[2:]...)
	}
	t.mu.Lock()
	t.next++
	id := t.next
	t.mu.Unlock()
	t.arm(id, fn, args, d, repeat)
	return rt.ToValue(id)
}

// arm reserves a loop slot and starts the Go timer that fills it.
func (t *timers) arm(id int64, fn sobek.Callable, args []sobek.Value, d time.Duration, repeat bool) {
	tm := &timer{enqueue: t.vu.loop.RegisterCallback()}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active == nil {
		t.active = map[int64]*timer{}
	}
	t.active[id] = tm
	tm.t = time.AfterFunc(d, func() {
		tm.enqueue(func() error {
			t.mu.Lock()
			cur, live := t.active[id]
			if live && cur == tm && !repeat {
				delete(t.active, id)
			}
			t.mu.Unlock()
			if !live || cur != tm {
				return nil
			}
			if repeat && t.vu.ctx.Err() == nil {
				t.arm(id, fn, args, d, repeat)
			}
			_, err := fn(sobek.Undefined(), args...)
			return err
		})
	})
}

func (t *timers) clear(call sobek.FunctionCall) sobek.Value {
	id := call.Argument(0).ToInteger()
	t.mu.Lock()
	tm, ok := t.active[id]
	if ok {
		delete(t.active, id)
	}
	t.mu.Unlock()
	if ok && tm.t.Stop() {
		tm.enqueue(func() error { return nil })
	}
	return sobek.Undefined()
}

// clearAll cancels every timer; safe from any goroutine.
func (t *timers) clearAll() {
	t.mu.Lock()
	all := t.active
	t.active = nil
	t.mu.Unlock()
	for _, tm := range all {
		if tm.t != nil && tm.t.Stop() {
			tm.enqueue(func() error { return nil })
		}
	}
}
