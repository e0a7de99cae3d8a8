// Subscriptions over WebSocket: REQ to EOSE, live events, CLOSED from
// either side, the EOSE timeout and COUNT.

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

func TestSubscribeEOSELiveEventsAndRelayClosed(t *testing.T) {
	k := testKeys(t, 2)
	stored1, stored2, live := signed(t, k, "s1"), signed(t, k, "s2"), signed(t, k, "live")
	var fc *fakeConn
	gotREQ := make(chan string, 1)
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
			if verb == "REQ" {
				fc = c
				id := subID(raw)
				c.sendf(`["EVENT",%q,%s]`, id, stored1.AppendJSON(nil))
				c.sendf(`["EVENT",%q,%s]`, id, stored2.AppendJSON(nil))
				c.sendf(`["EOSE",%q]`, id)
				gotREQ <- string(raw[2])
			}
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	type arrival struct {
		content string
		at      time.Time
		live    bool
	}
	var mu sync.Mutex
	var arrivals []arrival
	var closedReason string
	closed := make(chan struct{})
	filters := []Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {"chan"}}, Limit: 50}}
	before := time.Now()
	sub, r, err := c.SubscribeEOSE(context.Background(), filters, SubOptions{
		OnEvent: func(ev *nostr.Event, at time.Time, isLive bool) {
			mu.Lock()
			arrivals = append(arrivals, arrival{ev.Content, at, isLive})
			mu.Unlock()
		},
		OnClosed: func(reason string, at time.Time) { closedReason = reason; close(closed) },
	})
	if err != nil || r.Outcome != OutcomeOK || r.Op != OpSubscribeEOSE {
		t.Fatalf("EOSE: %v %+v", err, r)
	}
	if f := <-gotREQ; f != `{"kinds":[9],"#h":["chan"],"limit":50}` {
		t.Fatalf("REQ filter %s", f)
	}
	if sub.Replayed() != 2 {
		t.Fatalf("replayed %d", sub.Replayed())
	}
	fc.sendf(`["EVENT",%q,%s]`, sub.ID(), live.AppendJSON(nil))
	waitFor(t, "live event", func() bool { mu.Lock(); defer mu.Unlock(); return len(arrivals) == 3 })
	mu.Lock()
	for i, a := range arrivals {
		if a.at.Before(before) || (i > 0 && a.at.Before(arrivals[i-1].at)) {
			t.Errorf("arrival %d timestamp %v out of order", i, a.at)
		}
	}
	if arrivals[0].live || arrivals[1].live || !arrivals[2].live || arrivals[2].content != "live" {
		t.Fatalf("arrivals %+v", arrivals)
	}
	mu.Unlock()
	fc.sendf(`["CLOSED",%q,"restricted: not a channel member"]`, sub.ID())
	<-closed
	if closedReason != "restricted: not a channel member" {
		t.Fatalf("reason %q", closedReason)
	}
	errs := sink.Count(OpSubscribeEOSE, OutcomeError)
	if errs != 1 || c.Stats().BadFrames != 0 {
		t.Fatalf("a relay CLOSED on a live subscription is one subscribe_eose error: %d, %+v", errs, sink.Results())
	}
}

func TestSubscribeClosedBeforeEOSE(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   Outcome
		retry  time.Duration
	}{
		{"auth-required: not authenticated", OutcomeError, 0},
		{"restricted: not a channel member", OutcomeError, 0},
		{"rate-limited: quota exceeded; retry in 3s", OutcomeThrottled, 3 * time.Second},
		{"rate-limited: too many concurrent requests", OutcomeThrottled, 0},
		{"error: too many subscriptions", OutcomeError, 0},
	} {
		fr := newFakeRelay(t, func(fr *fakeRelay) {
			fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
				if verb == "REQ" {
					c.sendf(`["CLOSED",%q,%q]`, subID(raw), tc.reason)
				}
			}
		})
		sink := &CollectSink{}
		c := connect(t, fr, sink, nil)
		var closedReason string
		_, r, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{
			Op:       "history",
			OnClosed: func(reason string, _ time.Time) { closedReason = reason },
		})
		if err == nil || r.Outcome != tc.want || r.RetryAfter != tc.retry || r.Op != "history" {
			t.Fatalf("%q: %v %+v", tc.reason, err, r)
		}
		if !strings.Contains(r.Error, tc.reason) || closedReason != tc.reason {
			t.Fatalf("%q: error %q, OnClosed %q", tc.reason, r.Error, closedReason)
		}
		if len(sink.Op("history")) != 1 {
			t.Fatalf("recorded %+v", sink.Op("history"))
		}
	}
}

