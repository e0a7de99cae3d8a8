package models

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// slow bounds every wait in these tests: generous, so a loaded 2-core
// machine does not fail them; on an idle one they end in about a second.
const slow = 20 * time.Second

// runUntil runs each client (global index → its sink) with Run until cond
// holds (checked every 10 ms), then stops them and waits for them to end.
// It fails the test when cond does not hold within slow or a client exits.
func runUntil(t *testing.T, sc *scenario.Scenario, clients map[int]relayclient.Sink, what string, cond func() bool) {
	t.Helper()
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for g, sink := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Run(stop, nil, Config{Scenario: sc, Global: g, Sink: sink}); err != nil {
				t.Errorf("client %d: %v", g, err)
			}
		}()
	}
	held := waitfor.Within(slow, cond)
	cancel()
	wg.Wait()
	if !held {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestHumansDeliverBetweenEachOtherInOneChannel(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Human = scenario.Human{HistoryLimit: 5, ThreadReplyFraction: 0.5, PresenceIntervalSecs: 1,
			TypingPerHour: 7200, MessagesPerHour: 14400, ReactionsPerHour: 7200}
	})
	sd := newSeeder(t, sc, sc.OwnerKeys(0))
	sd.channels()
	ch := sc.Channels()[0]
	root, _ := sd.thread(ch, scenario.ThreadRootContent(sc.RunID, ch, 0), 2)

	sink, s0, s1 := &collect{}, &collect{}, &collect{}
	tee := func(own *collect) relayclient.Sink {
		return relayclient.SinkFunc(func(r relayclient.Result) { own.Record(r); sink.Record(r) })
	}
	h0, h1 := sc.GlobalIndex(scenario.KindHuman, 0), sc.GlobalIndex(scenario.KindHuman, 1)
	q, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: sc.OwnerKeys(0)})
	if err != nil {
		t.Fatal(err)
	}
	stored := func(f relayclient.Filter) []nostr.Event {
		evs, _ := q.Query(context.Background(), []relayclient.Filter{f}, relayclient.CallOptions{})
		return evs
	}
	// Each human records delivery of more messages than it sent itself:
	// the other's reach it.
	othersReach := func(g int, own *collect) bool {
		mine := stored(relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Authors: []string{sc.Keys(g).PubKey()}})
		return own.ok(OpDeliver) > len(mine)+1
	}
	threadReplies := func() int {
		n := 0
		for _, e := range stored(relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"e": {root.ID}}}) {
			if _, timed := scenario.SentAt(&e); timed {
				n++
			}
		}
		return n
	}
	runUntil(t, sc, map[int]relayclient.Sink{h0: tee(s0), h1: tee(s1)}, "deliveries both ways, thread replies and reactions", func() bool {
		return sink.ok(relayclient.OpPublish) >= 10 && othersReach(h0, s0) && othersReach(h1, s1) && threadReplies() > 0 &&
			len(stored(relayclient.Filter{Kinds: []int{nostr.KindReaction}})) > 0
	})

	sink.noErrors(t)
	for _, op := range []string{relayclient.OpConnect, relayclient.OpAuth} {
		if n := sink.ok(op); n != 2 {
			t.Errorf("%s ok: %d, want 2 (one per human)", op, n)
		}
	}
	// Per human: one channel REQ, one mentions REQ, one presence REQ (its peer).
	if n := sink.ok(relayclient.OpSubscribeEOSE); n != 6 {
		t.Errorf("subscribe_eose ok: %d, want 6", n)
	}
	if n := sink.ok(OpHistory); n < 2 {
		t.Errorf("history ok: %d, want at least 2", n)
	}
	for _, d := range sink.Op(OpDeliver) {
		if d.Duration < 0 || d.Duration > slow {
			t.Errorf("deliver latency %v on loopback", d.Duration)
		}
	}
	// Replies went into the seeded thread at its first level.
	for _, e := range stored(relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Authors: []string{sc.Keys(h0).PubKey(), sc.Keys(h1).PubKey()}}) {
		if r := threadRoot(&e); r != "" && r != root.ID {
			t.Errorf("reply %s is under %s, not the seeded root", e.ID, r)
		}
	}
}

