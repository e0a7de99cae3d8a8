package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/localrelay"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/scenario"
)

// runClients runs the given global indices with Run until d passes.
func runClients(t *testing.T, sc *scenario.Scenario, sink relay.Sink, d time.Duration, gs ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(gs))
	for i, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(ctx, nil, Config{Scenario: sc, Global: g, Sink: sink})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("client %d: %v", gs[i], err)
		}
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
	root, _ := sd.thread(ch, ThreadRootContent(sc.RunID, ch, 0), 2)

	sink, s0, s1 := &collect{}, &collect{}, &collect{}
	both := relay.SinkFunc(func(r relay.Result) { sink.Record(r) })
	h0, h1 := sc.GlobalIndex(scenario.KindHuman, 0), sc.GlobalIndex(scenario.KindHuman, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for _, x := range []struct {
		g    int
		sink *collect
	}{{h0, s0}, {h1, s1}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tee := relay.SinkFunc(func(r relay.Result) { x.sink.Record(r); both.Record(r) })
			if err := Run(ctx, nil, Config{Scenario: sc, Global: x.g, Sink: tee}); err != nil {
				t.Errorf("human %d: %v", x.g, err)
			}
		}()
	}
	wg.Wait()

	sink.noErrors(t)
	for _, op := range []string{relay.OpConnect, relay.OpAuth} {
		if n := sink.ok(op); n != 2 {
			t.Errorf("%s ok: %d, want 2 (one per human)", op, n)
		}
	}
	// Per human: one channel REQ, one mentions REQ, one presence REQ (its peer).
	if n := sink.ok(relay.OpSubscribeEOSE); n != 6 {
		t.Errorf("subscribe_eose ok: %d, want 6", n)
	}
	if n := sink.ok(OpHistory); n < 2 {
		t.Errorf("history ok: %d, want at least 2", n)
	}
	if n := sink.ok(relay.OpPublish); n < 10 {
		t.Errorf("publish ok: %d, want at least 10 in 2.5 s at these rates", n)
	}
	for _, d := range sink.Op(OpDeliver) {
		if d.Duration < 0 || d.Duration > 2*time.Second {
			t.Errorf("deliver latency %v on loopback", d.Duration)
		}
	}
	q, err := relay.NewHTTP(relay.HTTPConfig{Target: relay.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: sc.OwnerKeys(0)})
	if err != nil {
		t.Fatal(err)
	}
	// Each human records delivery of more messages than it sent itself:
	// the other's reach it.
	for _, x := range []struct {
		g    int
		sink *collect
	}{{h0, s0}, {h1, s1}} {
		own, _ := q.Query(context.Background(), []relay.Filter{{Kinds: []int{nostr.KindStreamMessage},
			Authors: []string{sc.Keys(x.g).PubKey()}}}, relay.CallOptions{})
		if got := x.sink.ok(OpDeliver); got <= len(own) {
			t.Errorf("human %d recorded %d deliveries for %d messages of its own: none of the other's", x.g, got, len(own))
		}
	}
	// Some messages went into the seeded thread, at its first level.
	evs, res := q.Query(context.Background(), []relay.Filter{{Kinds: []int{nostr.KindStreamMessage},
		Tags: map[string][]string{"e": {root.ID}}}}, relay.CallOptions{})
	if res.Outcome != relay.OutcomeOK {
		t.Fatal(res.Error)
	}
	ours := 0
	for i := range evs {
		if _, timed := SentAt(&evs[i]); timed {
			ours++
			if threadRoot(&evs[i]) != root.ID {
				t.Errorf("reply %s is not under the seeded root", evs[i].ID)
			}
		}
	}
	if ours == 0 {
		t.Error("no message was sent as a reply into the seeded thread")
	}
	reactions, _ := q.Query(context.Background(), []relay.Filter{{Kinds: []int{nostr.KindReaction}}}, relay.CallOptions{})
	if len(reactions) == 0 {
		t.Error("no reaction reached the relay")
	}
}

// agentTurnFixture is a relay and a one-agent scenario whose channel's
// newest message is either the 13th reply of a thread or a top-level one.
type agentTurnFixture struct {
	r      *localrelay.Relay
	sc     *scenario.Scenario
	g      int
	answer *nostr.Event // the message the turn answers
	root   string       // where the reply must go
}

