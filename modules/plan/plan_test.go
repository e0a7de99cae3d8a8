package plan

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/scenario"
)

func load(t *testing.T, toml string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("plan_test.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// allAt starts every client of the scenario's largest step at offset at.
func allAt(sc *scenario.Scenario, at time.Duration) [scenario.NumKinds][]time.Duration {
	var s [scenario.NumKinds][]time.Duration
	for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
		for range sc.Clients(k, sc.PeakUsers(), scenario.Shard{}) {
			s[k] = append(s[k], at)
		}
	}
	return s
}

const oneChannel = `
run_id = "plan-one-channel"
[shape]
communities = 1
channels_per_community = 1
history_messages_per_channel = 5
thread_roots_per_channel = 0
thread_depth = 0
[population]
humans = 6
agents = 0
channels_per_member = 1
[human]
history_limit = 0
presence_interval_secs = 60
typing_per_hour = 0
messages_per_hour = 120
reactions_per_hour = 0
thread_reply_fraction = 0
mean_session_secs = 0
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 600
`

func run(t *testing.T, cfg Config) *Result {
	t.Helper()
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func kindCount(r *Result, k string) float64 { return find(r.Kinds, k).Count }

func TestEveryMessageReachesEachConnectedMember(t *testing.T) {
	sc := load(t, oneChannel)
	r := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 10 * time.Minute})
	msgs := kindCount(r, "kind 9")
	if msgs < 50 { // 6 people × 2/min × 10 min ≈ 120
		t.Fatalf("only %v messages", msgs)
	}
	if got, want := r.Op("deliver").Count, 6*msgs; got != want {
		t.Errorf("deliver = %v, want 6 members × %v messages = %v", got, msgs, want)
	}
	if r.Largest.Members != 6 || r.Largest.FanOut != 6 {
		t.Errorf("largest channel %+v: want 6 members and a fan-out of 6", r.Largest)
	}
	// one REQ per channel, one for mentions, one for presence: 3 per person
	if got := r.Op("subscribe_eose").Count; got != 18 {
		t.Errorf("subscribe_eose = %v, want 18", got)
	}
	if r.Connections.Peak != 6 || math.Abs(r.Connections.Mean-6) > 1e-9 {
		t.Errorf("connections %+v, want 6 throughout", r.Connections)
	}
}

func TestMembersWhoJoinLaterMissEarlierMessages(t *testing.T) {
	sc := load(t, oneChannel)
	starts := allAt(sc, 0)
	for i := 3; i < 6; i++ { // half the people arrive at 5 minutes
		starts[scenario.KindHuman][i] = 5 * time.Minute
	}
	r := run(t, Config{Scenario: sc, Starts: starts, Duration: 10 * time.Minute})
	msgs := kindCount(r, "kind 9")
	if got := r.Op("deliver").Count; got >= 6*msgs || got <= 3*msgs {
		t.Errorf("deliver = %v for %v messages: want between 3 and 6 per message", got, msgs)
	}
	if r.Connections.Mean >= 5 || r.Connections.Peak != 6 {
		t.Errorf("connections %+v: want a mean near 4.5 and a peak of 6", r.Connections)
	}
}

func TestPublishCountsEverySocketEvent(t *testing.T) {
	sc := load(t, strings.Replace(oneChannel, "typing_per_hour = 0", "typing_per_hour = 300", 1))
	r := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 10 * time.Minute})
	sum := 0.0
	for _, k := range r.Kinds {
		sum += k.Count
	}
	if pub := r.Op("publish").Count; pub != sum || kindCount(r, "kind 20002") == 0 {
		t.Errorf("publish = %v, events by kind add up to %v (typing %v)", pub, sum, kindCount(r, "kind 20002"))
	}
	// presence every minute from each connection's start
	if got := kindCount(r, "kind 20001"); got != 60 {
		t.Errorf("presence = %v, want 6 people × 10", got)
	}
}

