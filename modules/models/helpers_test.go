package models

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relay/relaytest"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relayclient/relayclienttest"
	"github.com/buzzload/buzzload/modules/scenario"
)

// startRelay starts an in-process relay with rate limits off unless mutate
// turns them on (relaytest.Start).
func startRelay(t testing.TB, mutate func(*relay.Config)) *relay.Relay {
	return relaytest.Start(t, mutate)
}

// activityOn is the fixture of an Activity's tests: a relay, a scenario
// whose humans behave as h, its channels seeded, and client 0's socket
// (results to sink; nil records nothing), closed when the test ends.
func activityOn(t testing.TB, h scenario.Human, sink relayclient.Sink) (*relay.Relay, *scenario.Scenario, *relayclient.Conn) {
	t.Helper()
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) { sc.Human = h })
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	conn, err := relayclient.Connect(context.Background(), relayclient.Config{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP},
		Keys: sc.Keys(0), Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return r, sc, conn
}

// testScenario is a small scenario aimed at the given URLs: quiet by
// default, each test turns on what it checks.
func testScenario(t testing.TB, wsURL, httpURL string, mutate func(*scenario.Scenario)) *scenario.Scenario {
	t.Helper()
	sc := scenario.Defaults()
	sc.RunID = "client-test"
	sc.Target.WSURL, sc.Target.HTTPURL = wsURL, httpURL
	sc.Target.ConnectTimeoutSecs = 3
	sc.Ramp = []scenario.Step{{Users: 1, HoldSecs: 10}}
	sc.Shape.ChannelsPerCommunity = 1
	sc.Shape.ThreadRootsPerChannel = 1
	sc.Population.Humans = 2
	sc.Population.Agents = 0
	sc.Population.ChannelsPerMember = 1
	sc.Human = scenario.Human{HistoryLimit: 5, PresenceIntervalSecs: 3600}
	sc.Agent = scenario.Agent{Turn: scenario.AgentTurn{MeanSecs: 1, TypingSecs: 1, FrameSecs: 1, FrameBytes: 64}}
	if mutate != nil {
		mutate(&sc)
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	return &sc
}

// seeder publishes test fixtures over one authenticated socket.
type seeder struct {
	n    int // events published: each is stamped a second after the previous, so "newest" is unambiguous
	t    testing.TB
	sc   *scenario.Scenario
	conn *relayclient.Conn
}

func newSeeder(t testing.TB, sc *scenario.Scenario, k *nostr.Keys) *seeder {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := relayclient.Connect(ctx, relayclient.Config{Target: relayclient.Target{WSURL: sc.Target.WSURL, HTTPURL: sc.Target.HTTPURL}, Keys: k})
	if err != nil {
		t.Fatalf("seeder connect: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &seeder{t: t, sc: sc, conn: conn}
}

// publish signs and publishes one event and requires it accepted.
func (s *seeder) publish(k *nostr.Keys, kind int, tags [][]string, content string) *nostr.Event {
	s.t.Helper()
	s.n++
	ev, err := k.NewEvent(kind, tags, content, time.Now().Add(time.Duration(s.n)*time.Second))
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r := s.conn.Publish(ctx, ev, relayclient.PublishOptions{}); r.Outcome != relayclient.OutcomeOK {
		s.t.Fatalf("seed kind %d: %s %s", kind, r.Outcome, r.Error)
	}
	return ev
}

// channels creates every channel of the scenario, open, as community 0's owner.
func (s *seeder) channels() {
	owner := s.sc.OwnerKeys(0)
	for _, ch := range s.sc.Channels() {
		s.publish(owner, nostr.KindCreateGroup, [][]string{{"h", s.sc.ChannelID(ch)}, {"name", s.sc.ChannelName(ch)}}, "")
	}
}

// thread seeds a marked root in ch with n first-level replies and returns
// the root and the replies, oldest first.
func (s *seeder) thread(ch scenario.Channel, content string, n int) (*nostr.Event, []*nostr.Event) {
	owner := s.sc.OwnerKeys(0)
	id := s.sc.ChannelID(ch)
	root := s.publish(owner, nostr.KindStreamMessage, [][]string{{"h", id}}, content)
	var replies []*nostr.Event
	for i := 0; i < n; i++ {
		replies = append(replies, s.publish(owner, nostr.KindStreamMessage, firstLevelReply(id, root.ID), "seeded reply"))
	}
	return root, replies
}

// collect is a concurrency-safe sink with the queries tests need.
type collect struct{ relayclienttest.CollectSink }

func (c *collect) ok(op string) int    { return c.Count(op, relayclient.OutcomeOK) }
func (c *collect) errs(op string) int  { return c.Count(op, relayclient.OutcomeError) }
func (c *collect) throt(op string) int { return c.Count(op, relayclient.OutcomeThrottled) }
func (c *collect) errorsOf(op string) []string {
	var out []string
	for _, r := range c.Op(op) {
		if r.Outcome == relayclient.OutcomeError {
			out = append(out, r.Error)
		}
	}
	return out
}

// noErrors fails the test for any error result.
func (c *collect) noErrors(t testing.TB) {
	t.Helper()
	for _, r := range c.Results() {
		if r.Outcome == relayclient.OutcomeError {
			t.Errorf("%s error: %s", r.Op, r.Error)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitfor.Until(t, what, d, cond)
}

// closingProxy relays WebSocket frames between clients and the relay and can
// inject a relay CLOSED for the first subscription a client opened.
type closingProxy struct {
	ln    net.Listener
	relay string // the relay's address

	mu      sync.Mutex
	clients []*proxied
}

type proxied struct {
	down  *websocket.Conn // to the client
	wmu   sync.Mutex
	first string // the first REQ's subscription id
}

// newClosingProxy listens on 127.0.0.1; start the relay with the proxy's
// host as a community (Config.Communities) and call serve.
func newClosingProxy(t testing.TB) *closingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &closingProxy{ln: ln}
}

func (p *closingProxy) host() string { return p.ln.Addr().String() }

func (p *closingProxy) serve(relayAddr string) {
	p.relay = relayAddr
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	go http.Serve(p.ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := http.Header{}
		hdr.Set("Host", p.host())
		upstream, _, err := websocket.DefaultDialer.Dial("ws://"+p.relay+"/", hdr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		down, err := up.Upgrade(w, r, nil)
		if err != nil {
			upstream.Close()
			return
		}
		pc := &proxied{down: down}
		p.mu.Lock()
		p.clients = append(p.clients, pc)
		p.mu.Unlock()
		go func() {
			defer down.Close()
			for {
				typ, b, err := upstream.ReadMessage()
				if err != nil {
					return
				}
				pc.wmu.Lock()
				err = down.WriteMessage(typ, b)
				pc.wmu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		defer upstream.Close()
		for {
			typ, b, err := down.ReadMessage()
			if err != nil {
				return
			}
			if s := string(b); strings.HasPrefix(s, `["REQ","`) {
				pc.wmu.Lock()
				if pc.first == "" {
					pc.first = strings.SplitN(s[len(`["REQ","`):], `"`, 2)[0]
				}
				pc.wmu.Unlock()
			}
			if err := upstream.WriteMessage(typ, b); err != nil {
				return
			}
		}
	}))
}

// closeFirstSub sends every proxied client a CLOSED for its first
// subscription, as a relay revoking it; false when none has subscribed.
func (p *closingProxy) closeFirstSub(reason string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := false
	for _, c := range p.clients {
		c.wmu.Lock()
		if c.first != "" {
			_ = c.down.WriteMessage(websocket.TextMessage, []byte(`["CLOSED","`+c.first+`","`+reason+`"]`))
			sent = true
		}
		c.wmu.Unlock()
	}
	return sent
}
