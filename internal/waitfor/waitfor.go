// Package waitfor is how the tests wait: for an observable condition,
// polled until a deadline (code review T1: a sleep standing in for a
// precondition lets a test pass without exercising its point on a slow
// machine). Its poll is the tests' one sleep that paces a deadline-bounded
// wait; the deadline is generous, for a loaded 2-core machine, and only
// bounds a failing test.
package waitfor

import (
	"testing"
	"time"
)

// Poll is the pause between two looks at a condition.
const Poll = 2 * time.Millisecond

// Until waits up to timeout for cond, failing the test naming what.
func Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	UntilEvery(t, what, timeout, Poll, cond)
}

// UntilEvery is Until looking every interval: for a condition that costs a
// process to look at (kubectl).
func UntilEvery(t testing.TB, what string, timeout, every time.Duration, cond func() bool) {
	t.Helper()
	if !within(timeout, every, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Within reports whether cond held within timeout.
func Within(timeout time.Duration, cond func() bool) bool { return within(timeout, Poll, cond) }

// WithinEvery is Within looking every interval.
func WithinEvery(timeout, every time.Duration, cond func() bool) bool {
	return within(timeout, every, cond)
}

func within(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every) // paces the poll; the deadline bounds it
	}
	return true
}
