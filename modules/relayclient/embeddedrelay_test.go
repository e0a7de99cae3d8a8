package relayclient

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relay/relaytest"
)

// These tests run the client against the embedded Buzz-compatible relay
// (another team's package, built to the same docs/buzz-protocol.md): the two were written
// independently, so agreement here is evidence about both.

func startLocalRelay(t *testing.T, mutate func(*relay.Config)) *relay.Relay {
	return relaytest.Start(t, mutate)
}

func profile(t *testing.T, k *nostr.Keys, name string) *nostr.Event {
	t.Helper()
	ev, err := k.NewEvent(0, nil, fmt.Sprintf(`{"name":%q}`, name), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestLocalRelayPublishSubscribeLive(t *testing.T) {
	r := startLocalRelay(t, nil)
	sink := &CollectSink{}
	alice, bob := nostr.DeriveKeys("lr", nostr.RoleHuman, 1), nostr.DeriveKeys("lr", nostr.RoleHuman, 2)
	ca, err := Connect(context.Background(), Config{Target: Target{WSURL: r.URLs().WS}, Keys: alice, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := Connect(context.Background(), Config{Target: Target{WSURL: r.URLs().WS}, Keys: bob, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()

	live := make(chan *nostr.Event, 1)
	_, res, err := ca.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{0}, Authors: []string{bob.PubKey()}}}, SubOptions{
		OnEvent: func(ev *nostr.Event, at time.Time, isLive bool) {
			if isLive {
				live <- ev
			}
		},
	})
	if err != nil || res.Outcome != OutcomeOK {
		t.Fatalf("EOSE: %v %+v", err, res)
	}
	ev := profile(t, bob, "bob")
	if r := cb.Publish(context.Background(), ev, PublishOptions{}); r.Outcome != OutcomeOK {
		t.Fatalf("publish: %+v", r)
	}
	if r := cb.Publish(context.Background(), ev, PublishOptions{}); r.Outcome != OutcomeOK {
		t.Fatalf("duplicate publish must be ok: %+v", r)
	}
	select {
	case got := <-live:
		if got.ID != ev.ID {
			t.Fatalf("live %s, want %s", got.ID, ev.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no live event")
	}
	// An event signed by someone else is refused with the relay's reason.
	if r := ca.Publish(context.Background(), profile(t, bob, "spoof"), PublishOptions{}); r.Outcome != OutcomeError ||
		!strings.Contains(r.Error, "does not match authenticated identity") {
		t.Fatalf("spoof: %+v", r)
	}
	if n, r := ca.Count(context.Background(), []Filter{{Kinds: []int{0}, Authors: []string{bob.PubKey()}}}, CountOptions{}); r.Outcome != OutcomeOK || n != 1 {
		t.Fatalf("count %d %+v", n, r)
	}
	if ca.Stats().BadFrames+cb.Stats().BadFrames != 0 {
		t.Fatalf("bad frames: %+v", sink.Op(OpBadFrame))
	}
}

func TestLocalRelayThrottles(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("legacy=", legacy), func(t *testing.T) {
			r := startLocalRelay(t, func(c *relay.Config) {
				c.RateLimit = true
				c.HumanMessagesPerMin = 2
				c.HumanAPICallsPerMin = 1
				c.WSFramesPerWindow = 1000
				c.LegacyRateLimitNotice = legacy
			})
			k := nostr.DeriveKeys("lr-throttle", nostr.RoleHuman, 1)
			c, err := Connect(context.Background(), Config{Target: Target{WSURL: r.URLs().WS}, Keys: k})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i := 0; i < 2; i++ {
				if res := c.Publish(context.Background(), profile(t, k, fmt.Sprint(i)), PublishOptions{}); res.Outcome != OutcomeOK {
					t.Fatalf("%d: %+v", i, res)
				}
			}
			start := time.Now()
			res := c.Publish(context.Background(), profile(t, k, "third"), PublishOptions{})
			if res.Outcome != OutcomeThrottled || res.RetryAfter <= 0 {
				t.Fatalf("third: %+v", res)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("the throttle was only noticed at the deadline")
			}
			h, err := NewHTTP(HTTPConfig{Target: Target{HTTPURL: r.URLs().HTTP}, Keys: k})
			if err != nil {
				t.Fatal(err)
			}
			if _, res := h.CountHTTP(context.Background(), []Filter{{Kinds: []int{0}}}, CallOptions{}); res.Outcome != OutcomeOK {
				t.Fatalf("first HTTP: %+v", res)
			}
			if _, res := h.CountHTTP(context.Background(), []Filter{{Kinds: []int{0}}}, CallOptions{}); res.Outcome != OutcomeThrottled {
				t.Fatalf("second HTTP: %+v", res)
			}
		})
	}
}

func TestLocalRelayOperatorAndCommunityHostMapping(t *testing.T) {
	r := startLocalRelay(t, nil)
	owner := nostr.DeriveKeys("lr-op", nostr.RoleOwner, 0)
	op, err := NewHTTP(HTTPConfig{Target: Target{HTTPURL: r.URLs().HTTP}, Keys: r.OperatorKeys(), OperatorOrigin: r.OperatorOrigin()})
	if err != nil {
		t.Fatal(err)
	}
	const host = "c1.buzz.test"
	rep, res := op.ProvisionCommunity(context.Background(), host, owner.PubKey(), true, CallOptions{})
	if res.Outcome != OutcomeOK || rep.Status != "created" {
		t.Fatalf("%+v %+v", rep, res)
	}
	if _, res := op.ProvisionCommunity(context.Background(), host, owner.PubKey(), true, CallOptions{}); res.Outcome != OutcomeError ||
		!strings.Contains(res.Error, "409") {
		t.Fatalf("second create: %+v", res)
	}
	// Dial the relay's address, claim the community's public URL.
	target := Target{WSURL: "ws://public.invalid", HTTPURL: "http://public.invalid", Host: host, ConnectAddr: r.Addr()}
	human := nostr.DeriveKeys("lr-op", nostr.RoleHuman, 5)
	c, err := Connect(context.Background(), Config{Target: target, Keys: human})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.RelayURL() != "ws://"+host {
		t.Fatalf("relay URL %s", c.RelayURL())
	}
	ev := profile(t, human, "in c1")
	if res := c.Publish(context.Background(), ev, PublishOptions{}); res.Outcome != OutcomeOK {
		t.Fatalf("%+v", res)
	}
	h, err := NewHTTP(HTTPConfig{Target: target, Keys: human})
	if err != nil {
		t.Fatal(err)
	}
	evs, res := h.Query(context.Background(), []Filter{{Kinds: []int{0}, Authors: []string{human.PubKey()}}}, CallOptions{})
	if res.Outcome != OutcomeOK || len(evs) != 1 || evs[0].ID != ev.ID {
		t.Fatalf("%+v %d", res, len(evs))
	}
	// The deployment community does not see c1's events.
	hd, _ := NewHTTP(HTTPConfig{Target: Target{HTTPURL: r.URLs().HTTP}, Keys: human})
	if evs, res := hd.Query(context.Background(), []Filter{{Kinds: []int{0}, Authors: []string{human.PubKey()}}}, CallOptions{}); res.Outcome != OutcomeOK || len(evs) != 0 {
		t.Fatalf("leaked across communities: %+v %d", res, len(evs))
	}
	// An unmapped host is refused at the upgrade, quoting the relay.
	_, err = Connect(context.Background(), Config{Target: Target{WSURL: "ws://x", Host: "nobody.test", ConnectAddr: r.Addr()}, Keys: human})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unmapped host: %v", err)
	}
}

// With EOSEGrace the EOSE is judged by its arrival: past the timeout the
// wait goes on only while the reader may hold frames that arrived in time,
// and an EOSE that arrived after EOSETimeout is the timeout all the same.
// Mutant "an EOSE within the grace is ok" fails the second case. A reader
// that is caught up when no EOSE came ends the wait at the timeout, on
// both readers (audit desktop.md #98: it always waited timeout + grace;
// the old code fails the last two cases at 2.25 s).
func TestEOSEGraceJudgesTheEOSEByItsArrival(t *testing.T) {
	for _, c := range []struct {
		name   string
		delay  time.Duration
		grace  time.Duration
		noPoll bool
		want   Outcome
		text   string
		within time.Duration
	}{
		{"an EOSE before the timeout is ok", 50 * time.Millisecond, 500 * time.Millisecond, false, OutcomeOK, "", 0},
		{"an EOSE after the timeout, reader caught up, is the timeout at the timeout", 400 * time.Millisecond, 2 * time.Second, false, OutcomeError, "no EOSE within 250ms", 1250 * time.Millisecond},
		{"no EOSE on an idle poller connection fails at the timeout", 10 * time.Second, 2 * time.Second, false, OutcomeError, "no EOSE within 250ms", 1250 * time.Millisecond},
		{"no EOSE on an idle reader goroutine fails at the timeout", 10 * time.Second, 2 * time.Second, true, OutcomeError, "no EOSE within 250ms", 1250 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startLocalRelay(t, nil)
			r.Faults().DelayEOSE("g", c.delay)
			conn, err := Connect(context.Background(), Config{Target: Target{WSURL: r.URLs().WS}, Keys: nostr.DeriveKeys(t.Name(), "a", 0), NoPoller: c.noPoll})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			_, res, _ := conn.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{nostr.KindProfile}, Limit: 1}},
				SubOptions{ID: "g1", EOSETimeout: 250 * time.Millisecond, EOSEGrace: c.grace})
			if res.Outcome != c.want || !strings.Contains(res.Error, c.text) {
				t.Errorf("%v %q, want %v %q", res.Outcome, res.Error, c.want, c.text)
			}
			if took := time.Since(start); c.within > 0 && took > c.within {
				t.Errorf("the wait took %v, want about the 250ms timeout (under %v; timeout+grace is 2.25s)", took, c.within)
			}
			if c.within > 0 && res.Duration > c.within {
				t.Errorf("recorded %v", res.Duration)
			}
		})
	}
}

