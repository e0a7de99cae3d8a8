package desktop

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// These run the renewal, tick and retry rules the simulator pins
// (model_test.go, tick_test.go) against the embedded relay, with real
// replays and real reads.

// viewerConn is a connection of the viewer's own, beside the client's.
func (e *e2e) viewerConn(ctx context.Context) *relayclient.Conn {
	e.t.Helper()
	conn, err := relayclient.Connect(ctx, relayclient.Config{Target: e.target, Keys: e.keys})
	if err != nil {
		e.t.Fatal(err)
	}
	return conn
}

// fill publishes n more messages into channel c as the viewer.
func (e *e2e) fill(c, n int) {
	e.publishAll(n, func(i int) (int, [][]string, string) {
		return nostr.KindStreamMessage, [][]string{{"h", e.chans[c]}}, fmt.Sprintf("fill %d", i)
	})
}

// reminders publishes n reminders (kind 30300, one d each) as the viewer.
func (e *e2e) reminders(n int) {
	e.publishAll(n, func(i int) (int, [][]string, string) {
		return nostr.KindReminder, [][]string{{"d", fmt.Sprintf("r%d", i)}}, ""
	})
}

// publishAll publishes n events as the viewer, pipelined, and requires
// every one accepted.
func (e *e2e) publishAll(n int, event func(i int) (kind int, tags [][]string, content string)) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn := e.viewerConn(ctx)
	defer conn.Close()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 0; i < n; i++ {
		kind, tags, content := event(i)
		ev, err := e.keys.NewEvent(kind, tags, content, time.Now())
		if err != nil {
			e.t.Fatal(err)
		}
		wg.Add(1)
		if err := conn.PublishAsync(ev, relayclient.PublishOptions{}, func(r relayclient.Result) {
			if r.Outcome != relayclient.OutcomeOK {
				failed.Add(1)
			}
			wg.Done()
		}); err != nil {
			e.t.Fatal(err)
		}
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		e.t.Fatalf("%d of the events refused", n)
	}
}

// since returns what was recorded after base (ops with no change left out).
func since(base, now map[string]int) map[string]int {
	out := maps.Clone(now)
	for k, v := range base {
		out[k] -= v
	}
	maps.DeleteFunc(out, func(_ string, n int) bool { return n == 0 })
	return out
}

// settleMore waits until delta is recorded on top of base and returns what
// was recorded since base.
func (e *e2e) settleMore(base, delta map[string]int) map[string]int {
	e.t.Helper()
	return since(base, e.settle(addOps(base, delta)))
}

// A current renewal judges each replay by its count: 499 replayed events on
// the channel batch keep continuity and read nothing; 500 (the replay
// limit) are a cut: channel recovery and a covered repair. Mutant
// "count > ReplayLimit is a cut" reads nothing at 500 and fails.
func TestEndToEndCurrentRenewalWith499And500ReplayedEvents(t *testing.T) {
	for _, c := range []struct {
		name   string
		events int // replayed by the batch at the renewal
		cut    bool
	}{
		{"499 replayed events read nothing", 499, false},
		{"500 replayed events recover the channels with a covered repair", 500, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newE2E(t, 5)
			e.fill(1, c.events-e.routeReplay(RouteBatch))
			if n := e.routeReplay(RouteBatch); n != c.events {
				t.Fatalf("the batch replays %d events, want %d", n, c.events)
			}
			p := e.params(ModeCurrent)
			p.Renewal, p.RenewalPhase = 6*time.Second, 0.5 // the first renewal at 3 s
			e.run(p)
			cold := e.settle(coldStartOps(3, 0))
			delta := map[string]int{OpLiveEOSE: 3, OpPresenceEOSE: 1}
			if c.cut {
				delta = addOps(delta, map[string]int{OpUnread: 1, OpWindow: cold[OpWindow], OpNotices: 3, OpThreadRoot: 1, OpThreadWindow: 1})
			}
			got := e.settleMore(cold, delta)
			e.stop()
			e.want(got, delta)
		})
	}
}

