package desktop

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relayclient/relayclienttest"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

const deskShape = `
[shape]
communities = 1
channels_per_community = 25
private_channels = true
history_messages_per_channel = 21
thread_roots_per_channel = 1
thread_depth = 2

[population]
humans = 6
agents = 0
channels_per_member = 3
tiers = [{ fraction = 0.5, channels = 25 }]

[human]
messages_per_hour = 0
typing_per_hour = 0
reactions_per_hour = 0

[desktop]
fraction = 1.0
mode = "%s"
renewal_secs = 300

[[ramp]]
users = 1
hold_secs = 10
`

func deskScenario(t *testing.T, addr, mode string) *scenario.Scenario {
	t.Helper()
	src := fmt.Sprintf(`run_id = %q
[target]
ws_url = "ws://%s"
http_url = "http://%s"
connect_addr = %q
community_host_template = "c{n}.{run}.test"
`, "desk-"+mode, addr, addr, addr) + fmt.Sprintf(deskShape, mode)
	sc, err := scenario.Parse("test.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestConfigForResolvesTheScenariosDesktopHuman(t *testing.T) {
	sc := deskScenario(t, "127.0.0.1:1", "legacy")
	var g25, g3 = -1, -1
	for i := 0; i < 6; i++ {
		g := sc.GlobalIndex(scenario.KindDesktop, i)
		switch len(sc.MemberChannels(g)) {
		case 25:
			g25 = g
		case 3:
			g3 = g
		}
	}
	if g25 < 0 || g3 < 0 {
		t.Fatal("no tiered desktop humans")
	}
	cfg, err := ConfigFor(HumanConfig{Scenario: sc, Global: g25})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params.Mode != ModeLegacy || cfg.Params.Tick != 60*time.Second || cfg.Params.Backstop != 900*time.Second ||
		cfg.Params.Renewal != 300*time.Second || cfg.Params.Windows != 3 || cfg.Params.Threads != 1 {
		t.Errorf("params %+v", cfg.Params)
	}
	var want []string
	for _, ch := range sc.MemberChannels(g25) {
		want = append(want, sc.ChannelID(ch))
	}
	if !slices.Equal(cfg.Channels, want) || !slices.Equal(cfg.Params.Channels, want) {
		t.Error("channels are not the member channels in order")
	}
	if cfg.Keys.PubKey() != sc.Keys(g25).PubKey() {
		t.Error("keys")
	}
	if co := cfg.LoadCoMembers(); slices.Contains(co, cfg.Keys.PubKey()) || len(co) == 0 {
		t.Errorf("co-members %d, self included %v", len(co), slices.Contains(co, cfg.Keys.PubKey()))
	}
	if cfg.RootMarker != scenario.RootMarker(sc.RunID) {
		t.Error("root marker")
	}
	if cfg.Target.Host != sc.Endpoint(0).Host || cfg.Target.ConnectAddr != "127.0.0.1:1" {
		t.Errorf("target %+v", cfg.Target)
	}
	if ph := cfg.Params.RenewalPhase; ph <= 0 || ph > 1 || ph != RenewalPhase(sc.RunID, g25) || ph == RenewalPhase(sc.RunID, g3) {
		t.Errorf("renewal phase %v", ph)
	}
	if _, err := ConfigFor(HumanConfig{Scenario: sc, Global: -1}); err == nil {
		t.Error("a non-client index was accepted")
	}
}

func TestKeyMemoPubKeysMatchTheScenariosKeys(t *testing.T) {
	sc := deskScenario(t, "127.0.0.1:1", "current")
	pk := scenario.NewKeyMemo(sc).PubKey
	g := sc.GlobalIndex(scenario.KindDesktop, 2)
	first, memoised := pk(g), pk(g) // the second call reads the memo
	if first != sc.Keys(g).PubKey() || memoised != first {
		t.Error("pubkey")
	}
	if pk(-1) != "" {
		t.Error("a non-client has a key")
	}
	a, _ := ConfigFor(HumanConfig{Scenario: sc, Global: g})
	b, _ := ConfigFor(HumanConfig{Scenario: sc, Global: g, PubKey: pk})
	if !slices.Equal(a.CoMembers, b.CoMembers) {
		t.Error("a cache changes the co-members")
	}
}

func TestRenewalPhasesSpreadOverThePeriod(t *testing.T) {
	var buckets [10]int
	for g := 0; g < 10000; g++ {
		ph := RenewalPhase("run", g)
		if ph <= 0 || ph > 1 {
			t.Fatalf("phase %v", ph)
		}
		buckets[min(int(ph*10), 9)]++
	}
	for i, n := range buckets {
		if n < 800 || n > 1200 {
			t.Errorf("decile %d holds %d of 10000", i, n)
		}
	}
}

// A seeded scenario on the embedded relay: each desktop human's cold start
// makes exactly the planned reads, all answered, and finds the seeded roots.
func TestEndToEndSeededDesktopHumansColdStart(t *testing.T) {
	r := startLocalRelay(t)
	seeded := deskScenario(t, r.Addr(), "current")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := seed.Seed(ctx, seeded, seed.Options{Operator: r.OperatorKeys()}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"legacy", "current"} {
		for _, n := range []int{3, 25} {
			t.Run(fmt.Sprintf("%s %d channels", mode, n), func(t *testing.T) {
				sc := *seeded
				sc.Desktop.Mode = mode
				g := -1
				for i := 0; i < 6 && g < 0; i++ {
					if gi := sc.GlobalIndex(scenario.KindDesktop, i); len(sc.MemberChannels(gi)) == n {
						g = gi
					}
				}
				sink := &relayclienttest.CollectSink{}
				h, err := NewHuman(HumanConfig{Scenario: &sc, Global: g, Sink: sink})
				if err != nil {
					t.Fatal(err)
				}
				stop, halt := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- h.Run(stop, nil) }()
				live, replay := 3, 0 // and a presence REQ
				if n > 10 {
					live = 5
					if mode == "current" {
						live, replay = 3, 3
					}
				}
				// 21 top-level rows per channel: a head page with has_more,
				// then one older page that exhausts history
				want := map[string]int{OpNIP11: 1, OpLiveEOSE: live, OpPresenceEOSE: 1, OpRoster: 1, OpMetadata: 1, OpSidebar: 1, OpProfiles: 1,
					OpStatuses: 1, OpEmoji: 1, OpReadState: 1, OpUnread: 1, OpReminders: 1, OpWindow: 6, OpNotices: 3,
					relayclient.OpHTTPQuery: 1, OpThreadRoot: 1, OpThreadWindow: 1} // the marked-root search, then the lookup by id
				if replay > 0 {
					want[OpReplayEOSE] = replay
				}
				e := &e2e{t: t, sink: sink}
				got := e.settle(want)
				halt()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
				e.want(got, want)
			})
		}
	}
	// last: its messages change the channels' history
	t.Run("the activity runs on the desktop socket", func(t *testing.T) {
		sc := *seeded
		sc.Human.MessagesPerHour = 7200 // one every half second
		sc.Human.MeanSessionSecs = 1    // and session ends: ordinary reconnects
		g := sc.GlobalIndex(scenario.KindDesktop, 0)
		sink := &relayclienttest.CollectSink{}
		h, err := NewHuman(HumanConfig{Scenario: &sc, Global: g, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		stop, halt := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.Run(stop, nil) }()
		waitfor.Within(10*time.Second, func() bool {
			return sink.Count("publish", relayclient.OutcomeOK) >= 3 && sink.Count(models.OpDeliver, relayclient.OutcomeOK) >= 1 && sink.Count(OpNIP11, relayclient.OutcomeOK) >= 2
		})
		halt()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if n := sink.Count("publish", relayclient.OutcomeOK); n < 3 {
			t.Errorf("%d messages published", n)
		}
		if n := sink.Count(models.OpDeliver, relayclient.OutcomeOK); n < 1 {
			t.Error("no delivery recorded from the desktop's channel subscriptions")
		}
		if n := sink.Count(OpNIP11, relayclient.OutcomeOK); n < 2 {
			t.Error("the schedule's session end did not reconnect")
		}
		for _, r := range sink.Results() {
			if r.Outcome == relayclient.OutcomeError {
				t.Errorf("%s: %s", r.Op, r.Error)
			}
		}
	})
}

func TestStopAndGraceSinks(t *testing.T) {
	inner := &relayclienttest.CollectSink{}
	grace := &graceSink{inner: inner}
	stopped, stopNow := context.WithCancel(context.Background())
	stop := &stopSink{inner: grace, stop: stopped}
	rec := func(op string, o relayclient.Outcome) {
		stop.Record(relayclient.Result{Op: op, Outcome: o, Error: "cut"})
	}

	stopNow()
	rec(OpLiveEOSE, relayclient.OutcomePending) // an abandoned EOSE wait: dropped
	rec(OpWindow, relayclient.OutcomePending)   // an abandoned read: dropped
	rec(OpWindow, relayclient.OutcomeOK)        // a read that finished: kept
	rec("publish", relayclient.OutcomePending)  // a publish cut short: the caller's
	if got := len(inner.Results()); got != 2 {
		t.Fatalf("%d recorded, want 2: %v", got, inner.Results())
	}
	grace.ended.Store(true)
	rec("publish", relayclient.OutcomePending)
	rec("connect", relayclient.OutcomeError)
	rec("publish", relayclient.OutcomeThrottled)
	if n := inner.Count("publish", relayclient.OutcomeError) + inner.Count("connect", relayclient.OutcomeError); n != 2 {
		t.Errorf("%d unfinished errors, want 2", n)
	}
	for _, r := range inner.Results()[2:4] {
		if r.Error != "unfinished at stop: cut" {
			t.Errorf("error %q", r.Error)
		}
	}
	if inner.Count("publish", relayclient.OutcomeThrottled) != 1 {
		t.Error("a throttle after the grace is still a throttle")
	}
	// The activity's root search the session closed is abandoned, as in
	// modules/models, not unfinished.
	stop.Record(relayclient.Result{Op: "history", Outcome: relayclient.OutcomePending, Error: relayclient.ClosedBeforeEOSE})
	if r := inner.Results()[len(inner.Results())-1]; r.Outcome != relayclient.OutcomePending || r.Error != relayclient.ClosedBeforeEOSE {
		t.Errorf("a root search closed before EOSE after the grace: %s %q", r.Outcome, r.Error)
	}
}

// wideTOML: one channel of 1300 desktop humans, each with 1299 co-members.
const wideTOML = `run_id = "desk-wide"
[target]
ws_url = "ws://127.0.0.1:1"
http_url = "http://127.0.0.1:1"
community_host_template = "c{n}.{run}.test"
[shape]
communities = 1
channels_per_community = 1
history_messages_per_channel = 0
thread_roots_per_channel = 0
thread_depth = 0
[population]
humans = 1300
agents = 0
channels_per_member = 1
[human]
messages_per_hour = 0
typing_per_hour = 0
reactions_per_hour = 0
[desktop]
fraction = 1.0
%s
[[ramp]]
users = 1
hold_secs = 10
`

// A desktop human in a wide channel reads the profile and status of every
// distinct co-member, ⌈M/500⌉ and ⌈M/100⌉ requests, while presence
// watches 256 of them; desktop.co_member_limit bounds it. Fails on the old
// code (audit desktop.md #28/29: 256 co-members, so 1 and 3 requests).
func TestWideChannelsReadEveryCoMember(t *testing.T) {
	for _, c := range []struct {
		knob                   string
		co, profiles, statuses int
	}{
		{"", 1299, 3, 13},
		{"co_member_limit = 1000", 1000, 2, 10},
	} {
		sc, err := scenario.Parse("wide.toml", []byte(fmt.Sprintf(wideTOML, c.knob)))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ConfigFor(HumanConfig{Scenario: sc, Global: sc.GlobalIndex(scenario.KindDesktop, 0)})
		if err != nil {
			t.Fatal(err)
		}
		co := cfg.LoadCoMembers()
		if len(cfg.CoMembers) != 0 || len(co) != c.co {
			t.Errorf("%q: %d co-members (%d held), want %d, none held", c.knob, len(co), len(cfg.CoMembers), c.co)
		}
		id := &Identity{Viewer: cfg.Keys.PubKey(), Channels: cfg.Channels, LoadCoMembers: cfg.LoadCoMembers}
		if n := len(id.PresenceAuthors()); n != PresenceMax {
			t.Errorf("%q: presence watches %d, want %d", c.knob, n, PresenceMax)
		}
		count := func(k ReadKind) int { return len(FixedRequests(Read{Key: ReadKey{Kind: k}}, id)) }
		if p, s := count(ReadProfiles), count(ReadStatuses); p != c.profiles || s != c.statuses {
			t.Errorf("%q: %d profile and %d status requests, want %d and %d", c.knob, p, s, c.profiles, c.statuses)
		}
		if p, s := len(Read{Key: ReadKey{Kind: ReadProfiles}}.Requests(1, len(co))), len(Read{Key: ReadKey{Kind: ReadStatuses}}.Requests(1, len(co))); p != c.profiles || s != c.statuses {
			t.Errorf("%q: the planned counts %d and %d differ from the wire's", c.knob, p, s)
		}
	}
}
