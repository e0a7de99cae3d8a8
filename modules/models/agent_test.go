package models

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// agentTurnFixture is a relay and a one-agent scenario whose channel's
// newest message is either the 13th reply of a thread or a top-level one.
type agentTurnFixture struct {
	r      *relay.Relay
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
	q, _ := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: f.sc.OwnerKeys(0)})
	evs, _ := q.Query(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Authors: []string{agentPub}}}, relayclient.CallOptions{})
	if len(evs) != 1 || threadRoot(&evs[0]) != f.root {
		t.Fatalf("agent messages %d, want one reply under %s", len(evs), f.root)
	}
	if _, ok := scenario.SentAt(&evs[0]); !ok || evs[0].TagValue("p") != f.answer.PubKey {
		t.Errorf("reply tags %v: want a send time and the author mentioned", evs[0].Tags)
	}
	left, _ := q.Query(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindReaction},
		Tags: map[string][]string{"e": {f.answer.ID}}}}, relayclient.CallOptions{})
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
			oc, err := relayclient.Connect(context.Background(), relayclient.Config{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: owner})
			if err != nil {
				t.Fatal(err)
			}
			defer oc.Close()
			if _, _, err := oc.SubscribeEOSE(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindObserverFrame},
				Tags: map[string][]string{"p": {owner.PubKey()}}, LimitZero: true}},
				relayclient.SubOptions{OnEvent: func(ev *nostr.Event, _ time.Time, _ bool) { frames.Store(ev.ID, ev) }}); err != nil {
				t.Fatal(err)
			}

			sink := &collect{}
			c, err := New(Config{Scenario: f.sc, Global: f.g, Sink: sink})
			if err != nil {
				t.Fatal(err)
			}
			c.agent.m.LimitTurns(1)
			c.agent.turnDone = make(chan int, 1)
			stop, cancel := context.WithCancel(context.Background())
			ended := make(chan End, 1)
			go func() { ended <- c.Session(stop, nil) }()
			select {
			case <-c.agent.turnDone:
			case <-time.After(slow):
				t.Fatal("the turn did not finish")
			}
			cancel()
			if end := <-ended; end.Reason != EndStopped {
				t.Fatalf("session ended %v, want stopped", end)
			}
			sink.noErrors(t)
			want := map[string]int{
				relayclient.OpConnect: 1, relayclient.OpAuth: 1,
				relayclient.OpSubscribeEOSE: 1,         // one mention REQ for its one channel
				relayclient.OpHTTPQuery:     1 + 3 + 2, // newest message, 3 tool-call reads, a lookup per reaction removed
				OpTurnContext:               tc.turnContext,
				relayclient.OpHTTPEvents:    2 + 1 + 2, // two reactions, the reply, two deletions
			}
			for op, n := range want {
				if got := sink.ok(op); got != n {
					t.Errorf("%s ok: %d, want %d", op, got, n)
				}
			}
			if n := sink.ok(relayclient.OpPublish); n < 2 {
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
	c.agent.m.LimitTurns(1)
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
	case <-time.After(slow):
		t.Fatal("the turn did not finish")
	}
	cancel()
	<-done
	if len(ends) < 2 || ends[0].Reason != EndFailed || !strings.Contains(ends[0].Err.Error(), "connection lost") {
		t.Fatalf("sessions %v, want the first to fail with the lost connection", ends)
	}
	if n := sink.ok(relayclient.OpConnect); n < 2 {
		t.Errorf("connect ok %d, want a reconnect", n)
	}
	// The turn was neither restarted nor repeated: one turn's requests.
	for op, n := range map[string]int{relayclient.OpHTTPQuery: 6, OpTurnContext: 6, relayclient.OpHTTPEvents: 5} {
		if got := sink.ok(op); got != n {
			t.Errorf("%s ok: %d, want %d", op, got, n)
		}
	}
	f.checkTurn(t, c.PubKey())
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
	runUntil(t, sc, map[int]relayclient.Sink{sc.GlobalIndex(scenario.KindHuman, 0): human, sc.GlobalIndex(scenario.KindAgent, 0): agent},
		"polls, /events messages, socket publishes and deliveries to the human", func() bool {
			// Presence once at connect plus frames; the human in the agent's
			// channel records delivery of the agent's timed messages.
			return agent.ok(relayclient.OpHTTPQuery) >= 3 && agent.ok(relayclient.OpHTTPEvents) >= 3 &&
				agent.ok(relayclient.OpPublish) >= 4 && human.ok(OpDeliver) >= 3
		})
	human.noErrors(t)
	agent.noErrors(t)
}

// The agent's NIP-OA attestation puts it in the relay's agent tier for
// messages on the socket, but HTTP admission has one rate for every caller
// (Buzz's api/bridge.rs enforce_http_admission uses the human API rate for
// agents too): with human quotas of one per minute and generous agent
// message quotas, the agent's socket publishes pass while its HTTP calls
// past the first are throttled.
func TestAgentTierCoversMessagesNotHTTP(t *testing.T) {
	r := startRelay(t, func(c *relay.Config) {
		c.RateLimit = true
		c.WSFramesPerWindow = 1000
		c.HumanMessagesPerMin, c.HumanAPICallsPerMin = 1, 1
		c.AgentMessagesPerMin = 100000
	})
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans, sc.Population.Agents = 1, 1
		sc.Agent = scenario.Agent{PresenceIntervalSecs: 1, QueryIntervalSecs: 0.05, EventsPerHour: 36000,
			Turn: scenario.AgentTurn{MeanSecs: 1, TypingSecs: 1, FrameSecs: 1, FrameBytes: 64}}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	agent := &collect{}
	runUntil(t, sc, map[int]relayclient.Sink{sc.GlobalIndex(scenario.KindAgent, 0): agent},
		"agent socket publishes beyond the human message quota, HTTP calls throttled", func() bool {
			return agent.ok(relayclient.OpPublish) >= 3 && agent.throt(relayclient.OpHTTPQuery) >= 3
		})
	agent.noErrors(t)
	if n := agent.throt(relayclient.OpPublish); n != 0 {
		t.Errorf("socket publishes throttled %d times: the agent was not in the agent message tier", n)
	}
	if n := agent.ok(relayclient.OpHTTPQuery) + agent.ok(relayclient.OpHTTPEvents); n > 1 {
		t.Errorf("%d HTTP calls admitted under an API quota of 1/min: agents got their own HTTP tier", n)
	}
}