// A current renewal of a large session (more than ten channels: a
// live-only subscription and replays of ten) recovers its channels but not
// its globals. Mutant "the live-only route is continuous at a renewal"
// (both at its open and at its EOSE) holds every route, reads nothing and
// fails.
func TestEndToEndCurrentRenewalOfALargeSessionRecoversChannelsButNotGlobals(t *testing.T) {
	e := newE2E(t, 25)
	p := e.params(ModeCurrent)
	p.Renewal, p.RenewalPhase = 4*time.Second, 0.5
	e.run(p)
	cold := e.settle(coldStartOps(3, 3))
	delta := map[string]int{OpLiveEOSE: 3, OpPresenceEOSE: 1, OpReplayEOSE: 3, OpUnread: 1, OpWindow: cold[OpWindow], OpNotices: 3,
		OpThreadRoot: 1, OpThreadWindow: 1}
	got := e.settleMore(cold, delta)
	e.stop()
	e.want(got, delta)
}

// Current ticks are idle until the backstop, which replaces the live-only
// subscriptions and rereads the roster with a full repair. Mutant "every
// tick replaces" sends replacements at the first tick and fails.
func TestEndToEndCurrentTicksIdleUntilTheBackstop(t *testing.T) {
	e := newE2E(t, 5)
	p := e.params(ModeCurrent)
	// The backstop far from the two ticks watched (code review T2: 700 ms
	// of slack flaked on a loaded machine).
	p.Tick, p.Backstop = time.Second, 6*time.Second
	e.run(p)
	cold := e.settle(coldStartOps(3, 0))
	time.Sleep(2300 * time.Millisecond) // a negative check's window: the ticks at 1 s and 2 s replace nothing
	if got := withoutProbes(since(cold, e.counts())); len(got) != 0 {
		t.Fatalf("ticks before the backstop recorded %v", got)
	}
	delta := map[string]int{OpLiveEOSE: 1, OpRoster: 1, OpReadState: 1, OpUnread: 1}
	got := withoutProbes(e.settleMore(cold, delta))
	e.stop()
	e.want(got, delta)
}

// withoutProbes drops the silence probes: between quiet ticks the socket
// carries no frame, so each tick may probe it.
func withoutProbes(m map[string]int) map[string]int {
	delete(m, OpProbe)
	return m
}

// A failed HTTP read is owed and retried at the next tick, before the
// backstop; only it is read again. Mutant "a failed read counts as done"
// (not owed, its backstop restarts) reads nothing at the next tick and
// fails.
func TestEndToEndAFailingHTTPReadIsRetriedAtTheNextTick(t *testing.T) {
	e := newE2E(t, 5)
	p := e.params(ModeCurrent)
	p.Tick, p.Backstop = 2*time.Second, 3*time.Second // ticks at 2 s (idle), 4 s (backstop), 6 s (retry)
	e.run(p)
	cold := e.settle(coldStartOps(3, 0))
	e.relay.Faults().FailHTTPOnce("/query", 500) // the first read of the backstop tick fails
	first := e.settleMore(cold, map[string]int{OpLiveEOSE: 1})
	failed := ""
	waitfor.Within(3*time.Second, func() bool {
		for k := range e.counts() {
			if len(k) > 6 && k[len(k)-6:] == " error" {
				failed = k[:len(k)-6]
			}
		}
		return failed != ""
	})
	if failed == "" {
		t.Fatalf("no read failed at the backstop tick: %v", first)
	}
	after := e.counts()
	retry := map[string]int{failed: 1}
	if failed == OpReadState || failed == OpUnread {
		// the repair is retried with its snapshot when the snapshot failed,
		// without it when only the unread request did
		retry = map[string]int{OpUnread: 1}
		if failed == OpReadState {
			retry[OpReadState] = 1
		}
	}
	got := withoutProbes(e.settleMore(after, retry))
	e.stop()
	e.want(got, retry)
}

// routeReplay is how many events route k's REQ replays now (for the batch:
// of every channel; the relay's own 39000/39002 included).
func (e *e2e) routeReplay(k RouteKind) int {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn := e.viewerConn(ctx)
	defer conn.Close()
	id := &Identity{Viewer: e.keys.PubKey(), Channels: e.chans}
	spec := SubSpec{Route: k}
	if k == RouteBatch {
		for i := range e.chans {
			spec.Channels = append(spec.Channels, i)
		}
	}
	sub, r, err := conn.SubscribeEOSE(ctx, SubFilters(spec, id), relayclient.SubOptions{})
	if err != nil || r.Outcome != relayclient.OutcomeOK {
		e.t.Fatalf("%v replay: %v %+v", k, err, r)
	}
	return sub.Replayed()
}

