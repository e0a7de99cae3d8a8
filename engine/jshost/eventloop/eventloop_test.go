package eventloop

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestStartRunsCallbacksInOrderAndWaitsForReservations(t *testing.T) {
	l := New(nil)
	var got []int
	err := l.Start(func() error {
		// Each goroutine enqueues after the one before it has (a chain, not
		// staggered sleeps, which a loaded machine can reorder), and after
		// the loop has had time to run out of queued work.
		prev := make(chan struct{})
		close(prev)
		for i := 1; i <= 3; i++ {
			enq := l.RegisterCallback()
			after, done := prev, make(chan struct{})
			prev = done
			go func() {
				<-after
				time.Sleep(5 * time.Millisecond) // a Go-side callback's latency (the fake's): order is the test
				enq(func() error { got = append(got, i); return nil })
				close(done)
			}()
		}
		return nil
	})
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("err %v, got %v", err, got)
	}
}

func TestCallbackErrorStopsLoopAndDrainLeavesNothing(t *testing.T) {
	l := New(nil)
	boom := errors.New("boom")
	ran := 0
	var wg sync.WaitGroup
	err := l.Start(func() error {
		a, b := l.RegisterCallback(), l.RegisterCallback()
		a(func() error { return boom })
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(10 * time.Millisecond) // a Go-side callback's latency (the fake's)
			b(func() error { ran++; return nil })
		}()
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	l.WaitOnRegistered()
	wg.Wait()
	if ran != 1 || l.Pending() != 0 {
		t.Fatalf("ran %d, pending %d", ran, l.Pending())
	}
}

func TestEnqueueTwicePanics(t *testing.T) {
	l := New(nil)
	enq := l.RegisterCallback()
	enq(func() error { return nil })
	defer func() {
		if r := recover(); r != ErrEnqueuedTwice {
			t.Fatalf("recover = %v", r)
		}
	}()
	enq(func() error { return nil })
}

func TestRejectionCheckEndsLoop(t *testing.T) {
	bad := errors.New("unhandled")
	calls := 0
	l := New(func() error {
		calls++
		if calls == 2 {
			return bad
		}
		return nil
	})
	err := l.Start(func() error {
		enq := l.RegisterCallback()
		enq(func() error { return nil })
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v", err)
	}
}
