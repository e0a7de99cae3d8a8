package desktop

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relay/relaytest"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relayclient/relayclienttest"
	"github.com/buzzload/buzzload/modules/scenario"
)

// End-to-end: a Client against the embedded relay on loopback, with the
// relay's fault injection. Time values are small so each test takes a
// second or two.

type e2e struct {
	t      testing.TB
	relay  *relay.Relay
	target relayclient.Target
	keys   *nostr.Keys
	chans  []string
	sink   *relayclienttest.CollectSink
	client *Client
	cancel context.CancelFunc
	done   chan error
}

func startLocalRelay(t testing.TB) *relay.Relay { return relaytest.Start(t, nil) }

// newE2E starts a relay and creates nch open channels owned by the viewer,
// with a thread (root and one reply) in the first.
func newE2E(t *testing.T, nch int) *e2e { return newE2EB(t, nch) }

func newE2EB(t testing.TB, nch int) *e2e { return newE2EWith(t, nch, nil) }

// newE2EWith is newE2E against a relay configured by mutate.
func newE2EWith(t testing.TB, nch int, mutate func(*relay.Config)) *e2e {
	t.Helper()
	r := relaytest.Start(t, mutate)
	u := r.URLs()
	e := &e2e{t: t, relay: r, target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP},
		keys: nostr.DeriveKeys(t.Name(), nostr.Role("human"), 0), sink: &relayclienttest.CollectSink{}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	setup, err := relayclient.Connect(ctx, relayclient.Config{Target: e.target, Keys: e.keys})
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	pub := func(kind int, tags [][]string, content string) *nostr.Event {
		ev, err := e.keys.NewEvent(kind, tags, content, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if r := setup.Publish(ctx, ev, relayclient.PublishOptions{}); r.Outcome != relayclient.OutcomeOK {
			t.Fatalf("setup kind %d: %s", kind, r.Error)
		}
		return ev
	}
	for i := 0; i < nch; i++ {
		id := scenario.ChannelID(t.Name(), scenario.Channel{Index: i})
		pub(9007, [][]string{{"h", id}, {"name", fmt.Sprintf("ch%d", i)}, {"visibility", "open"}}, "")
		e.chans = append(e.chans, id)
	}
	root := pub(9, [][]string{{"h", e.chans[0]}}, "root")
	pub(9, [][]string{{"h", e.chans[0]}, {"e", root.ID, "", "reply"}}, "reply")
	return e
}

func (e *e2e) params(mode Mode) Params {
	return Params{Mode: mode, Windows: 3, Threads: 1, Tick: time.Hour, Backstop: time.Hour,
		EOSETimeout: 5 * time.Second, BackoffBase: 200 * time.Millisecond}
}

func (e *e2e) run(p Params) {
	e.t.Helper()
	co := []string{nostr.DeriveKeys(e.t.Name(), nostr.Role("human"), 1).PubKey(), nostr.DeriveKeys(e.t.Name(), nostr.Role("human"), 2).PubKey()}
	c, err := New(Config{Params: p, Target: e.target, Keys: e.keys, Channels: e.chans, CoMembers: co, Sink: e.sink})
	if err != nil {
		e.t.Fatal(err)
	}
	e.client = c
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	go func() { e.done <- c.Run(ctx, nil) }()
	e.t.Cleanup(e.stop)
}

func (e *e2e) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		e.t.Error("Run did not return within 5 s of the stop")
	}
}

// counts are the desktop ops and the generator's own http_query (its
// seeded-root search) recorded so far by outcome "ok" (errors are counted
// under op+" error").
func (e *e2e) counts() map[string]int {
	out := map[string]int{}
	for _, r := range e.sink.Results() {
		if !strings.HasPrefix(r.Op, "desktop_") && r.Op != relayclient.OpHTTPQuery {
			continue
		}
		k := r.Op
		if r.Outcome != relayclient.OutcomeOK {
			k += " " + r.Outcome.String()
		}
		out[k]++
	}
	return out
}

// settle waits until want is reached (or 10 s pass), then a little more so
// anything extra would show, and returns the counts.
func (e *e2e) settle(want map[string]int) map[string]int {
	e.t.Helper()
	waitfor.Within(10*time.Second, func() bool {
		got := e.counts()
		for k, n := range want {
			if got[k] < n {
				return false
			}
		}
		return true
	})
	time.Sleep(300 * time.Millisecond) // a negative check's window: anything extra would show in it
	return e.counts()
}

func (e *e2e) want(got, want map[string]int) {
	e.t.Helper()
	if !maps.Equal(got, want) {
		e.t.Errorf("ops\n got %v\nwant %v", got, want)
	}
}