func TestHumanReconnectChurn(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans = 1
		sc.Human = scenario.Human{HistoryLimit: 5, PresenceIntervalSecs: 1, MessagesPerHour: 3600, MeanSessionSecs: 0.2}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	sink := &collect{}
	c, err := New(Config{Scenario: sc, Global: 0, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(slow)
	ends := 0
	for ends < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d session ends within %v", ends, slow)
		}
		end := c.Session(context.Background(), nil)
		if end.Reason != EndSession {
			t.Fatalf("session %d ended %v, want its scheduled end", ends, end)
		}
		ends++
	}
	sink.noErrors(t)
	// Each session connects, subscribes and reads history anew.
	for _, op := range []string{relayclient.OpConnect, relayclient.OpAuth, OpHistory} {
		if n := sink.ok(op); n != ends {
			t.Errorf("%s ok %d, want one per session (%d)", op, n, ends)
		}
	}
}

func TestHotAuthorFailsThreadFetchUntilRootExists(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans = 0
		sc.HotThread = scenario.HotThread{SeedReplies: 1, Authors: 1, RepliesPerHour: 36000, FetchesPerHour: 36000}
	})
	sd := newSeeder(t, sc, sc.OwnerKeys(0))
	sd.channels()
	sink := &collect{}
	g := sc.GlobalIndex(scenario.KindHotAuthor, 0)
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(stop, nil, Config{Scenario: sc, Global: g, Sink: sink}) }()

	waitFor(t, slow, "thread_fetch errors before the root exists", func() bool { return sink.errs(OpThreadFetch) >= 3 })
	if n := sink.ok(OpHotReply) + sink.errs(OpHotReply) + sink.ok(OpThreadFetch); n != 0 {
		t.Fatalf("%d replies or fetches before the root exists", n)
	}
	if e := sink.errorsOf(OpThreadFetch)[0]; !strings.Contains(e, "no seeded hot-thread root") {
		t.Errorf("error %q does not say the root is missing", e)
	}
	hc := sc.HotThreadChannel()
	root, _ := sd.thread(hc, scenario.HotRootContent(sc.RunID), 1)
	waitFor(t, slow, "replies and fetches after the root exists", func() bool {
		return sink.ok(OpHotReply) >= 2 && sink.ok(OpThreadFetch) >= 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	q, _ := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: sc.OwnerKeys(0)})
	evs, _ := q.Query(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
		Authors: []string{sc.Keys(g).PubKey()}}}, relayclient.CallOptions{})
	for i := range evs {
		if threadRoot(&evs[i]) != root.ID {
			t.Errorf("hot reply %s not under the hot root", evs[i].ID)
		}
		if _, ok := scenario.SentAt(&evs[i]); !ok {
			t.Errorf("hot reply %s carries no send time", evs[i].ID)
		}
	}
	if len(evs) == 0 {
		t.Error("no hot reply stored")
	}
}

func TestQuotaRejectionsAreThrottledNotErrors(t *testing.T) {
	r := startRelay(t, func(c *relay.Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 2
		c.HumanAPICallsPerMin = 3
	})
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans, sc.Population.Agents = 1, 1
		sc.Human = scenario.Human{PresenceIntervalSecs: 3600, MessagesPerHour: 36000}
		sc.Agent = scenario.Agent{QueryIntervalSecs: 0.05, Turn: scenario.AgentTurn{MeanSecs: 1, TypingSecs: 1, FrameSecs: 1, FrameBytes: 64}}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	sink := &collect{}
	runUntil(t, sc, map[int]relayclient.Sink{sc.GlobalIndex(scenario.KindHuman, 0): sink, sc.GlobalIndex(scenario.KindAgent, 0): sink},
		"throttled publishes and polls", func() bool {
			return sink.throt(relayclient.OpPublish) > 0 && sink.throt(relayclient.OpHTTPQuery) > 0
		})
	sink.noErrors(t)
	if n := sink.ok(relayclient.OpPublish); n < 2 {
		t.Errorf("publish ok %d, want the 2 within quota (and presence)", n)
	}
	for _, res := range sink.Op(relayclient.OpHTTPQuery) {
		if res.Outcome == relayclient.OutcomeThrottled && res.RetryAfter <= 0 {
			t.Errorf("throttled poll without a retry hint: %s", res.Error)
		}
	}
}

