package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
)

func connect(t *testing.T, fr *fakeRelay, sink Sink, mod func(*Config)) *Conn {
	t.Helper()
	cfg := Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1), Sink: sink}
	if mod != nil {
		mod(&cfg)
	}
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close(); <-c.Done() })
	return c
}

func TestConnectAuthenticatesAndRecordsBothOps(t *testing.T) {
	fr := newFakeRelay(t, nil)
	sink := &CollectSink{}
	c := connect(t, fr, sink, nil)
	if !c.Authenticated() {
		t.Fatal("not authenticated")
	}
	if got := sink.Count(OpConnect, OutcomeOK); got != 1 {
		t.Fatalf("connect ok = %d, want 1 (%+v)", got, sink.Results())
	}
	if got := sink.Count(OpAuth, OutcomeOK); got != 1 {
		t.Fatalf("auth ok = %d, want 1 (%+v)", got, sink.Results())
	}
	fr.mu.Lock()
	ev := fr.authEvents[0]
	fr.mu.Unlock()
	if ev.Kind != 22242 || ev.TagValue("challenge") != testChallenge || ev.TagValue("relay") != fr.wsURL() {
		t.Fatalf("auth event tags %v", ev.Tags)
	}
	if c.RelayURL() != fr.wsURL() {
		t.Fatalf("RelayURL %q", c.RelayURL())
	}
}

func TestConnectAddrDialsPlaintextButClaimsPublicURL(t *testing.T) {
	// The relay believes it is wss://c1.buzz.test (RELAY_URL is wss://…);
	// we reach it at its plaintext address with the community Host header.
	fr := newFakeRelay(t, func(fr *fakeRelay) { fr.scheme = "wss" })
	sink := &CollectSink{}
	c := connect(t, fr, sink, func(cfg *Config) {
		cfg.Target = Target{WSURL: "wss://relay.example.org", Host: "c1.buzz.test", ConnectAddr: fr.addr()}
	})
	fr.mu.Lock()
	host, ev := fr.hosts[0], fr.authEvents[0]
	fr.mu.Unlock()
	if host != "c1.buzz.test" {
		t.Fatalf("Host header %q, want c1.buzz.test", host)
	}
	if got := ev.TagValue("relay"); got != "wss://c1.buzz.test" {
		t.Fatalf("relay tag %q, want wss://c1.buzz.test", got)
	}
	if !c.Authenticated() || sink.Count(OpAuth, OutcomeOK) != 1 {
		t.Fatalf("auth not ok: %+v", sink.Results())
	}
}

func TestConnectWithHostOnlyReplacesTheURLHost(t *testing.T) {
	ep, err := Target{WSURL: "wss://relay.example.org/", Host: "c2.example.org"}.ws()
	if err != nil {
		t.Fatal(err)
	}
	if ep.dialURL != "wss://c2.example.org/" || ep.relayURL != "wss://c2.example.org" || ep.host != "" {
		t.Fatalf("%+v", ep)
	}
	// connect_addr without a community host has no effect (buzz-loadgen).
	ep, _ = Target{WSURL: "ws://127.0.0.1:3000", ConnectAddr: "127.0.0.1:9"}.ws()
	if ep.dialURL != "ws://127.0.0.1:3000/" || ep.relayURL != "ws://127.0.0.1:3000" {
		t.Fatalf("%+v", ep)
	}
	for _, bad := range []Target{
		{WSURL: "http://x"},
		{WSURL: "ws://x", Host: "a/b"},
		{WSURL: "ws://x", Host: "h", ConnectAddr: "nocolon"},
	} {
		if _, err := bad.ws(); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func TestAuthWithNIPOATag(t *testing.T) {
	fr := newFakeRelay(t, nil)
	tag := []string{"auth", testKeys(t, 9).PubKey(), "kind=9", strings.Repeat("ab", 64)}
	connect(t, fr, nil, func(cfg *Config) { cfg.OATag = tag })
	fr.mu.Lock()
	ev := fr.authEvents[0]
	fr.mu.Unlock()
	got := ev.Tag("auth")
	if len(got) != 4 || got[1] != tag[1] || got[2] != "kind=9" {
		t.Fatalf("auth tag %v", got)
	}
}

func TestAuthRejectionIsAnErrorAndClosesTheConnection(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   Outcome
	}{
		{"auth-required: verification failed", OutcomeError},
		{"blocked: you are banned from this community", OutcomeError},
		{"rate-limited: quota exceeded; retry in 4s", OutcomeThrottled},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			fr := newFakeRelay(t, func(fr *fakeRelay) {
				fr.authReply = func(*nostr.Event, error) (bool, string) { return false, tc.reason }
			})
			sink := &CollectSink{}
			_, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1), Sink: sink})
			var oe *OpError
			if !errors.As(err, &oe) || oe.Result.Op != OpAuth || oe.Result.Outcome != tc.want {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(oe.Result.Error, tc.reason) {
				t.Fatalf("error %q does not quote %q", oe.Result.Error, tc.reason)
			}
			if sink.Count(OpAuth, tc.want) != 1 || sink.Count(OpConnect, OutcomeOK) != 1 {
				t.Fatalf("%+v", sink.Results())
			}
		})
	}
}