func coldStartOps(live, replay int) map[string]int {
	m := map[string]int{
		OpNIP11: 1, OpLiveEOSE: live, OpPresenceEOSE: 1, OpRoster: 1, OpMetadata: 1, OpSidebar: 1, OpProfiles: 1, OpStatuses: 1, OpEmoji: 1,
		OpReadState: 1, OpUnread: 1, OpReminders: 1, OpWindow: 3, OpNotices: 3, OpThreadWindow: 1,
		// the generator's search for the seeded root, then the app's lookup by id
		relayclient.OpHTTPQuery: 1, OpThreadRoot: 1,
	}
	if replay > 0 {
		m[OpReplayEOSE] = replay
	}
	return m
}

func TestEndToEndColdStartCountsPerOp(t *testing.T) {
	for _, c := range []struct {
		name         string
		mode         Mode
		n            int
		live, replay int
	}{
		{"legacy 5 channels", ModeLegacy, 5, 3, 0},
		{"current 5 channels", ModeCurrent, 5, 3, 0},
		{"legacy 25 channels", ModeLegacy, 25, 5, 0},
		{"current 25 channels", ModeCurrent, 25, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newE2E(t, c.n)
			e.run(e.params(c.mode))
			want := coldStartOps(c.live, c.replay)
			e.want(e.settle(want), want)
		})
	}
}

// The app asks for the read-state snapshot only when NIP-11 advertises it
// (docs/desktop-requests.md §5.8); against a relay without the extension it
// makes the plain bounded read, which succeeds, instead of a snapshot
// request answered by an event array (an error on every cold start).
func TestEndToEndReadStateFollowsNIP11(t *testing.T) {
	for _, advertised := range []bool{true, false} {
		t.Run(fmt.Sprint("advertised=", advertised), func(t *testing.T) {
			e := newE2EWith(t, 5, func(c *relay.Config) { c.ReadStateSnapshot = advertised })
			e.run(e.params(ModeCurrent))
			want := coldStartOps(3, 0)
			e.want(e.settle(want), want)
		})
	}
}

func addOps(a map[string]int, b map[string]int) map[string]int {
	out := maps.Clone(a)
	for k, v := range b {
		out[k] += v
	}
	return out
}

// After a dropped connection, complete replays read only NIP-11, channel
// recovery and a covered repair (current).
func TestEndToEndDroppedConnectionReadsOnlyNIP11ChannelRecoveryAndACoveredRepair(t *testing.T) {
	e := newE2E(t, 5)
	e.run(e.params(ModeCurrent))
	cold := coldStartOps(3, 0)
	e.want(e.settle(cold), cold)

	e.dropOnce()

	want := addOps(cold, map[string]int{OpNIP11: 1, OpLiveEOSE: 3, OpPresenceEOSE: 1, OpUnread: 1, OpWindow: 3, OpNotices: 3, OpThreadRoot: 1, OpThreadWindow: 1})
	e.want(e.settle(want), want)
}

// A route whose EOSE missed its deadline is recovered, and after a renewal
// with a complete replay it is recovered in full again rather than carried.
func TestEndToEndARouteThatMissedItsDeadlineIsRecoveredInFullAfterARenewal(t *testing.T) {
	e := newE2E(t, 5)
	p := e.params(ModeCurrent)
	p.EOSETimeout = 300 * time.Millisecond
	p.Renewal, p.RenewalPhase = 3*time.Second, 0.5    // renewals at 1.5 s, 4.5 s, ...
	e.relay.Faults().DelayEOSE("live-2", time.Second) // the cold start's membership REQ
	e.run(p)
	cold := coldStartOps(2, 0)
	cold[OpLiveEOSE+" error"] = 1
	e.want(e.settle(cold), cold)

	// the renewal: every replay complete, no NIP-11; membership was never
	// caught up, so it is cut and every route establishes
	want := addOps(cold, map[string]int{OpLiveEOSE: 3, OpPresenceEOSE: 1, OpRoster: 1, OpReadState: 1, OpUnread: 1, OpReminders: 1,
		OpWindow: 3, OpNotices: 3, OpThreadRoot: 1, OpThreadWindow: 1})
	got := e.settle(want)
	e.stop()
	e.want(got, want)
}

