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
	// Every publish's Result carries its event; only the OK false is a
	// refusal (the never-acknowledged events check keeps its id).
	for i, r := range results {
		if r.Event == nil || r.Event.Content != contents[i] || r.Refused != (contents[i] == "reject-me") {
			t.Errorf("%s: event %v refused %v", contents[i], r.Event, r.Refused)
		}
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
	{false, "rate-limited: shared admission unavailable", OutcomeThrottled, 0},
	{false, "rate-limited: shared admission unavailable; retry in 1s", OutcomeThrottled, time.Second},
	{false, "rate-limited: too many concurrent requests", OutcomeThrottled, 0},
	{false, "rate-limited: observer frame rate exceeded (100/sec per agent)", OutcomeThrottled, 0},
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

// relay-v0.2.1 answers a throttled EVENT with a NOTICE and no OK. With one
// publish in flight the NOTICE can only be about it: it settles it as a
// throttle (with the hint), and an OK that still comes is late, not a bad
// frame.
func TestNoticeThrottleSettlesTheOnlyPublishInFlight(t *testing.T) {
	for _, tc := range []struct {
		notice string
		retry  time.Duration
	}{
		{"rate-limited: quota exceeded; retry in 5s", 5 * time.Second},
		{"rate-limited: quota exceeded", 0},
		{"rate-limited: shared admission unavailable", 0},
		{"rate-limited: too many concurrent requests", 0},
	} {
		t.Run(tc.notice, func(t *testing.T) {
			fr := newFakeRelay(t, func(fr *fakeRelay) {
				fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
					if verb == "EVENT" {
						fc.sendf(`["NOTICE",%q]`, tc.notice)
						fc.sendf(`["OK",%q,true,""]`, eventID(raw)) // late: already settled
					}
				}
			})
			sink := &CollectSink{}
			c := connect(t, fr, sink, func(cfg *Config) { cfg.PublishTimeout = 20 * time.Second })
			done := make(chan Result, 1)
			if err := c.PublishAsync(signed(t, testKeys(t, 1), "only"), PublishOptions{}, func(r Result) { done <- r }); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-done:
				if r.Outcome != OutcomeThrottled || r.RetryAfter != tc.retry || !strings.Contains(r.Error, "NOTICE") {
					t.Fatalf("%+v", r)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the only publish in flight waited for an OK that never comes")
			}
			waitFor(t, "the late OK", func() bool { return c.Stats().FramesIn >= 3 })
			if st := c.Stats(); st.Notices != 1 || st.BadFrames != 0 {
				t.Fatalf("stats %+v: the late OK became a bad frame", st)
			}
		})
	}
}

// With several publishes in flight a NOTICE names none of them, so none is
// settled by guess (the old code settled the oldest, which here is the one
// the relay accepts: its real OK then became a bad frame and the really
// throttled publish waited out its deadline as an error). Each settles by
// its own OK or deadline; the NOTICE is a throttle on the connection.
func TestNoticeThrottleWithSeveralInFlightSettlesNoneByGuess(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(fc *fakeConn, verb string, raw []json.RawMessage) {
			if verb != "EVENT" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, eventID(raw))
			if len(ids) == 3 {
				// The newest is throttled; the older two are accepted.
				fc.send(`["NOTICE","rate-limited: quota exceeded; retry in 2s"]`)
				fc.sendf(`["OK",%q,true,""]`, ids[0])
				fc.sendf(`["OK",%q,true,""]`, ids[1])
			}
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, func(cfg *Config) { cfg.PublishTimeout = 800 * time.Millisecond })
	k := testKeys(t, 1)
	done := make(chan Result, 3)
	for i := 0; i < 3; i++ {
		if err := c.PublishAsync(signed(t, k, fmt.Sprint("n", i)), PublishOptions{}, func(r Result) { done <- r }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // distinct send order
	}
	byOutcome := map[Outcome]int{}
	for i := 0; i < 3; i++ {
		select {
		case r := <-done:
			byOutcome[r.Outcome]++
		case <-time.After(5 * time.Second):
			t.Fatal("a publish never settled")
		}
	}
	if byOutcome[OutcomeOK] != 2 || byOutcome[OutcomeError] != 1 {
		t.Fatalf("outcomes %v: want the two accepted ok and the unanswered one at its deadline", byOutcome)
	}
	waitFor(t, "notice recorded", func() bool { return len(sink.Op(OpNotice)) == 1 })
	if r := sink.Op(OpNotice)[0]; r.Outcome != OutcomeThrottled || r.RetryAfter != 2*time.Second || !strings.Contains(r.Error, "3 operations in flight") {
		t.Fatalf("notice %+v", r)
	}
	if st := c.Stats(); st.BadFrames != 0 {
		t.Fatalf("stats %+v", st)
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
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "no OK within 80ms") || r.Refused || r.Event == nil {
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
