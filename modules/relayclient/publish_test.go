// Publish over WebSocket: OKs correlated by event id, their reasons
// classified, throttling NOTICEs, deadlines, cancellation and what a close
// leaves pending.

package relayclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

func TestPublishCorrelatesOKsByEventID(t *testing.T) {
	// The relay answers the publishes in reverse order, rejecting one: each
	// publish must get its own OK.
	var mu sync.Mutex
	var held []string
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			if verb != "EVENT" {
				return
			}
			ev, _ := nostr.ParseEvent(raw[1])
			mu.Lock()
			held = append(held, ev.ID+"|"+ev.Content)
			if len(held) == 4 {
				for i := len(held) - 1; i >= 0; i-- {
					id, content, _ := strings.Cut(held[i], "|")
					if content == "reject-me" {
						fc.sendf(`["OK",%q,false,"invalid: channel is archived"]`, id)
					} else {
						fc.sendf(`["OK",%q,true,""]`, id)
					}
				}
			}
			mu.Unlock()
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	k := testKeys(t, 1)
	contents := []string{"a", "reject-me", "c", "d"}
	results := make([]Result, len(contents))
	var wg sync.WaitGroup
	for i, content := range contents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.Publish(context.Background(), signed(t, k, content), PublishOptions{})
		}()
	}
	wg.Wait()
	for i, r := range results {
		want := OutcomeOK
		if contents[i] == "reject-me" {
			want = OutcomeError
		}
		if r.Outcome != want || r.Op != OpPublish {
			t.Errorf("%s: %+v", contents[i], r)
		}
		if r.BytesSent == 0 || r.BytesReceived == 0 {
			t.Errorf("%s: bytes not counted: %+v", contents[i], r)
		}
	}
	if !strings.Contains(results[1].Error, "invalid: channel is archived") {
		t.Errorf("rejection text: %q", results[1].Error)
	}
	if c.InFlight() != 0 {
		t.Fatalf("in flight %d", c.InFlight())
	}
}

func TestPublishOpNameOverride(t *testing.T) {
	fr := newFakeRelay(t, nil)
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	r := c.Publish(context.Background(), signed(t, testKeys(t, 1), "x"), PublishOptions{Op: "hot_reply"})
	if r.Op != "hot_reply" || r.Outcome != OutcomeOK || sink.Count("hot_reply", OutcomeOK) != 1 {
		t.Fatalf("%+v / %+v", r, sink.Results())
	}
}

// The OK reasons of docs/buzz-protocol.md §1.8 and §2.2, as the relay sends them.
var okTable = []struct {
	ok     bool
	reason string
	want   Outcome
	retry  time.Duration
}{
	{true, "", OutcomeOK, 0},
	{true, "duplicate:", OutcomeOK, 0},
	{true, "duplicate: already have this event", OutcomeOK, 0},
	{true, "info: you have left this relay", OutcomeOK, 0},
	{false, "duplicate: reaction already exists", OutcomeError, 0},
	{false, "duplicate: channel already exists", OutcomeError, 0},
	{false, "rate-limited: quota exceeded; retry in 12s", OutcomeThrottled, 12 * time.Second},
	{false, "rate-limited: quota exceeded; retry in 1s", OutcomeThrottled, time.Second},
	{false, "rate-limited: quota exceeded", OutcomeThrottled, 0},
	{false, "rate-limited: shared admission unavailable", OutcomeError, 0},
	{false, "rate-limited: shared admission unavailable; retry in 1s", OutcomeError, 0},
	{false, "rate-limited: too many concurrent requests", OutcomeError, 0},
	{false, "rate-limited: observer frame rate exceeded (100/sec per agent)", OutcomeError, 0},
	{false, "auth-required: not authenticated", OutcomeError, 0},
	{false, "invalid: event pubkey does not match authenticated identity", OutcomeError, 0},
	{false, "invalid: content exceeds maximum size of 262144 bytes (got 300000)", OutcomeError, 0},
	{false, "invalid: event timestamp too far from server time", OutcomeError, 0},
	{false, "restricted: unknown event kind", OutcomeError, 0},
	{false, "restricted: not a channel member", OutcomeError, 0},
	{false, "blocked: you are banned from this community", OutcomeError, 0},
	{false, "error: internal server error", OutcomeError, 0},
	{false, "", OutcomeError, 0},
}