// dropOnce drops the client's socket (the relay closes it at the next
// frame: a message from someone else in a channel) and waits for it to go.
func (e *e2e) dropOnce() {
	e.t.Helper()
	e.relay.Faults().DropAfterFrames(e.keys.PubKey(), 1)
	other := nostr.DeriveKeys(e.t.Name(), nostr.Role("human"), 9)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := relayclient.Connect(ctx, relayclient.Config{Target: e.target, Keys: other})
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	ev, _ := other.NewEvent(nostr.KindStreamMessage, [][]string{{"h", e.chans[1]}}, "hello", time.Now())
	conn.Publish(ctx, ev, relayclient.PublishOptions{})
	if !waitfor.Within(time.Until(deadlineOf(ctx)), func() bool { return e.client.Conn() == nil }) {
		e.t.Fatal("the connection was not dropped")
	}
	e.relay.Faults().DropAfterFrames(e.keys.PubKey(), 0)
}

// profiles publishes a kind-0 profile for each of n new authors, over HTTP
// (each signs its own NIP-98), a few at a time.
func (e *e2e) profiles(n int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Int64
	sem := make(chan struct{}, 8)
	tr, err := relayclient.NewTransport(relayclient.TransportOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			k := nostr.DeriveKeys(e.t.Name(), nostr.Role("profile"), i)
			h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: e.target, Keys: k, Transport: tr})
			if err != nil {
				failed.Add(1)
				return
			}
			ev, err := k.NewEvent(nostr.KindProfile, nil, fmt.Sprintf(`{"name":"p%d"}`, i), time.Now())
			if err != nil {
				failed.Add(1)
				return
			}
			if _, r := h.PublishHTTP(ctx, ev, relayclient.CallOptions{}); r.Outcome != relayclient.OutcomeOK {
				failed.Add(1)
			}
		}(i)
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		e.t.Fatalf("%d profiles refused", n)
	}
}

// After a dropped connection a truncated global replay (500 events: the
// replay limit, measured on the relay) rereads its route in full beside
// NIP-11, channel recovery and the repair; a complete one
// (TestEndToEndDroppedConnection...) repairs only covered. Mutant "count >
// ReplayLimit is a cut" fails both cases.
func TestEndToEndATruncatedReplayAfterADroppedConnectionRereadsItsRouteInFull(t *testing.T) {
	for _, c := range []struct {
		name  string
		route RouteKind
		fill  func(e *e2e, n int)
		reads map[string]int
	}{
		{"truncated membership rereads roster, read state, unreads and reminders", RouteMembership, (*e2e).reminders,
			map[string]int{OpRoster: 1, OpReadState: 1, OpUnread: 1, OpReminders: 1}},
		{"truncated profiles reread profiles, statuses and emoji", RouteProfiles, (*e2e).profiles,
			map[string]int{OpProfiles: 1, OpStatuses: 1, OpEmoji: 1, OpUnread: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newE2E(t, 5)
			c.fill(e, ReplayLimit-e.routeReplay(c.route))
			if n := e.routeReplay(c.route); n != ReplayLimit {
				t.Fatalf("%v replays %d events, want %d", c.route, n, ReplayLimit)
			}
			e.run(e.params(ModeCurrent))
			cold := e.settle(coldStartOps(3, 0))
			e.want(cold, coldStartOps(3, 0))
			e.dropOnce()
			delta := addOps(c.reads, map[string]int{OpNIP11: 1, OpLiveEOSE: 3, OpPresenceEOSE: 1, OpWindow: 3, OpNotices: 3, OpThreadRoot: 1, OpThreadWindow: 1})
			got := withoutProbes(e.settleMore(cold, delta))
			e.stop()
			e.want(got, delta)
		})
	}
}

// deadlineOf is ctx's deadline (a minute away without one).
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}