func newAgentTurnFixture(t *testing.T, inThread bool, meanSecs, typingSecs float64) *agentTurnFixture {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans, sc.Population.Agents = 0, 1
		sc.Agent = scenario.Agent{ChannelSubscriptions: true,
			Turn: scenario.AgentTurn{PerHour: 36000, MeanSecs: meanSecs, TypingSecs: typingSecs, FrameSecs: 0.2, FrameBytes: 300, Reads: 3}}
	})
	sd := newSeeder(t, sc, sc.OwnerKeys(0))
	sd.channels()
	ch := sc.Channels()[0]
	f := &agentTurnFixture{r: r, sc: sc, g: sc.GlobalIndex(scenario.KindAgent, 0)}
	if inThread {
		root, replies := sd.thread(ch, "a question", 13)
		f.answer, f.root = replies[12], root.ID
	} else {
		f.answer = sd.publish(sc.OwnerKeys(0), nostr.KindStreamMessage, [][]string{{"h", sc.ChannelID(ch)}}, "a question")
		f.root = f.answer.ID // a top-level message becomes the root of a new thread
	}
	return f
}

// checkTurn checks what one finished turn left on the relay: one timed reply
// at the first level under the root, mentioning the author, and no reactions.
func (f *agentTurnFixture) checkTurn(t *testing.T, agentPub string) {
	t.Helper()
	u := f.r.URLs()
	q, _ := relay.NewHTTP(relay.HTTPConfig{Target: relay.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: f.sc.OwnerKeys(0)})
	evs, _ := q.Query(context.Background(), []relay.Filter{{Kinds: []int{nostr.KindStreamMessage}, Authors: []string{agentPub}}}, relay.CallOptions{})
	if len(evs) != 1 || threadRoot(&evs[0]) != f.root {
		t.Fatalf("agent messages %d, want one reply under %s", len(evs), f.root)
	}
	if _, ok := SentAt(&evs[0]); !ok || evs[0].TagValue("p") != f.answer.PubKey {
		t.Errorf("reply tags %v: want a send time and the author mentioned", evs[0].Tags)
	}
	left, _ := q.Query(context.Background(), []relay.Filter{{Kinds: []int{nostr.KindReaction},
		Tags: map[string][]string{"e": {f.answer.ID}}}}, relay.CallOptions{})
	if len(left) != 0 {
		t.Errorf("%d reactions left on the answered message after the turn", len(left))
	}
}

func TestAgentTurnRequestSequence(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inThread    bool
		turnContext int
	}{
		// thread read, /count (all 13 came back), 39000, 30621, 30617, profile
		{"a thread reply with 13 replies reads the thread and counts it", true, 1 + 1 + 4},
		// 39000, 30621, 30617, profile
		{"a top-level message reads the channel context only", false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAgentTurnFixture(t, tc.inThread, 0.6, 0.2)
			u := f.r.URLs()
			owner := f.sc.AgentOwnerKeys(f.g)
			// The owner watches its observer frames.
			var frames sync.Map
			oc, err := relay.Connect(context.Background(), relay.Config{Target: relay.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: owner})
			if err != nil {
				t.Fatal(err)
			}
			defer oc.Close()
			if _, _, err := oc.SubscribeEOSE(context.Background(), []relay.Filter{{Kinds: []int{nostr.KindObserverFrame},
				Tags: map[string][]string{"p": {owner.PubKey()}}, LimitZero: true}},
				relay.SubOptions{OnEvent: func(ev *nostr.Event, _ time.Time, _ bool) { frames.Store(ev.ID, ev) }}); err != nil {
				t.Fatal(err)
			}

			sink := &collect{}
			c, err := New(Config{Scenario: f.sc, Global: f.g, Sink: sink})
			if err != nil {
				t.Fatal(err)
			}
			c.agent.maxTurns = 1
			c.agent.turnDone = make(chan int, 1)
			stop, cancel := context.WithCancel(context.Background())
			ended := make(chan End, 1)
			go func() { ended <- c.Session(stop, nil) }()
			select {
			case <-c.agent.turnDone:
			case <-time.After(5 * time.Second):
				t.Fatal("the turn did not finish")
			}
			cancel()
			if end := <-ended; end.Reason != EndStopped {
				t.Fatalf("session ended %v, want stopped", end)
			}
			sink.noErrors(t)
			want := map[string]int{
				relay.OpConnect: 1, relay.OpAuth: 1,
				relay.OpSubscribeEOSE: 1,         // one mention REQ for its one channel
				relay.OpHTTPQuery:     1 + 3 + 1, // newest message, 3 tool-call reads, reactions lookup
				OpTurnContext:         tc.turnContext,
				relay.OpHTTPEvents:    2 + 1 + 2, // two reactions, the reply, two deletions
			}
			for op, n := range want {
				if got := sink.ok(op); got != n {
					t.Errorf("%s ok: %d, want %d", op, got, n)
				}
			}
			if n := sink.ok(relay.OpPublish); n < 2 {
				t.Errorf("publish ok: %d, want typing and frames during the work phase", n)
			}
			f.checkTurn(t, c.PubKey())
			// Frames decrypt for the owner to frame_bytes of plaintext.
			n := 0
			frames.Range(func(_, v any) bool {
				ev := v.(*nostr.Event)
				ck, err := owner.ConversationKey(ev.PubKey)
				if err != nil {
					t.Fatal(err)
				}
				pt, err := nostr.NIP44Decrypt(ev.Content, ck)
				if err != nil || len(pt) != 300 {
					t.Errorf("frame: %v, %d bytes", err, len(pt))
				}
				n++
				return true
			})
			if n == 0 {
				t.Error("the owner received no observer frame")
			}
		})
	}
}