// Issue 10: Buzz keeps one reaction per author, target and emoji and
// answers a repeat "duplicate: reaction already exists" with OK false. A
// rerun re-sends the same reactions, so for this idempotent action the
// caller can count that answer as ok (DuplicateOK); without it, it is an
// error as before.
func TestDuplicateReactionIsOkWhenAskedFor(t *testing.T) {
	r := startLocalRelay(t, nil)
	sink := &CollectSink{}
	alice := nostr.DeriveKeys("dup", nostr.RoleHuman, 1)
	c, err := Connect(context.Background(), Config{Target: Target{WSURL: r.URLs().WS}, Keys: alice, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	target := profile(t, alice, "alice")
	if res := c.Publish(context.Background(), target, PublishOptions{}); res.Outcome != OutcomeOK {
		t.Fatalf("target: %+v", res)
	}
	at := time.Now()
	react := func() *nostr.Event {
		at = at.Add(time.Second) // a new id each time: a rerun signs anew
		ev, err := alice.NewEvent(nostr.KindReaction, [][]string{{"e", target.ID}, {"p", alice.PubKey()}}, "+", at)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	if res := c.Publish(context.Background(), react(), PublishOptions{}); res.Outcome != OutcomeOK {
		t.Fatalf("first reaction: %+v", res)
	}
	if res := c.Publish(context.Background(), react(), PublishOptions{}); res.Outcome != OutcomeError || !strings.HasPrefix(res.Error, "duplicate:") {
		t.Fatalf("a repeat without DuplicateOK: %+v, want the relay's duplicate error", res)
	}
	if res := c.Publish(context.Background(), react(), PublishOptions{DuplicateOK: true}); res.Outcome != OutcomeOK {
		t.Fatalf("a repeat with DuplicateOK: %+v", res)
	}
	h, err := NewHTTP(HTTPConfig{Target: Target{WSURL: r.URLs().WS, HTTPURL: r.URLs().HTTP}, Keys: alice, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if _, res := h.PublishHTTP(context.Background(), react(), CallOptions{}); res.Outcome != OutcomeError {
		t.Fatalf("HTTP repeat without DuplicateOK: %+v", res)
	}
	if _, res := h.PublishHTTP(context.Background(), react(), CallOptions{DuplicateOK: true}); res.Outcome != OutcomeOK {
		t.Fatalf("HTTP repeat with DuplicateOK: %+v", res)
	}
	// Only "duplicate:" is forgiven: another refusal stays an error.
	bad, _ := alice.NewEvent(nostr.KindReaction, [][]string{{"p", alice.PubKey()}}, "+", time.Now())
	if res := c.Publish(context.Background(), bad, PublishOptions{DuplicateOK: true}); res.Outcome != OutcomeError {
		t.Fatalf("a reaction without a target with DuplicateOK: %+v", res)
	}
}

// A reader that is behind at the deadline (it may hold frames that arrived
// in time) keeps the wait open, and once it has caught up the wait ends:
// the extension is conditional, up to the grace. Mutant "never extend"
// ends at 250 ms; mutant "always extend" at 2.25 s.
func TestEOSEGraceWaitsOnlyWhileTheReaderIsBehind(t *testing.T) {
	r := startLocalRelay(t, nil)
	r.Faults().DelayEOSE("g", 10*time.Second)
	conn, err := Connect(context.Background(), Config{Target: Target{WSURL: r.URLs().WS}, Keys: nostr.DeriveKeys(t.Name(), "a", 0), NoPoller: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.reading.Store(true) // as if it were busy with a backlog; the idle reader does not touch it
	caughtUp := 700 * time.Millisecond
	time.AfterFunc(caughtUp, func() { conn.reading.Store(false) })
	start := time.Now()
	_, res, _ := conn.SubscribeEOSE(context.Background(), []Filter{{Kinds: []int{nostr.KindProfile}, Limit: 1}},
		SubOptions{ID: "g1", EOSETimeout: 250 * time.Millisecond, EOSEGrace: 2 * time.Second})
	took := time.Since(start)
	if res.Outcome != OutcomeError || !strings.Contains(res.Error, "no EOSE within 250ms") {
		t.Fatalf("%v %q", res.Outcome, res.Error)
	}
	if took < caughtUp || took > caughtUp+time.Second {
		t.Errorf("the wait ended after %v, want soon after the reader caught up at %v", took, caughtUp)
	}
}