func TestRelayClosedOnLiveSubscriptionEndsSession(t *testing.T) {
	p := newClosingProxy(t)
	r := startRelay(t, func(c *relay.Config) { c.Communities = []string{p.host()} })
	p.serve(r.Addr())
	base := p.host()
	sc := testScenario(t, "ws://"+base, "http://"+base, func(sc *scenario.Scenario) {
		sc.Population.Humans = 1
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	sink := &collect{}
	c, err := New(Config{Scenario: sc, Global: sc.GlobalIndex(scenario.KindHuman, 0), Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan End, 1)
	go func() { ended <- c.Session(context.Background(), nil) }()
	waitFor(t, slow, "the subscriptions' EOSE", func() bool { return sink.ok(relayclient.OpSubscribeEOSE) >= 2 })
	if !p.closeFirstSub("restricted: not a channel member") {
		t.Fatal("the client opened no subscription through the proxy")
	}
	var end End
	select {
	case end = <-ended:
	case <-time.After(slow):
		t.Fatal("the session did not end after the relay CLOSED a live subscription")
	}
	if end.Reason != EndFailed || end.Unexpected() || !strings.Contains(end.Err.Error(), "not a channel member") {
		t.Fatalf("end %v, want failed (not an exit) naming the reason", end)
	}
	errs := sink.errorsOf(relayclient.OpSubscribeEOSE)
	if len(errs) != 1 || !strings.Contains(errs[0], "CLOSED after EOSE") {
		t.Fatalf("subscribe_eose errors %q, want the one live CLOSED", errs)
	}
	// The next session backs off, then reconnects.
	if c.bo.failures != 1 {
		t.Errorf("failures %d after a failed session, want 1", c.bo.failures)
	}
}

func TestStopLetsInFlightFinishWithinGrace(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans, sc.Population.Agents = 0, 1
		sc.Agent = scenario.Agent{QueryIntervalSecs: 100, Turn: scenario.AgentTurn{MeanSecs: 1, TypingSecs: 1, FrameSecs: 1, FrameBytes: 64}}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	g := sc.GlobalIndex(scenario.KindAgent, 0)

	r.Faults().SetHTTPLatency(500 * time.Millisecond)
	// session starts one session and returns once its first HTTP request is
	// on the wire (seen by the transport), so the stop lands mid-request.
	session := func(t *testing.T, sink relayclient.Sink, stop, grace context.Context) <-chan End {
		sent := make(chan struct{})
		var once sync.Once
		c, err := New(Config{Scenario: sc, Global: g, Sink: sink, Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			once.Do(func() { close(sent) })
			return http.DefaultTransport.RoundTrip(req)
		})})
		if err != nil {
			t.Fatal(err)
		}
		ended := make(chan End, 1)
		go func() { ended <- c.Session(stop, grace) }()
		select {
		case <-sent:
		case <-time.After(slow):
			t.Fatal("the agent sent no request")
		}
		return ended
	}
	t.Run("finishes within the grace", func(t *testing.T) {
		sink := &collect{}
		stop, cancel := context.WithCancel(context.Background())
		ended := session(t, sink, stop, context.Background())
		cancel()
		if end := <-ended; end.Reason != EndStopped {
			t.Fatalf("end %v, want stopped", end)
		}
		if n := sink.ok(relayclient.OpHTTPQuery); n != 1 {
			t.Errorf("http_query ok %d, want the poll under way at the stop to finish", n)
		}
		sink.noErrors(t)
	})
	t.Run("unfinished when the grace ends", func(t *testing.T) {
		sink := &collect{}
		stop, cancel := context.WithCancel(context.Background())
		// The grace runs out (its deadline passes), as the runner's does.
		grace, cancelGrace := context.WithDeadline(context.Background(), time.Now().Add(50*time.Millisecond))
		defer cancelGrace()
		ended := session(t, sink, stop, grace)
		cancel()
		end := <-ended
		if end.Reason != EndCancelled || !end.Unexpected() {
			t.Fatalf("end %v, want cancelled (an unexpected exit)", end)
		}
		errs := sink.errorsOf(relayclient.OpHTTPQuery)
		if len(errs) != 1 || !strings.HasPrefix(errs[0], "unfinished at stop") {
			t.Fatalf("http_query errors %q, want one unfinished at stop", errs)
		}
	})
	// Issue 10: an abort cancels the grace (the runner cancels it; it does
	// not run out). What was in flight is cut by the abort: pending, not an
	// error, and the client is interrupted, not cancelled.
	t.Run("cut by an abort", func(t *testing.T) {
		sink := &collect{}
		stop, cancel := context.WithCancel(context.Background())
		grace, abort := context.WithCancel(context.Background())
		ended := session(t, sink, stop, grace)
		cancel()
		abort()
		end := <-ended
		if end.Reason != EndInterrupted || end.Unexpected() {
			t.Fatalf("end %v, want interrupted (not an unexpected exit)", end)
		}
		if errs := sink.errorsOf(relayclient.OpHTTPQuery); len(errs) != 0 {
			t.Fatalf("http_query errors %q: an abort's cut is not an error", errs)
		}
		var cut int
		for _, r := range sink.Results() {
			if r.Op == relayclient.OpHTTPQuery && r.Outcome == relayclient.OutcomePending && strings.HasPrefix(r.Error, CutByAbort) {
				cut++
			}
		}
		if cut != 1 {
			t.Fatalf("%d http_query cut by the abort, want the one in flight: %+v", cut, sink.Results())
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestConnectFailureIsFailedSessionWithBackoff(t *testing.T) {
	sc := testScenario(t, "ws://127.0.0.1:1", "http://127.0.0.1:1", func(sc *scenario.Scenario) { sc.Population.Humans = 1 })
	sink := &collect{}
	c, err := New(Config{Scenario: sc, Global: 0, Sink: sink, Backoff: Backoff{Base: 300 * time.Millisecond, Max: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	end := c.Session(context.Background(), nil)
	if end.Reason != EndFailed || end.Unexpected() {
		t.Fatalf("end %v, want failed", end)
	}
	if sink.errs(relayclient.OpConnect) != 1 {
		t.Fatalf("connect errors %d, want 1", sink.errs(relayclient.OpConnect))
	}
	// A stop during the backoff ends the next session without dialling.
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	if end := c.Session(stop, nil); end.Reason != EndStopped || sink.errs(relayclient.OpConnect) != 1 {
		t.Fatalf("end %v with %d connect errors, want stopped without a dial", end, sink.errs(relayclient.OpConnect))
	}
	// A relay's retry hint is a floor on the next wait, used once.
	b := backoffState{cfg: Backoff{Base: time.Millisecond, Max: time.Millisecond}.withDefaults(), failures: 1, atLeast: 80 * time.Millisecond}
	t0 := time.Now()
	if !b.wait(context.Background(), NewRand("x", 1)) || time.Since(t0) < 80*time.Millisecond {
		t.Errorf("waited %v, want at least the 80ms retry hint", time.Since(t0))
	}
	if b.atLeast != 0 {
		t.Error("the retry hint was not consumed")
	}
	if d := (Backoff{}).Delay(3); d != 2*time.Second {
		t.Errorf("default backoff ceiling after 3 failures %v, want 2s", d)
	}
	if d := (Backoff{Base: time.Second, Max: 5 * time.Second}).Delay(10); d != 5*time.Second {
		t.Errorf("capped backoff %v, want 5s", d)
	}
}

func TestNewRefusesWhatItCannotRun(t *testing.T) {
	sc := testScenario(t, "ws://127.0.0.1:1", "http://127.0.0.1:1", func(sc *scenario.Scenario) {
		sc.Desktop.Fraction = 1
	})
	if _, err := New(Config{Scenario: sc, Global: 0}); err == nil || !strings.Contains(err.Error(), "desktop") {
		t.Errorf("desktop human: %v", err)
	}
	if _, err := New(Config{Scenario: sc, Global: -1}); err == nil {
		t.Error("an index beyond the population was accepted")
	}
	if err := Run(context.Background(), nil, Config{Scenario: sc, Global: 0}); err == nil {
		t.Error("Run of a desktop human returned nil")
	} else if ee := (*ExitError)(nil); !errors.As(err, &ee) || !ee.End.Unexpected() {
		t.Errorf("Run error %v is not an unexpected exit", err)
	}
}

func TestWideActivityShareAgainstRelay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		share float64
		wide  bool // where every message and typing indicator must land
	}{
		{"share 1 sends everything into the wide channel", 1, true},
		{"share 0 sends everything into the own channel", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRelay(t, nil)
			u := r.URLs()
			sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
				sc.Population.Humans = 1
				sc.Shape.ChannelsPerCommunity, sc.Shape.WideChannels = 2, 1
				sc.Population.WideMemberFraction = 1
				share := tc.share
				sc.Population.WideActivityShare = &share
				sc.Human = scenario.Human{PresenceIntervalSecs: 3600, TypingPerHour: 36000, MessagesPerHour: 36000}
			})
			sd := newSeeder(t, sc, sc.OwnerKeys(0))
			sd.channels()
			var mu sync.Mutex
			landed := map[string][2]int{} // channel id → typing, messages
			for _, ch := range sc.Channels() {
				id := sc.ChannelID(ch)
				if _, _, err := sd.conn.SubscribeEOSE(context.Background(), []relayclient.Filter{
					{Kinds: []int{nostr.KindTyping, nostr.KindStreamMessage}, Tags: map[string][]string{"h": {id}}, LimitZero: true}},
					relayclient.SubOptions{OnEvent: func(ev *nostr.Event, _ time.Time, _ bool) {
						mu.Lock()
						n := landed[id]
						if ev.Kind == nostr.KindTyping {
							n[0]++
						} else {
							n[1]++
						}
						landed[id] = n
						mu.Unlock()
					}}); err != nil {
					t.Fatal(err)
				}
			}
			wideID := sc.ChannelID(scenario.Channel{Community: 0, Index: 0})
			total := func() (n int) {
				mu.Lock()
				defer mu.Unlock()
				for _, c := range landed {
					n += c[0] + c[1]
				}
				return n
			}
			sink := &collect{}
			runUntil(t, sc, map[int]relayclient.Sink{0: sink}, "20 typing indicators and messages", func() bool { return total() >= 20 })
			sink.noErrors(t)
			mu.Lock()
			defer mu.Unlock()
			for id, n := range landed {
				if (id == wideID) != tc.wide && n[0]+n[1] > 0 {
					t.Errorf("channel %s (wide %v) got %d typing and %d messages", id, id == wideID, n[0], n[1])
				}
			}
		})
	}
}

// A live subscription the relay CLOSEs with "rate-limited: …" is a throttle:
// the human subscribes again after the hint and the session goes on (the
// old code failed the session and reconnected into the same burst).
func TestThrottledLiveSubscriptionIsRetriedNotAFailedSession(t *testing.T) {
	r := startRelay(t, func(c *relay.Config) {
		c.RateLimit = true
		c.WSFramesPerWindow = 4
		c.WSFrameWindow = time.Second
	})
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Shape.ChannelsPerCommunity = 3
		sc.Population.ChannelsPerMember = 3
		sc.Human = scenario.Human{HistoryLimit: 0, PresenceIntervalSecs: 3600}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	sink := &collect{}
	// 3 channel REQs, 1 mention REQ and 1 presence REQ against 4 frames a second.
	runUntil(t, sc, map[int]relayclient.Sink{sc.GlobalIndex(scenario.KindHuman, 0): sink},
		"every live subscription in place after a throttle", func() bool {
			return sink.throt(relayclient.OpSubscribeEOSE) > 0 && sink.ok(relayclient.OpSubscribeEOSE) >= 5
		})
	sink.noErrors(t)
	if n := sink.ok(relayclient.OpConnect); n != 1 {
		t.Errorf("%d connects: the throttle ended the session", n)
	}
}