func TestSessionEndsReconnect(t *testing.T) {
	sc := load(t, strings.Replace(oneChannel, "mean_session_secs = 0", "mean_session_secs = 60", 1))
	r := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 10 * time.Minute})
	churn := find(r.Connects, "session end").Count
	if churn < 20 { // ≈ 6 × 10 expected
		t.Errorf("%v reconnects after session ends, want about 60", churn)
	}
	if got := r.Op("connect").Count; got != 6+churn {
		t.Errorf("connect = %v, want 6 starts + %v", got, churn)
	}
}

const desktopTOML = `
run_id = "plan-desktop"
[shape]
communities = 1
channels_per_community = 30
history_messages_per_channel = 25
thread_roots_per_channel = 1
thread_depth = 3
[population]
humans = 10
agents = 0
channels_per_member = 20
[human]
presence_interval_secs = 30
messages_per_hour = 30
[desktop]
fraction = 1
mode = "current"
tick_secs = 60
backstop_secs = 300
renewal_secs = 600
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 1800
`

func TestDesktopRenewalsReconnectInLegacyAndCarryRoutesInCurrent(t *testing.T) {
	for _, mode := range []string{"legacy", "current"} {
		sc := load(t, strings.Replace(desktopTOML, `mode = "current"`, `mode = "`+mode+`"`, 1))
		r := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 30 * time.Minute})
		renewals, reconnects := find(r.Connects, "renewal").Count, find(r.Connects, "reconnect").Count
		nip11 := r.Op("desktop_nip11").Count
		switch mode {
		case "legacy":
			if renewals != 0 || reconnects < 20 || nip11 != 10+reconnects {
				t.Errorf("legacy: %v renewals, %v reconnects, %v NIP-11 reads: a legacy renewal is a reconnect with its NIP-11 read", renewals, reconnects, nip11)
			}
		case "current":
			if renewals < 20 || reconnects != 0 || nip11 != 10 {
				t.Errorf("current: %v renewals, %v reconnects, %v NIP-11 reads: a current renewal carries its routes and reads no NIP-11", renewals, reconnects, nip11)
			}
			// 20 channels: a live-only REQ naming all 20 plus replays of ≤ 10
			if r.HPerREQ.Peak != 20 {
				t.Errorf("current: at most %v #h per REQ, want 20 (the live-only REQ)", r.HPerREQ.Peak)
			}
		}
	}
}

func TestFailuresCostRetries(t *testing.T) {
	sc := load(t, desktopTOML)
	ok := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 30 * time.Minute})
	bad := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 30 * time.Minute, FailRate: 0.3})
	// current: the roster waits for the backstop, but a failed roster read
	// is owed and retried at the next tick
	if b, g := bad.Op("desktop_roster").Count, ok.Op("desktop_roster").Count; b <= g {
		t.Errorf("desktop_roster: %v with 30%% failures, %v without: failed reads are retried at the next tick", b, g)
	}
}

func TestConfigErrors(t *testing.T) {
	sc := load(t, oneChannel)
	for _, c := range []Config{
		{Duration: time.Minute},
		{Scenario: sc},
		{Scenario: sc, Duration: time.Minute, FailRate: 1.5},
		{Scenario: sc, Duration: time.Minute, Latency: -1},
	} {
		if _, err := Run(c); err == nil {
			t.Errorf("Run(%+v) did not fail", c)
		}
	}
}

const agentTOML = `
run_id = "plan-agents"
[shape]
communities = 1
channels_per_community = 4
history_messages_per_channel = 10
thread_roots_per_channel = 1
thread_depth = 20
[population]
humans = 0
agents = 3
channels_per_member = 2
[agent]
query_interval_secs = 10
events_per_hour = 0
observer_frames_per_hour = 0
presence_interval_secs = 60
[agent.turn]
per_hour = 30
mean_secs = 20
reads = 2
typing_secs = 5
frame_secs = 2
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 1800
`