func TestConnectTimeoutWithoutChallenge(t *testing.T) {
	fr := newFakeRelay(t, func(fr *fakeRelay) { fr.noChallenge = true })
	sink := &CollectSink{}
	start := time.Now()
	_, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1),
		Sink: sink, ConnectTimeout: 150 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no AUTH challenge") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
	if sink.Count(OpAuth, OutcomeError) != 1 {
		t.Fatalf("%+v", sink.Results())
	}
}

func TestUpgradeRefusals(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   Outcome
		retry  time.Duration
	}{
		{404, "relay: no community is configured for this host", OutcomeError, 0},
		{503, "relay restarting", OutcomeError, 0},
		{429, `{"error":"rate-limited: quota exceeded; retry in 7s"}`, OutcomeThrottled, 7 * time.Second},
	} {
		fr := newFakeRelay(t, func(fr *fakeRelay) {
			fr.onUpgrade = func(*http.Request) (int, string) { return tc.status, tc.body }
		})
		sink := &CollectSink{}
		_, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: testKeys(t, 1), Sink: sink})
		var oe *OpError
		if !errors.As(err, &oe) || oe.Result.Op != OpConnect || oe.Result.Outcome != tc.want || oe.Result.RetryAfter != tc.retry {
			t.Fatalf("%d: err = %v (%+v)", tc.status, err, oe)
		}
		if !strings.Contains(oe.Result.Error, fmt.Sprint(tc.status)) || !strings.Contains(oe.Result.Error, strings.Fields(tc.body)[1]) {
			t.Fatalf("%d: error %q should name the status and quote the body", tc.status, oe.Result.Error)
		}
		if len(sink.Op(OpAuth)) != 0 {
			t.Fatalf("auth recorded after a refused upgrade")
		}
	}
}

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
		{"rate-limited: too many concurrent requests", OutcomeError, 0},
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

func TestBadFramesAreCountedNotFatal(t *testing.T) {
	k := testKeys(t, 3)
	good := signed(t, k, "ok")
	badShape := strings.Replace(string(good.AppendJSON(nil)), good.ID, "zz", 1)
	frames := []struct{ frame, quoteMust string }{
		{`not json at all`, "not json"},
		{`["EVENT","s1",{"id":`, "truncated"},
		{`["FOO","x"]`, `unknown verb "FOO"`},
		{`{"verb":"OK"}`, "not a JSON array"},
		{`["OK","` + strings.Repeat("ab", 32) + `",true,""]`, "no publish in flight"},
		{`["EVENT","nosuchsub",` + string(good.AppendJSON(nil)) + `]`, "not open"},
		{`["EVENT","s1",` + badShape + `]`, "64 hex"},
		{`["EOSE","nosuchsub"]`, "not open"},
		{`["COUNT","nosuchcount",{"count":1}]`, "no COUNT in flight"},
		{`["CLOSED","nosuchsub","error: what"]`, "not open"},
		{`["NOTICE"]`, "missing element"},
		{`["OK","x","yes",""]`, "true or false"},
		{`["EVENT","s1",` + string(good.AppendJSON(nil)) + `] trailing`, "after the frame"},
		{strings.Repeat("x", 3000), "frame too large"},
	}
	fr := newFakeRelay(t, nil)
	sink := &CollectSink{}
	c := connect(t, fr, sink, func(cfg *Config) { cfg.MaxFrameBytes = 2048 })
	for _, f := range frames {
		fr.conn(0).send(f.frame)
	}
	waitFor(t, "all bad frames", func() bool { return c.Stats().BadFrames == int64(len(frames)) })
	bad := sink.Op(OpBadFrame)
	if len(bad) != len(frames) {
		t.Fatalf("%d bad_frame results", len(bad))
	}
	for i, r := range bad {
		if r.Outcome != OutcomeError || !strings.Contains(r.Error, frames[i].quoteMust) {
			t.Errorf("frame %d: %q does not contain %q", i, r.Error, frames[i].quoteMust)
		}
		if len(r.Error) > 600 {
			t.Errorf("frame %d: error not trimmed (%d bytes)", i, len(r.Error))
		}
	}
	if !strings.Contains(bad[0].Error, `"not json at all"`) {
		t.Errorf("the error should quote what arrived: %q", bad[0].Error)
	}
	// Still usable.
	if r := c.Publish(context.Background(), signed(t, k, "after"), PublishOptions{}); r.Outcome != OutcomeOK {
		t.Fatalf("connection unusable after bad frames: %+v", r)
	}
}

