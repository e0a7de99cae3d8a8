package seed

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// Verify finds the gaps of an unseeded and a partly seeded fixture, passes
// a complete one with every unit counted, and writes nothing.
func TestVerifyFindsGapsAndWritesNothing(t *testing.T) {
	r := startRelay(t, nil)
	full := scenarioFor(t, r, "verify", privateShape)
	ctx := context.Background()

	res, err := Verify(ctx, full, Options{})
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "channel 1/2") || !strings.Contains(err.Error(), "no community is configured") {
		t.Fatalf("unseeded: %v (the last channel is checked first)", err)
	}
	if res == nil || res.OK() || res.Channels.Existing != 0 {
		t.Fatalf("unseeded result %+v", res)
	}

	small := scenarioFor(t, r, "verify", strings.Replace(privateShape, "history_messages_per_channel = 4", "history_messages_per_channel = 3", 1))
	if _, err := runSeed(t, r, small, nil); err != nil {
		t.Fatal(err)
	}
	before := r.Stats().EventsAccepted
	_, err = Verify(ctx, full, Options{})
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "channel 1/2 has 11 of its 12 seeded posts") {
		t.Fatalf("partly seeded: %v", err)
	}

	if _, err := runSeed(t, r, full, nil); err != nil {
		t.Fatal(err)
	}
	seeded := r.Stats().EventsAccepted
	if seeded == before {
		t.Fatal("the completing seed posted nothing")
	}
	res, err = Verify(ctx, full, Options{})
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	if !res.OK() || res.Channels.Existing != 6 || res.Members.Existing != res.Members.Planned || res.Members.Planned == 0 ||
		res.Posts.Existing != res.Posts.Planned || res.Posts.Planned != 6*(4+2*4)+6 {
		t.Fatalf("complete result: channels %+v members %+v posts %+v", res.Channels, res.Members, res.Posts)
	}
	if after := r.Stats().EventsAccepted; after != seeded {
		t.Fatalf("Verify wrote %d events", after-seeded)
	}
}

// WaitComplete returns once a seed running at the same time has finished,
// with the complete fixture; without a seed it gives up at its timeout
// naming what was missing.
func TestWaitCompleteFollowsASeedAndIsBounded(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "wait", privateShape)
	ctx := context.Background()

	start := time.Now()
	_, err := WaitComplete(ctx, sc, Options{}, WaitOptions{Timeout: 700 * time.Millisecond, Interval: 100 * time.Millisecond})
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), `waited 1s for the fixture of run_id "wait"`) ||
		!strings.Contains(err.Error(), "execution segment starts at 0") {
		t.Fatalf("no seed: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("gave up after %s, timeout was 700ms", d)
	}

	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	var checks atomic.Int32
	go func() {
		res, err := WaitComplete(ctx, sc, Options{}, WaitOptions{Timeout: 30 * time.Second, Interval: 20 * time.Millisecond,
			MaxInterval: 50 * time.Millisecond, Progress: func(error) { checks.Add(1) }})
		done <- out{res, err}
	}()
	// The waiter has looked at the fixture, found it incomplete, before the seed.
	waitfor.Until(t, "the waiter's first check", 10*time.Second, func() bool { return checks.Load() > 0 })
	if _, err := runSeed(t, r, sc, nil); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || !got.res.OK() || got.res.Posts.Existing != got.res.Posts.Planned {
		t.Fatalf("after the seed: %v %+v", got.err, got.res)
	}
	if checks.Load() == 0 {
		t.Fatal("the fixture was complete before the seed ran")
	}
}