func TestAgentsRunTheirTurnModel(t *testing.T) {
	sc := load(t, agentTOML)
	r := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 30 * time.Minute})
	// polls every 10 s from the start, one HTTP sequence per agent
	if got := r.Op("http_query").Count; got < 3*180 {
		t.Errorf("http_query = %v, want at least 3 agents × 180 polls", got)
	}
	// each finished turn: one reply, two reactions, two deletions (http_events)
	// and at least metadata, project, repo and profile reads (turn_context)
	replies := kindCount(r, "kind 9")
	if replies < 10 {
		t.Fatalf("only %v turn replies in 30 minutes at 30 turns/h × 3 agents", replies)
	}
	if d, re := kindCount(r, "kind 5"), kindCount(r, "kind 7"); d != re || re < 2*(replies-3) || re > 2*(replies+3) {
		t.Errorf("%v reactions, %v deletions for %v replies: a turn posts two reactions and removes both", re, d, replies)
	}
	// threads have 20 replies, more than the 13 a turn reads, so every
	// threaded turn adds a /count
	if find(r.Endpoints, "HTTP POST /count").Count == 0 {
		t.Errorf("no /count: a thread read that returns all 13 replies is followed by a count")
	}
	if got := r.Op("turn_context").Count; got < 4*replies {
		t.Errorf("turn_context = %v for %v turns: want at least 4 context reads a turn", got, replies)
	}
	if kindCount(r, "kind 20002") == 0 || kindCount(r, "kind 24200") == 0 {
		t.Errorf("a turn's work types and sends frames: kinds %+v", r.Kinds)
	}
}

func TestShardedSimulationCountsWhatOneDoes(t *testing.T) {
	sc := load(t, strings.Replace(oneChannel, "mean_session_secs = 0", "mean_session_secs = 120", 1))
	starts := allAt(sc, 0)
	for i := range starts[scenario.KindHuman] {
		starts[scenario.KindHuman][i] = time.Duration(i) * 7 * time.Second
	}
	one := run(t, Config{Scenario: sc, Starts: starts, Duration: 10 * time.Minute})
	two := run(t, Config{Scenario: sc, Starts: starts, Duration: 10 * time.Minute, Shards: 2})
	for _, op := range one.Ops {
		if got := two.Op(op.Name).Count; got != op.Count {
			t.Errorf("%s: %v in two shards, %v in one", op.Name, got, op.Count)
		}
	}
	if one.Op("deliver").Count == 0 || one.Deliveries != two.Deliveries {
		t.Errorf("deliveries: one %+v, two %+v", one.Deliveries, two.Deliveries)
	}
	if one.Connections != two.Connections || one.Subscriptions != two.Subscriptions {
		t.Errorf("levels: one %+v %+v, two %+v %+v", one.Connections, one.Subscriptions, two.Connections, two.Subscriptions)
	}
	if one.Largest != two.Largest {
		t.Errorf("largest channel: one %+v, two %+v", one.Largest, two.Largest)
	}
}

func TestShardedDesktopsStayClose(t *testing.T) {
	sc := load(t, desktopTOML)
	one := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 30 * time.Minute})
	two := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 30 * time.Minute, Shards: 2})
	for _, op := range one.Ops {
		if got := two.Op(op.Name).Count; math.Abs(got-op.Count) > 0.02*op.Count+1 {
			t.Errorf("%s: %v in two shards, %v in one", op.Name, got, op.Count)
		}
	}
}

// plan counts a wide channel's profile and status reads as the desktop
// model makes them: every co-member, bounded by desktop.co_member_limit
// (audit desktop.md #28/29: it counted 256). Fails on the old code.
func TestDesktopReadsEveryCoMember(t *testing.T) {
	const wide = `run_id = "plan-wide"
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
mean_session_secs = 0
[desktop]
fraction = 1.0
[[ramp]]
users = 1
hold_secs = 10
`
	sc := load(t, wide)
	r := run(t, Config{Scenario: sc, Starts: allAt(sc, 0), Duration: 10 * time.Second})
	if p, s := r.Op("desktop_profiles").Count, r.Op("desktop_statuses").Count; p != 1300*3 || s != 1300*13 {
		t.Errorf("cold starts of 1300 clients with 1299 co-members: %v profile and %v status requests, want %d and %d", p, s, 1300*3, 1300*13)
	}
}