func TestAgentTurnContinuesAfterReconnect(t *testing.T) {
	f := newAgentTurnFixture(t, true, 1.5, 0.05) // at least 0.75 s of typing every 50 ms
	sink := &collect{}
	c, err := New(Config{Scenario: f.sc, Global: f.g, Sink: sink, Backoff: Backoff{Base: 20 * time.Millisecond, Max: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	c.agent.maxTurns = 1
	c.agent.turnDone = make(chan int, 1)
	// The socket drops a few frames into the turn's work (typing OKs); the
	// reconnect is left alone.
	f.r.Faults().DropAfterFrames(c.PubKey(), 6)
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ends []End
	done := make(chan struct{})
	go func() {
		defer close(done)
		for stop.Err() == nil {
			end := c.Session(stop, nil)
			ends = append(ends, end)
			if end.Reason == EndFailed {
				f.r.Faults().Reset()
			}
		}
	}()
	select {
	case <-c.agent.turnDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the turn did not finish")
	}
	cancel()
	<-done
	if len(ends) < 2 || ends[0].Reason != EndFailed || !strings.Contains(ends[0].Err.Error(), "connection lost") {
		t.Fatalf("sessions %v, want the first to fail with the lost connection", ends)
	}
	if n := sink.ok(relay.OpConnect); n < 2 {
		t.Errorf("connect ok %d, want a reconnect", n)
	}
	// The turn was neither restarted nor repeated: one turn's requests.
	for op, n := range map[string]int{relay.OpHTTPQuery: 5, OpTurnContext: 6, relay.OpHTTPEvents: 5} {
		if got := sink.ok(op); got != n {
			t.Errorf("%s ok: %d, want %d", op, got, n)
		}
	}
	f.checkTurn(t, c.PubKey())
}

func TestHumanReconnectChurn(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans = 1
		sc.Human = scenario.Human{HistoryLimit: 5, PresenceIntervalSecs: 1, MessagesPerHour: 3600, MeanSessionSecs: 0.25}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	sink := &collect{}
	c, err := New(Config{Scenario: sc, Global: 0, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	sessions := 0
	for stop.Err() == nil {
		end := c.Session(stop, nil)
		if end.Reason != EndSession && end.Reason != EndStopped {
			t.Fatalf("session %d ended %v", sessions, end)
		}
		sessions++
	}
	sink.noErrors(t)
	if sessions < 3 || sink.ok(relay.OpConnect) != sessions {
		t.Errorf("%d sessions, %d connects: want several sessions of ~0.25 s, one connect each", sessions, sink.ok(relay.OpConnect))
	}
	if n := sink.ok(OpHistory); n != sessions {
		t.Errorf("history ok %d, want one per session (%d)", n, sessions)
	}
}

func TestAgentBackgroundActivityReachesHumans(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans, sc.Population.Agents = 1, 1
		sc.Human = scenario.Human{PresenceIntervalSecs: 3600}
		sc.Agent = scenario.Agent{PresenceIntervalSecs: 1, QueryIntervalSecs: 0.1, EventsPerHour: 36000, ObserverFramesPerHour: 36000,
			Turn: scenario.AgentTurn{MeanSecs: 1, TypingSecs: 1, FrameSecs: 1, FrameBytes: 200}}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	human, agent := &collect{}, &collect{}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for _, x := range []struct {
		g    int
		sink *collect
	}{{sc.GlobalIndex(scenario.KindHuman, 0), human}, {sc.GlobalIndex(scenario.KindAgent, 0), agent}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Run(ctx, nil, Config{Scenario: sc, Global: x.g, Sink: x.sink}); err != nil {
				t.Errorf("client %d: %v", x.g, err)
			}
		}()
	}
	wg.Wait()
	human.noErrors(t)
	agent.noErrors(t)
	if n := agent.ok(relay.OpHTTPQuery); n < 5 {
		t.Errorf("agent polls %d, want about one per 100 ms", n)
	}
	if n := agent.ok(relay.OpHTTPEvents); n < 5 {
		t.Errorf("agent /events messages %d, want about 10 a second", n)
	}
	// Presence once at connect plus about 10 frames a second over the socket.
	if n := agent.ok(relay.OpPublish); n < 6 {
		t.Errorf("agent socket publishes %d, want presence and frames", n)
	}
	// The human in the agent's channel records delivery of its timed messages.
	if n := human.ok(OpDeliver); n < 3 {
		t.Errorf("human deliveries %d, want the agent's messages", n)
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

	waitFor(t, 3*time.Second, "thread_fetch errors before the root exists", func() bool { return sink.errs(OpThreadFetch) >= 3 })
	if n := sink.ok(OpHotReply) + sink.errs(OpHotReply) + sink.ok(OpThreadFetch); n != 0 {
		t.Fatalf("%d replies or fetches before the root exists", n)
	}
	if e := sink.errorsOf(OpThreadFetch)[0]; !strings.Contains(e, "no seeded hot-thread root") {
		t.Errorf("error %q does not say the root is missing", e)
	}
	hc := sc.HotThreadChannel()
	root, _ := sd.thread(hc, HotRootContent(sc.RunID), 1)
	waitFor(t, 3*time.Second, "replies and fetches after the root exists", func() bool {
		return sink.ok(OpHotReply) >= 2 && sink.ok(OpThreadFetch) >= 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	q, _ := relay.NewHTTP(relay.HTTPConfig{Target: relay.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: sc.OwnerKeys(0)})
	evs, _ := q.Query(context.Background(), []relay.Filter{{Kinds: []int{nostr.KindStreamMessage},
		Authors: []string{sc.Keys(g).PubKey()}}}, relay.CallOptions{})
	for i := range evs {
		if threadRoot(&evs[i]) != root.ID {
			t.Errorf("hot reply %s not under the hot root", evs[i].ID)
		}
		if _, ok := SentAt(&evs[i]); !ok {
			t.Errorf("hot reply %s carries no send time", evs[i].ID)
		}
	}
	if len(evs) == 0 {
		t.Error("no hot reply stored")
	}
}

func TestQuotaRejectionsAreThrottledNotErrors(t *testing.T) {
	r := startRelay(t, func(c *localrelay.Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 2
		c.AgentAPICallsPerMin = 3
	})
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans, sc.Population.Agents = 1, 1
		sc.Human = scenario.Human{PresenceIntervalSecs: 3600, MessagesPerHour: 36000}
		sc.Agent = scenario.Agent{QueryIntervalSecs: 0.05, Turn: scenario.AgentTurn{MeanSecs: 1, TypingSecs: 1, FrameSecs: 1, FrameBytes: 64}}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	sink := &collect{}
	runClients(t, sc, sink, 1500*time.Millisecond,
		sc.GlobalIndex(scenario.KindHuman, 0), sc.GlobalIndex(scenario.KindAgent, 0))
	sink.noErrors(t)
	if n := sink.throt(relay.OpPublish); n == 0 {
		t.Error("no publish was throttled past 2 messages a minute")
	}
	if n := sink.ok(relay.OpPublish); n < 2 {
		t.Errorf("publish ok %d, want the 2 within quota (and presence)", n)
	}
	if n := sink.throt(relay.OpHTTPQuery); n == 0 {
		t.Error("no poll was throttled past 3 API calls a minute")
	}
	for _, res := range sink.Op(relay.OpHTTPQuery) {
		if res.Outcome == relay.OutcomeThrottled && res.RetryAfter <= 0 {
			t.Errorf("throttled poll without a retry hint: %s", res.Error)
		}
	}
}

func TestRelayClosedOnLiveSubscriptionEndsSession(t *testing.T) {
	p := newClosingProxy(t)
	r := startRelay(t, func(c *localrelay.Config) { c.Communities = []string{p.host()} })
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
	waitFor(t, 3*time.Second, "the subscriptions' EOSE", func() bool { return sink.ok(relay.OpSubscribeEOSE) >= 2 })
	if !p.closeFirstSub("restricted: not a channel member") {
		t.Fatal("the client opened no subscription through the proxy")
	}
	var end End
	select {
	case end = <-ended:
	case <-time.After(3 * time.Second):
		t.Fatal("the session did not end after the relay CLOSED a live subscription")
	}
	if end.Reason != EndFailed || end.Unexpected() || !strings.Contains(end.Err.Error(), "not a channel member") {
		t.Fatalf("end %v, want failed (not an exit) naming the reason", end)
	}
	errs := sink.errorsOf(relay.OpSubscribeEOSE)
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

	r.Faults().SetHTTPLatency(400 * time.Millisecond)
	t.Run("finishes within the grace", func(t *testing.T) {
		sink := &collect{}
		c, err := New(Config{Scenario: sc, Global: g, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		stop, cancel := context.WithCancel(context.Background())
		ended := make(chan End, 1)
		go func() { ended <- c.Session(stop, context.Background()) }()
		time.Sleep(150 * time.Millisecond) // the first poll is under way
		cancel()
		end := <-ended
		if end.Reason != EndStopped {
			t.Fatalf("end %v, want stopped", end)
		}
		if n := sink.ok(relay.OpHTTPQuery); n != 1 {
			t.Errorf("http_query ok %d, want the poll under way at the stop to finish", n)
		}
		sink.noErrors(t)
	})
	t.Run("unfinished when the grace ends", func(t *testing.T) {
		sink := &collect{}
		c, err := New(Config{Scenario: sc, Global: g, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		stop, cancel := context.WithCancel(context.Background())
		grace, cancelGrace := context.WithCancel(context.Background())
		ended := make(chan End, 1)
		go func() { ended <- c.Session(stop, grace) }()
		time.Sleep(150 * time.Millisecond)
		cancel()
		time.Sleep(50 * time.Millisecond)
		cancelGrace()
		end := <-ended
		if end.Reason != EndCancelled || !end.Unexpected() {
			t.Fatalf("end %v, want cancelled (an unexpected exit)", end)
		}
		errs := sink.errorsOf(relay.OpHTTPQuery)
		if len(errs) != 1 || !strings.HasPrefix(errs[0], "unfinished at stop") {
			t.Fatalf("http_query errors %q, want one unfinished at stop", errs)
		}
		var exit *ExitError
		if !errors.As(error(&ExitError{End: end}), &exit) {
			t.Fatal("ExitError does not unwrap")
		}
	})
}

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
	if sink.errs(relay.OpConnect) != 1 {
		t.Fatalf("connect errors %d, want 1", sink.errs(relay.OpConnect))
	}
	// A stop during the backoff ends the next session without dialling.
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	if end := c.Session(stop, nil); end.Reason != EndStopped || sink.errs(relay.OpConnect) != 1 {
		t.Fatalf("end %v with %d connect errors, want stopped without a dial", end, sink.errs(relay.OpConnect))
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