func TestOKClassificationTable(t *testing.T) {
	var idx sync.Mutex
	next := 0
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			if verb != "EVENT" {
				return
			}
			idx.Lock()
			tc := okTable[next]
			next++
			idx.Unlock()
			fc.sendf(`["OK",%q,%v,%q]`, eventID(raw), tc.ok, tc.reason)
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	k := testKeys(t, 1)
	for i, tc := range okTable {
		r := c.Publish(context.Background(), signed(t, k, fmt.Sprint("m", i)), PublishOptions{})
		if r.Outcome != tc.want || r.RetryAfter != tc.retry {
			t.Errorf("OK %v %q: outcome %v retry %v, want %v %v", tc.ok, tc.reason, r.Outcome, r.RetryAfter, tc.want, tc.retry)
		}
		if tc.want != OutcomeOK && tc.reason != "" && !strings.Contains(r.Error, tc.reason) {
			t.Errorf("OK %q: error text %q does not carry the reason", tc.reason, r.Error)
		}
	}
	if c.Stats().BadFrames != 0 {
		t.Fatalf("bad frames %d", c.Stats().BadFrames)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range okTable {
		if tc.ok {
			continue
		}
		if o, d := Classify(tc.reason); o != tc.want || d != tc.retry {
			t.Errorf("Classify(%q) = %v %v, want %v %v", tc.reason, o, d, tc.want, tc.retry)
		}
	}
	for in, want := range map[string]time.Duration{
		"retry in 30s": 30 * time.Second, "retry in s": 0, "retry in 5": 0, "retry in 5m": 0, "no hint": 0,
		"retry in 12345678901s": 0,
	} {
		if got := RetryIn(in); got != want {
			t.Errorf("RetryIn(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNoticeThrottleSettlesOldestPendingPublish(t *testing.T) {
	// relay-v0.2.1: a throttled EVENT gets a NOTICE and no OK.
	for _, tc := range []struct {
		notice string
		want   Outcome
	}{
		{"rate-limited: quota exceeded; retry in 5s", OutcomeThrottled},
		{"rate-limited: quota exceeded", OutcomeThrottled},
		{"rate-limited: shared admission unavailable", OutcomeError},
		{"rate-limited: too many concurrent requests", OutcomeError},
	} {
		t.Run(tc.notice, func(t *testing.T) {
			var mu sync.Mutex
			var ids []string
			fr := newFakeRelay(t, func(fr *fakeRelay) {
				fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
					if verb != "EVENT" {
						return
					}
					mu.Lock()
					ids = append(ids, eventID(raw))
					if len(ids) == 3 {
						// Throttle the first; accept the other two.
						fc.sendf(`["NOTICE",%q]`, tc.notice)
						fc.sendf(`["OK",%q,true,""]`, ids[1])
						fc.sendf(`["OK",%q,true,""]`, ids[2])
					}
					mu.Unlock()
				}
			})
			sink := &CollectSink{}
			var notices []string
			c := connect(t, fr, sink, func(cfg *Config) {
				cfg.PublishTimeout = 20 * time.Second
				cfg.OnNotice = func(text string, at time.Time) { notices = append(notices, text) }
			})
			k := testKeys(t, 1)
			done := make(chan Result, 3)
			var order []string
			for i := 0; i < 3; i++ {
				ev := signed(t, k, fmt.Sprint("n", i))
				order = append(order, ev.ID)
				if err := c.PublishAsync(ev, PublishOptions{}, func(r Result) { done <- r }); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			var got []Result
			for i := 0; i < 3; i++ {
				select {
				case r := <-done:
					got = append(got, r)
				case <-time.After(10 * time.Second):
					t.Fatal("a publish waited for an OK that never comes")
				}
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("settled only near the deadline")
			}
			byOutcome := map[Outcome]int{}
			for _, r := range got {
				byOutcome[r.Outcome]++
				if r.Outcome != OutcomeOK && !strings.Contains(r.Error, "NOTICE") {
					t.Errorf("error text %q should say it came by NOTICE", r.Error)
				}
			}
			if byOutcome[tc.want] != 1 || byOutcome[OutcomeOK] != 2 {
				t.Fatalf("outcomes %v", byOutcome)
			}
			if tc.want == OutcomeThrottled && strings.Contains(tc.notice, "5s") {
				for _, r := range got {
					if r.Outcome == OutcomeThrottled && r.RetryAfter != 5*time.Second {
						t.Fatalf("retry %v", r.RetryAfter)
					}
				}
			}
			if len(notices) != 1 || c.Stats().Notices != 1 || c.Stats().BadFrames != 0 {
				t.Fatalf("notices %v stats %+v", notices, c.Stats())
			}
		})
	}
}

func TestNoticeThrottleSettlesTheOldestNotTheNewest(t *testing.T) {
	release := make(chan struct{})
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			ev, _ := nostr.ParseEvent(raw[1])
			if ev.Content == "second" {
				go func() { <-release; fc.send(`["NOTICE","rate-limited: quota exceeded; retry in 2s"]`) }()
			}
		}
	})
	c := connect(t, fr, nil, nil)
	k := testKeys(t, 1)
	first, second := make(chan Result, 1), make(chan Result, 1)
	_ = c.PublishAsync(signed(t, k, "first"), PublishOptions{}, func(r Result) { first <- r })
	time.Sleep(5 * time.Millisecond) // distinct send order
	_ = c.PublishAsync(signed(t, k, "second"), PublishOptions{}, func(r Result) { second <- r })
	close(release)
	select {
	case r := <-first:
		if r.Outcome != OutcomeThrottled {
			t.Fatalf("first: %+v", r)
		}
	case <-second:
		t.Fatal("the newest publish was settled, not the oldest")
	case <-time.After(5 * time.Second):
		t.Fatal("nothing settled")
	}
	if c.InFlight() != 1 {
		t.Fatalf("in flight %d, want 1", c.InFlight())
	}
}

func TestUnmatchedRateLimitNoticeIsRecorded(t *testing.T) {
	fr := newFakeRelay(t, nil)
	sink := &CollectSink{}
	connect(t, fr, sink, nil)
	fr.conn(0).send(`["NOTICE","rate-limited: quota exceeded; retry in 3s"]`)
	fr.conn(0).send(`["NOTICE","some other notice"]`)
	waitFor(t, "notice recorded", func() bool { return len(sink.Op(OpNotice)) == 1 })
	if r := sink.Op(OpNotice)[0]; r.Outcome != OutcomeThrottled || r.RetryAfter != 3*time.Second {
		t.Fatalf("%+v", r)
	}
}

func TestPublishDeadlineIsAnErrorAndALateOKIsNotABadFrame(t *testing.T) {
	arrived := make(chan string, 1)
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			if verb == "EVENT" {
				arrived <- eventID(raw)
			}
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	start := time.Now()
	r := c.Publish(context.Background(), signed(t, testKeys(t, 1), "slow"), PublishOptions{Timeout: 80 * time.Millisecond})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "no OK within 80ms") {
		t.Fatalf("%+v", r)
	}
	if d := time.Since(start); d < 80*time.Millisecond || d > 3*time.Second {
		t.Fatalf("settled after %v", d)
	}
	fr.conn(0).sendf(`["OK",%q,true,""]`, <-arrived)
	waitFor(t, "late OK", func() bool { return c.Stats().LateFrames == 1 })
	if c.Stats().BadFrames != 0 || sink.Count(OpPublish, OutcomeOK) != 0 {
		t.Fatalf("late OK counted: %+v %+v", c.Stats(), sink.Op(OpPublish))
	}
}