func TestOurCloseThenClosedEmptyIsNotAnError(t *testing.T) {
	closes := make(chan string, 1)
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
			switch verb {
			case "REQ":
				c.sendf(`["EOSE",%q]`, subID(raw))
			case "CLOSE":
				closes <- subID(raw)
			}
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	called := false
	sub, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{
		OnClosed: func(string, time.Time) { called = true },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	_ = sub.Close() // idempotent
	if id := <-closes; id != sub.ID() {
		t.Fatalf("CLOSE for %q", id)
	}
	// A CLOSED "" for a subscription already gone (the relay answers every CLOSE) is not bad either.
	fr.conn(0).send(`["CLOSED","never-opened",""]`)
	waitFor(t, "CLOSED frames read", func() bool { return c.Stats().LateFrames >= 1 })
	if sink.Count(OpSubscribeEOSE, OutcomeError) != 0 || c.Stats().BadFrames != 0 || called {
		t.Fatalf("our close counted as an error: %+v stats %+v called %v", sink.Results(), c.Stats(), called)
	}
}

// Closing a subscription before its EOSE settles it as pending and records
// it once (it used to vanish from the report).
func TestCloseBeforeEOSESettlesPendingAndRecordsIt(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(*fakeConn, string, []json.RawMessage) {}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	sub, err := c.Subscribe([]Filter{{Kinds: []int{9}}}, SubOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.Close()
	_ = sub.Close() // idempotent: still one record
	r, err := sub.Wait(context.Background())
	if err == nil || r.Outcome != OutcomePending {
		t.Fatalf("%v %+v", err, r)
	}
	c.Close()
	<-c.Done()
	got := sink.Op(OpSubscribeEOSE)
	if len(got) != 1 || got[0].Outcome != OutcomePending || got[0].Error != "closed before EOSE" {
		t.Fatalf("recorded %+v, want one pending 'closed before EOSE'", got)
	}
}

// Forget settles like Close but sends no CLOSE (the connection closes next).
func TestForgetSettlesWithoutACloseFrame(t *testing.T) {
	var mu sync.Mutex
	var verbs []string
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(_ *fakeConn, verb string, _ []json.RawMessage) {
			mu.Lock()
			verbs = append(verbs, verb)
			mu.Unlock()
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	sub, err := c.Subscribe([]Filter{{Kinds: []int{9}}}, SubOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub.Forget()
	sub.Forget()
	_ = sub.Close() // already ended: no CLOSE either
	// A second subscription's CLOSE marks when the frames before it have arrived.
	other, err := c.Subscribe([]Filter{{Kinds: []int{1}}}, SubOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = other.Close()
	waitFor(t, "the second CLOSE", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(verbs) > 0 && verbs[len(verbs)-1] == "CLOSE"
	})
	c.Close()
	<-c.Done()
	mu.Lock()
	n := 0
	for _, v := range verbs {
		if v == "CLOSE" {
			n++
		}
	}
	mu.Unlock()
	if n != 1 {
		t.Errorf("relay got %d CLOSEs (%v), want only the second subscription's", n, verbs)
	}
	got := sink.Op(OpSubscribeEOSE)
	if len(got) != 2 || got[0].Outcome != OutcomePending || got[0].Error != "closed before EOSE" {
		t.Fatalf("recorded %+v, want two pending 'closed before EOSE'", got)
	}
}

func TestEOSETimeout(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(*fakeConn, string, []json.RawMessage) {}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	_, r, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{EOSETimeout: 60 * time.Millisecond})
	if err == nil || r.Outcome != OutcomeError || !strings.Contains(r.Error, "no EOSE within") {
		t.Fatalf("%v %+v", err, r)
	}
	if sink.Count(OpSubscribeEOSE, OutcomeError) != 1 {
		t.Fatalf("%+v", sink.Results())
	}
}

func TestCountOverWebSocket(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
			if verb != "COUNT" {
				return
			}
			if strings.Contains(string(raw[2]), "30300") {
				c.sendf(`["CLOSED",%q,"restricted: count filter requires narrower constraints"]`, subID(raw))
				return
			}
			c.sendf(`["COUNT",%q,{"count":123}]`, subID(raw))
		}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	n, r := c.Count(context.Background(), []Filter{{Kinds: []int{9}}}, CountOptions{})
	if n != 123 || r.Outcome != OutcomeOK || r.Op != OpCount {
		t.Fatalf("%d %+v", n, r)
	}
	_, r = c.Count(context.Background(), []Filter{{Kinds: []int{30300}}}, CountOptions{Op: "turn_context"})
	if r.Outcome != OutcomeError || !strings.Contains(r.Error, "narrower constraints") || r.Op != "turn_context" {
		t.Fatalf("%+v", r)
	}
}

// Events go to the subscription their id names, interleaved on one
// socket, and never to one the relay CLOSED, even the one the previous
// event went to (the reader caches it); a new subscription reusing the id
// gets the events from then on. Mutant "keep the cached subscription
// after CLOSED" delivers to the closed one.
func TestEventsFollowTheirSubscriptionAcrossCloseAndReuse(t *testing.T) {
	k := testKeys(t, 2)
	ev := signed(t, k, "x")
	reqs := make(chan *fakeConn, 4)
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
			if verb == "REQ" {
				c.sendf(`["EOSE",%q]`, subID(raw))
				reqs <- c
			}
		}
	})
	c := connect(t, fr, &CollectSink{}, nil)
	var mu sync.Mutex
	got := map[string]int{}
	count := func(name string) func(*nostr.EventView, time.Time, bool) {
		return func(v *nostr.EventView, _ time.Time, _ bool) {
			if v.IDString() != ev.ID {
				t.Errorf("%s got event %s", name, v.IDString())
			}
			mu.Lock()
			got[name]++
			mu.Unlock()
		}
	}
	seen := func(name string) int { mu.Lock(); defer mu.Unlock(); return got[name] }
	closed := make(chan struct{})
	if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}},
		SubOptions{ID: "a", OnEventView: count("a1"), OnClosed: func(string, time.Time) { close(closed) }}); err != nil {
		t.Fatal(err)
	}
	fc := <-reqs
	if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{ID: "b", OnEventView: count("b")}); err != nil {
		t.Fatal(err)
	}
	<-reqs
	frame := func(sub string) string { return fmt.Sprintf(`["EVENT",%q,%s]`, sub, ev.AppendJSON(nil)) }
	for _, sub := range []string{"a", "a", "b", "a", "b", "b"} {
		fc.send(frame(sub))
	}
	waitFor(t, "six events", func() bool { return seen("a1") == 3 && seen("b") == 3 })
	fc.send(frame("a"))
	fc.send(`["CLOSED","a","error: shutting down"]`)
	<-closed
	fc.send(frame("a")) // no subscription "a" now: a bad frame
	waitFor(t, "the bad frame", func() bool { return c.Stats().BadFrames == 1 })
	if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{ID: "a", OnEventView: count("a2")}); err != nil {
		t.Fatal(err)
	}
	<-reqs
	fc.send(frame("a"))
	fc.send(frame("b"))
	waitFor(t, "the reused id's event", func() bool { return seen("a2") == 1 && seen("b") == 4 })
	if seen("a1") != 4 || c.Stats().BadFrames != 1 {
		t.Fatalf("closed subscription got %d events (want 4), %d bad frames", seen("a1"), c.Stats().BadFrames)
	}
}