// After a mix of everything (ok, relay drop, our close, subscriptions,
// timeouts, HTTP), no goroutine of ours is left behind.
func TestNoGoroutineLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	func() {
		fr := newFakeRelay(t, func(fr *fakeRelay) {
			fr.onFrame = func(c *fakeConn, verb string, raw []json.RawMessage) {
				switch verb {
				case "EVENT":
					c.sendf(`["OK",%q,true,""]`, eventID(raw))
				case "REQ":
					c.sendf(`["EOSE",%q]`, subID(raw))
				case "COUNT":
					c.sendf(`["COUNT",%q,{"count":1}]`, subID(raw))
				}
			}
		})
		defer fr.close()
		fh := newFakeHTTP(t, "http", func(w http.ResponseWriter, r *http.Request, body []byte) { _, _ = w.Write([]byte(`[]`)) })
		defer fh.srv.Close()
		tr, err := NewTransport(TransportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.CloseIdleConnections()
		h := newHTTPClient(t, HTTPConfig{Target: Target{HTTPURL: fh.srv.URL}, Transport: tr})
		k := testKeys(t, 1)
		var conns []*Conn
		for i := 0; i < 10; i++ {
			c, err := Connect(context.Background(), Config{Target: Target{WSURL: fr.wsURL()}, Keys: k})
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			if _, _, err := c.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{9}}}, SubOptions{}); err != nil {
				t.Fatal(err)
			}
			// One subscription left waiting on a long EOSE timer, one publish
			// left in flight: both must be settled by the close.
			_, _ = c.Subscribe([]Filter{{Kinds: []int{1}}}, SubOptions{ID: "pending", EOSETimeout: time.Hour})
			if r := c.Publish(context.Background(), signed(t, k, fmt.Sprint(i)), PublishOptions{}); r.Outcome != OutcomeOK {
				t.Fatalf("%+v", r)
			}
			if _, r := c.Count(context.Background(), []Filter{{Kinds: []int{9}}}, CountOptions{}); r.Outcome != OutcomeOK {
				t.Fatalf("%+v", r)
			}
			if _, r := h.Query(context.Background(), nil, CallOptions{}); r.Outcome != OutcomeOK {
				t.Fatalf("%+v", r)
			}
		}
		for i, c := range conns {
			if i%2 == 0 {
				c.Close()
			} else {
				_ = fr.conn(i).ws.Close() // the relay drops it
			}
		}
		for _, c := range conns {
			<-c.Done()
		}
		// A failed dial leaves nothing either.
		_, _ = Connect(context.Background(), Config{Target: Target{WSURL: "ws://127.0.0.1:1"}, Keys: k})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines, started with %d:\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLocalAddrBindsTheSourceAddress(t *testing.T) {
	fr := newFakeRelay(t, nil)
	connect(t, fr, nil, func(cfg *Config) { cfg.Target.LocalAddr = "127.0.0.2" })
	fr.mu.Lock()
	remote := fr.remotes[0]
	fr.mu.Unlock()
	if !strings.HasPrefix(remote, "127.0.0.2:") {
		t.Fatalf("remote address %s, want 127.0.0.2:*", remote)
	}
	if _, err := Dial(context.Background(), Config{Target: Target{WSURL: fr.wsURL(), LocalAddr: "not-an-ip"}}); err == nil {
		t.Fatal("bad local address accepted")
	}
}

func TestReadIdleTimeout(t *testing.T) {
	// Silent relay: the connection ends as lost, and in-flight work errors.
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onFrame = func(*fakeConn, string, []json.RawMessage) {}
	})
	sink := &CollectSink{}
	c := connect(t, fr, sink, func(cfg *Config) { cfg.ReadIdleTimeout = 150 * time.Millisecond })
	done := make(chan Result, 1)
	_ = c.PublishAsync(signed(t, testKeys(t, 1), "x"), PublishOptions{}, func(r Result) { done <- r })
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("idle connection not ended")
	}
	if c.Err() == nil || !strings.Contains(c.Err().Error(), "no frame or ping") {
		t.Fatalf("Err = %v", c.Err())
	}
	if r := <-done; r.Outcome != OutcomeError {
		t.Fatalf("%+v", r)
	}

	// Pings keep it alive.
	fr2 := newFakeRelay(t, nil)
	c2 := connect(t, fr2, nil, func(cfg *Config) { cfg.ReadIdleTimeout = 400 * time.Millisecond })
	srv := fr2.conn(0)
	stop := make(chan struct{})
	go func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				_ = srv.ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second))
			}
		}
	}()
	defer close(stop)
	time.Sleep(800 * time.Millisecond)
	if c2.Err() != nil {
		t.Fatalf("pinged connection ended: %v", c2.Err())
	}
	select {
	case <-c2.Done():
		t.Fatal("pinged connection ended")
	default:
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

// Compression is never negotiated (permessage-deflate costs ~830 KiB
// per connection). The client must not even offer it in the upgrade request.
func TestUpgradeNeverOffersCompression(t *testing.T) {
	var mu sync.Mutex
	var offered []string
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onUpgrade = func(r *http.Request) (int, string) {
			mu.Lock()
			offered = append(offered, r.Header.Values("Sec-WebSocket-Extensions")...)
			mu.Unlock()
			return 0, ""
		}
	})
	c := connect(t, fr, &CollectSink{}, nil)
	if !c.Authenticated() {
		t.Fatal("not authenticated")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(offered) != 0 {
		t.Fatalf("the upgrade offered extensions %q; compression must never be negotiated", offered)
	}
}