func TestPublishContextCancelIsPending(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(*fakeConn, string, []json.RawMessage) {} // never answers
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := c.Publish(ctx, signed(t, testKeys(t, 1), "x"), PublishOptions{})
	if r.Outcome != OutcomePending || sink.Count(OpPublish, OutcomePending) != 1 {
		t.Fatalf("%+v", r)
	}
	if c.InFlight() != 0 {
		t.Fatal("cancelled publish still in flight")
	}
}

// A publish its caller stopped waiting for is abandoned like one that
// timed out: the relay's OK that follows is late, not a bad frame (the
// stop used to turn every OK still on its way into an error).
func TestACancelledPublishsLateOKIsNotABadFrame(t *testing.T) {
	arrived := make(chan string, 1)
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			if verb == "EVENT" {
				arrived <- eventID(raw)
			}
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if r := c.Publish(ctx, signed(t, testKeys(t, 1), "x"), PublishOptions{}); r.Outcome != OutcomePending {
		t.Fatalf("%+v", r)
	}
	fr.conn(0).sendf(`["OK",%q,true,""]`, <-arrived)
	waitFor(t, "late OK", func() bool { return c.Stats().LateFrames == 1 })
	if c.Stats().BadFrames != 0 || sink.Count(OpBadFrame, OutcomeError) != 0 {
		t.Fatalf("late OK counted as a bad frame: %+v %+v", c.Stats(), sink.Op(OpBadFrame))
	}
}