// current renewals carry small sessions without reading anything.
func TestEndToEndCurrentRenewalOfASmallSessionReadsNothing(t *testing.T) {
	e := newE2E(t, 5)
	p := e.params(ModeCurrent)
	p.Renewal, p.RenewalPhase = 3*time.Second, 0.5 // renewals at 1.5 s, 4.5 s, ...
	e.run(p)
	cold := coldStartOps(3, 0)
	e.want(e.settle(cold), cold)
	want := addOps(cold, map[string]int{OpLiveEOSE: 3, OpPresenceEOSE: 1})
	got := e.settle(want)
	e.stop()
	e.want(got, want)
}

// A legacy tick replaces the batch live-only and rereads the roster and
// the unreads with their snapshot: exactly one of each, nothing else.
// Mutant "a legacy tick replaces only when the backstop is due" (the
// current rule) sends no replacement and fails.
func TestEndToEndLegacyTickReplacesAndRereads(t *testing.T) {
	e := newE2E(t, 5)
	p := e.params(ModeLegacy)
	p.Tick = 2 * time.Second // one tick inside the settle window
	e.run(p)
	cold := e.settle(coldStartOps(3, 0))
	e.want(cold, coldStartOps(3, 0))
	delta := map[string]int{OpLiveEOSE: 1, OpRoster: 1, OpReadState: 1, OpUnread: 1}
	got := withoutProbes(since(cold, e.settle(addOps(cold, delta))))
	e.stop()
	e.want(got, delta)
}

// A stop abandons pending EOSE waits and desktop reads without recording
// them.
func TestEndToEndAStopAbandonsPendingWaitsAndReadsWithoutRecordingThem(t *testing.T) {
	e := newE2E(t, 5)
	e.relay.Faults().WithholdEOSE("")
	e.relay.Faults().SetHTTPLatency(5 * time.Second)
	p := e.params(ModeLegacy) // legacy reads at connect: reads are in flight at once
	p.EOSETimeout = 10 * time.Second
	e.run(p)
	// REQs sent and reads waiting on the relay (its EOSEs withheld, its
	// HTTP answers 5 s away): the stop has work in flight to abandon.
	waitfor.Until(t, "REQs and reads at the relay", 10*time.Second, func() bool {
		return e.client.Conn() != nil && e.relay.Stats().REQs > 0 && e.relay.Faults().Held() > 0
	})
	start := time.Now()
	e.stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stop took %v", d)
	}
	for _, r := range e.sink.Results() {
		if r.Op == OpNIP11 || len(r.Op) < 8 || r.Op[:8] != "desktop_" {
			continue
		}
		t.Errorf("recorded after the stop: %s %s %s", r.Op, r.Outcome, r.Error)
	}
}

// A tick replacement past its EOSE deadline is closed, the old batch stays,
// and the next tick replaces it.
func TestEndToEndAReplacementPastItsDeadlineIsRetriedByTheNextTick(t *testing.T) {
	e := newE2E(t, 5)
	p := e.params(ModeLegacy)
	p.Tick = time.Second
	p.EOSETimeout = 700 * time.Millisecond
	// live-1..4 are the cold start's; live-5 is the first tick's replacement
	e.relay.Faults().DelayEOSE("live-5", 5*time.Second)
	e.run(p)
	cold := coldStartOps(3, 0)
	e.want(e.settle(cold), cold)
	want := addOps(cold, map[string]int{OpLiveEOSE + " error": 1, OpLiveEOSE: 1, OpRoster: 2, OpReadState: 2, OpUnread: 2})
	got := e.settle(want)
	e.stop()
	if got[OpLiveEOSE+" error"] != 1 || got[OpLiveEOSE] < 4 {
		t.Errorf("replacements: %v", got)
	}
	// one batch wire stays open: the model holds exactly one channel REQ
	for i := range e.client.model.routes {
		if r := e.client.model.routes[i]; r.Kind == RouteBatch && r.sub == "" {
			t.Error("no batch REQ left")
		}
	}
}

// Buzz, like the embedded relay by default, refuses more than 128 explicit
// channels in one REQ: the app's 2048-channel live-only REQ is refused (an
// error in the report, not a silent gap), and a 128 scope is accepted.
func TestEndToEndLiveOnlyScopeAgainstA128ChannelCap(t *testing.T) {
	e := newE2E(t, 130)
	p := e.params(ModeCurrent)
	e.run(p)
	want := coldStartOps(2, 13)
	want[OpLiveEOSE+" error"] = 1
	want[OpUnread] = 2 // 130 channels: two chunks of at most 128
	e.want(e.settle(want), want)
	e.stop()

	e2 := newE2E(t, 130)
	p.LiveOnlyScope = 128
	e2.run(p)
	want = coldStartOps(4, 13) // profiles, membership, live(128), live(2); and presence
	want[OpUnread] = 2
	e2.want(e2.settle(want), want)
}
