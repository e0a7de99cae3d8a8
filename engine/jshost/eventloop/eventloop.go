// Package eventloop is the per-VU event loop: one FIFO of callbacks that only
// the VU's goroutine runs, fed by Go goroutines that reserved a slot first.
//
// A VU's JS runtime is not goroutine-safe, so anything asynchronous (timers,
// Go work behind a promise, socket callbacks) reserves a slot with
// RegisterCallback on the JS goroutine, does its work elsewhere, and hands the
// JS part back through the returned enqueue function. Start returns only when
// the queue is empty and no reservation is outstanding, which is how an
// iteration waits for every async operation it started.
package eventloop

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// PanicError is a Go panic inside a callback (a bug in Go module code); the
// runner ends the run with k6's exit code 109.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// Enqueue hands a callback back to the loop. It may be called from any
// goroutine and must be called exactly once per reservation.
type Enqueue func(func() error)

// Loop is one VU's event loop. The zero value is not usable; use New.
type Loop struct {
	mu       sync.Mutex
	queue    []func() error
	reserved int
	wakeup   chan struct{}

	// checkRejections runs after every round of callbacks; an error from it
	// ends the loop (unhandled promise rejections).
	checkRejections func() error
}

// New returns a loop. check, if not nil, is called after each callback (and
// after the first function) to report unhandled promise rejections.
func New(check func() error) *Loop {
	return &Loop{wakeup: make(chan struct{}, 1), checkRejections: check}
}

// ErrEnqueuedTwice is the panic value when a reservation is used twice: it is
// a programming error in a module, never a script error.
var ErrEnqueuedTwice = errors.New("eventloop: callback enqueued twice")

// RegisterCallback reserves one slot. Call it on the loop's goroutine. Until
// the returned function is called, Start will not return.
func (l *Loop) RegisterCallback() Enqueue {
	l.mu.Lock()
	l.reserved++
	l.mu.Unlock()
	var once sync.Once
	return func(f func() error) {
		called := false
		once.Do(func() {
			called = true
			l.mu.Lock()
			l.queue = append(l.queue, f)
			l.reserved--
			l.mu.Unlock()
			select {
			case l.wakeup <- struct{}{}:
			default:
			}
		})
		if !called {
			panic(ErrEnqueuedTwice)
		}
	}
}

// Pending reports the number of outstanding reservations plus queued
// callbacks.
func (l *Loop) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved + len(l.queue)
}

// Start runs first and then every queued callback in order, until nothing is
// queued or reserved. The first error (from first, a callback, or the
// rejection check) stops the loop; callbacks not yet run stay queued so that
// WaitOnRegistered can drain them.
func (l *Loop) Start(first func() error) error {
	if err := l.run(first); err != nil {
		return err
	}
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			if l.reserved == 0 {
				l.mu.Unlock()
				return nil
			}
			l.mu.Unlock()
			<-l.wakeup
			continue
		}
		f := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		if len(l.queue) == 0 {
			l.queue = l.queue[:0:0] // let the backing array go once drained
		}
		l.mu.Unlock()
		if err := l.run(f); err != nil {
			return err
		}
	}
}

func (l *Loop) run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == ErrEnqueuedTwice { //nolint:errorlint // sentinel panic value
				panic(r)
			}
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	if err = f(); err != nil {
		return err
	}
	if l.checkRejections != nil {
		return l.checkRejections()
	}
	return nil
}

// WaitOnRegistered blocks until every outstanding reservation has been
// enqueued, then runs what is queued, ignoring errors. Call it after the
// VU's context was cancelled (modules must watch it) so that no Go goroutine
// is left holding a reservation into the next iteration.
func (l *Loop) WaitOnRegistered() {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 && l.reserved == 0 {
			l.mu.Unlock()
			return
		}
		if len(l.queue) == 0 {
			l.mu.Unlock()
			<-l.wakeup
			continue
		}
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		for _, f := range q {
			func() {
				defer func() { _ = recover() }()
				_ = f()
			}()
		}
	}
}