// A COUNT that timed out is abandoned as a publish is: the reply that
// follows is late, not a bad frame.
func TestATimedOutCountsLateReplyIsNotABadFrame(t *testing.T) {
	arrived := make(chan string, 1)
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			if verb == "COUNT" {
				arrived <- subID(raw)
			}
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	if _, r := c.Count(context.Background(), []Filter{{Kinds: []int{9}}}, CountOptions{Timeout: 80 * time.Millisecond}); r.Outcome != OutcomeError {
		t.Fatalf("%+v", r)
	}
	fr.conn(0).sendf(`["COUNT",%q,{"count":1}]`, <-arrived)
	waitFor(t, "late COUNT", func() bool { return c.Stats().LateFrames == 1 })
	if c.Stats().BadFrames != 0 || sink.Count(OpBadFrame, OutcomeError) != 0 {
		t.Fatalf("late COUNT counted as a bad frame: %+v %+v", c.Stats(), sink.Op(OpBadFrame))
	}
}

func TestCloseSettlesInFlightAsPendingAndRelayLossAsError(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(*fakeConn, string, []json.RawMessage) {}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	done := make(chan Result, 1)
	_ = c.PublishAsync(signed(t, testKeys(t, 1), "x"), PublishOptions{}, func(r Result) { done <- r })
	c.Close()
	c.Close() // idempotent
	<-c.Done()
	if r := <-done; r.Outcome != OutcomePending {
		t.Fatalf("after our Close: %+v", r)
	}
	if c.Err() != nil {
		t.Fatalf("Err after our Close = %v", c.Err())
	}
	if r := c.Publish(context.Background(), signed(t, testKeys(t, 1), "y"), PublishOptions{}); r.Outcome != OutcomeError {
		t.Fatalf("publish on a closed conn: %+v", r)
	}

	var disc error
	discCalled := make(chan struct{})
	c2 := connect(t, fr, sink, func(cfg *Config) {
		cfg.OnDisconnect = func(err error) { disc = err; close(discCalled) }
	})
	done2 := make(chan Result, 1)
	_ = c2.PublishAsync(signed(t, testKeys(t, 1), "z"), PublishOptions{}, func(r Result) { done2 <- r })
	_ = fr.conn(1).ws.Close() // the relay goes away
	<-c2.Done()
	<-discCalled
	if r := <-done2; r.Outcome != OutcomeError || !strings.Contains(r.Error, "connection lost") {
		t.Fatalf("after relay loss: %+v", r)
	}
	if c2.Err() == nil || disc == nil {
		t.Fatal("Err/OnDisconnect should say why the connection ended")
	}
}

func TestLegacyNoticeSettlesACountWhenNoPublishWaits(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
			if verb == "COUNT" {
				c.send(`["NOTICE","rate-limited: quota exceeded; retry in 2s"]`)
			}
		}
	})
	c := connect(t, fr, nil, nil)
	_, r := c.Count(context.Background(), []Filter{{Kinds: []int{9}}}, CountOptions{Timeout: 20 * time.Second})
	if r.Outcome != OutcomeThrottled || r.RetryAfter != 2*time.Second || r.Op != OpCount {
		t.Fatalf("%+v", r)
	}
}
