package scenario

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// scenarioSrc completes a snippet into a scenario: run_id unless it sets one,
// one ramp step unless it has its own.
func scenarioSrc(snippet string) string {
	src := snippet
	if !strings.Contains(snippet, "run_id") {
		src = "run_id = \"t\"\n" + src
	}
	if !strings.Contains(snippet, "[[ramp]]") && !strings.Contains(snippet, "ramp =") {
		src += "\n[[ramp]]\nusers = 1\nhold_secs = 10\n"
	}
	return src
}

func TestValidationNamesKeyPathAndReason(t *testing.T) {
	cases := []struct {
		rule, snippet, want string
	}{
		// target
		{"run_id is required", `run_id = ""`, "t.toml: run_id: is required"},
		{"run_id has no spaces", `run_id = "a b"`, "t.toml: run_id: must be 1-128 letters, digits, '.', '_' or '-'"},
		{"ws_url is ws or wss", "[target]\nws_url = \"http://x\"\nhttp_url = \"http://x\"", "t.toml: target.ws_url: is not a ws:// or wss:// URL"},
		{"http_url is http or https", "[target]\nws_url = \"ws://x\"\nhttp_url = \"ftp://x\"", "t.toml: target.http_url: is not a http:// or https:// URL"},
		{"http_url comes with ws_url", "[target]\nws_url = \"ws://x\"", "t.toml: target.http_url: is required when target.ws_url is set"},
		{"ws_url comes with http_url", "[target]\nhttp_url = \"http://x\"", "t.toml: target.ws_url: is required when target.http_url is set"},
		{"urls carry no credentials", "[target]\nws_url = \"ws://u:pw@x\"\nhttp_url = \"http://x\"", "t.toml: target.ws_url: must not carry credentials"},
		{"connect_addr is host:port", "[target]\nconnect_addr = \"relay\"", "t.toml: target.connect_addr: is not host:port"},
		{"connect_addr port in range", "[target]\nconnect_addr = \"relay:70000\"", "t.toml: target.connect_addr: has a port that is not 1-65535"},
		{"host template with a port while connect_addr is set",
			"[target]\nconnect_addr = \"10.0.0.1:3000\"\ncommunity_host_template = \"c{n}.example.com:8443\"\n[shape]\ncommunities = 2",
			"t.toml: target.community_host_template: has a port while target.connect_addr is set (the override maps host names, so HTTP would ignore the port)"},
		{"host template placeholders are {run} and {n}", "[target]\ncommunity_host_template = \"c{i}.example.com\"",
			"t.toml: target.community_host_template: has unknown placeholder {i} (only {run} and {n})"},
		{"host template has {n} for several communities", "[target]\ncommunity_host_template = \"load.example.com\"\n[shape]\ncommunities = 3",
			"t.toml: target.community_host_template: has no {n}, so all 3 communities would share one host"},
		{"host template expands to a host name", "[target]\ncommunity_host_template = \"c{n}_x.example.com\"",
			"t.toml: target.community_host_template: expands to a host that is not a valid host name"},
		{"host template is canonical (Buzz provisions only canonical hosts)", "[target]\ncommunity_host_template = \"C{n}.Example.com:443\"",
			`t.toml: target.community_host_template: expands to "C0.Example.com:443", which Buzz refuses to provision: host must be lower case (canonical: c0.example.com); write it as "c0.example.com"`},
		{"host template without a trailing dot", "[target]\ncommunity_host_template = \"c{n}.example.com.\"",
			`t.toml: target.community_host_template: expands to "c0.example.com.", which Buzz refuses to provision: host must not end with a dot (canonical: c0.example.com); write it as "c0.example.com"`},
		{"run_id is a host label when the template uses {run}", "run_id = \"Run_1\"\n[target]\ncommunity_host_template = \"{run}-{n}.example.com\"",
			"t.toml: run_id: must be lower-case letters, digits and '-' (a host name label) when the host template uses {run}"},
		{"connect timeout above 0", "[target]\nconnect_timeout_secs = 0", "t.toml: target.connect_timeout_secs: 0 is not above 0"},
		{"local IPs that do not parse", "[target]\nlocal_ips = \"127.0.0.1,127.0.0.x\"", `t.toml: target.local_ips: "127.0.0.x" is not an IP, a range or a CIDR`},
		{"operator key env is a variable name", "[target]\noperator_key_env = \"MY KEY\"", "t.toml: target.operator_key_env: is not an environment variable name"},
		// shape
		{"communities at least 1", "[shape]\ncommunities = 0", "t.toml: shape.communities: 0 is below 1"},
		{"channels per community at least 1", "[shape]\nchannels_per_community = 0\n[population]\nchannels_per_member = 0", "t.toml: shape.channels_per_community: 0 is below 1"},
		{"history is not negative", "[shape]\nhistory_messages_per_channel = -1", "t.toml: shape.history_messages_per_channel: -1 is below 0"},
		{"thread roots are not negative", "[shape]\nthread_roots_per_channel = -2", "t.toml: shape.thread_roots_per_channel: -2 is below 0"},
		{"thread depth at most 100", "[shape]\nthread_depth = 101", "t.toml: shape.thread_depth: 101 is above 100 (the relay rejects deeper threads)"},
		{"thread depth not negative", "[shape]\nthread_depth = -1", "t.toml: shape.thread_depth: -1 is below 0"},
		{"wide channels not more than channels", "[shape]\nchannels_per_community = 4\nwide_channels = 5\n[population]\nchannels_per_member = 0",
			"t.toml: shape.wide_channels: 5 is above shape.channels_per_community 4"},
		{"wide channels not negative", "[shape]\nwide_channels = -1", "t.toml: shape.wide_channels: -1 is below 0"},
		{"seed concurrency at least 1", "[shape]\nseed_concurrency = 0", "t.toml: shape.seed_concurrency: 0 is below 1"},
		// population
		{"humans not negative", "[population]\nhumans = -5", "t.toml: population.humans: -5 is below 0"},
		{"agents not negative", "[population]\nagents = -1", "t.toml: population.agents: -1 is below 0"},
		{"channels per member fit the regular channels", "[shape]\nchannels_per_community = 5\nwide_channels = 2\n[population]\nchannels_per_member = 4",
			"t.toml: population.channels_per_member: 4 is above the 3 regular channels of a community (channels_per_community - wide_channels)"},
		{"channels per member not negative", "[population]\nchannels_per_member = -1", "t.toml: population.channels_per_member: -1 is below 0"},
		{"wide member fraction at most 1", "[population]\nwide_member_fraction = 1.5", "t.toml: population.wide_member_fraction: 1.5 is above 1"},
		{"wide member fraction at least 0", "[population]\nwide_member_fraction = -0.1", "t.toml: population.wide_member_fraction: -0.1 is below 0"},
		{"wide activity share at most 1", "[population]\nwide_activity_share = 2", "t.toml: population.wide_activity_share: 2 is above 1"},
		{"fractions are finite", "[population]\nwide_member_fraction = nan", "t.toml: population.wide_member_fraction: NaN is not a finite number"},
		{"tier fraction at most 1", "[population]\ntiers = [{ fraction = 0.1, channels = 1 }, { fraction = 1.2, channels = 2 }]",
			"t.toml: population.tiers[1].fraction: 1.2 is above 1"},
		{"tier fraction at least 0", "[population]\ntiers = [{ fraction = -0.1, channels = 1 }]", "t.toml: population.tiers[0].fraction: -0.1 is below 0"},
		{"tier channels fit the regular channels", "[population]\ntiers = [{ fraction = 0.1, channels = 11 }]",
			"t.toml: population.tiers[0].channels: 11 is above the 10 regular channels of a community (channels_per_community - wide_channels)"},
		{"tier fractions sum to at most 1", "[population]\ntiers = [{ fraction = 0.6, channels = 1 }, { fraction = 0.5, channels = 2 }]",
			"t.toml: population.tiers: fractions sum to 1.1, above 1"},
		{"connect rate above 0", "[population]\nconnect_rate_per_sec = 0", "t.toml: population.connect_rate_per_sec: 0 is not above 0"},
		{"humans per VU at least 1", "[population]\nhumans_per_vu = 0", "t.toml: population.humans_per_vu: 0 is below 1"},
		{"humans per VU bounded", "[population]\nhumans_per_vu = 10001", "t.toml: population.humans_per_vu: 10001 is above 10000"},
		{"some client runs", "[population]\nhumans = 0\nagents = 0", "t.toml: population: humans, agents and hot_thread.authors are all 0, so no client would run"},
		// human
		{"presence interval at least 1", "[human]\npresence_interval_secs = 0.5", "t.toml: human.presence_interval_secs: 0.5 is below 1"},
		{"history limit not negative", "[human]\nhistory_limit = -1", "t.toml: human.history_limit: -1 is below 0"},
		{"thread reply fraction at most 1", "[human]\nthread_reply_fraction = 1.01", "t.toml: human.thread_reply_fraction: 1.01 is above 1"},
		{"mean session not negative", "[human]\nmean_session_secs = -1", "t.toml: human.mean_session_secs: -1 is below 0"},
		{"human rates not negative", "[human]\nmessages_per_hour = -3", "t.toml: human.messages_per_hour: -3 is below 0"},
		{"seconds are bounded", "[human]\nmean_session_secs = 1e12", "t.toml: human.mean_session_secs: 1000000000000 is above 100000000"},
		{"seconds are finite", "[human]\nmean_session_secs = inf", "t.toml: human.mean_session_secs: +Inf is not a finite number"},
		// agent
		{"agent presence 0 or at least 1", "[agent]\npresence_interval_secs = 0.2", "t.toml: agent.presence_interval_secs: 0.2 is below 1 (0 disables it)"},
		{"agent query interval not negative", "[agent]\nquery_interval_secs = -1", "t.toml: agent.query_interval_secs: -1 is below 0"},
		{"agent events not negative", "[agent]\nevents_per_hour = -1", "t.toml: agent.events_per_hour: -1 is below 0"},
		{"agent frames not negative", "[agent]\nobserver_frames_per_hour = -1", "t.toml: agent.observer_frames_per_hour: -1 is below 0"},
		{"turns per hour not negative", "[agent.turn]\nper_hour = -1", "t.toml: agent.turn.per_hour: -1 is below 0"},
		{"turn length above 0", "[agent.turn]\nmean_secs = 0", "t.toml: agent.turn.mean_secs: 0 is not above 0"},
		{"turn typing above 0", "[agent.turn]\ntyping_secs = 0", "t.toml: agent.turn.typing_secs: 0 is not above 0"},
		{"turn frames above 0", "[agent.turn]\nframe_secs = -1", "t.toml: agent.turn.frame_secs: -1 is not above 0"},
		{"frame bytes within NIP-44", "[agent.turn]\nframe_bytes = 70000", "t.toml: agent.turn.frame_bytes: 70000 is above 65535 (the NIP-44 plaintext limit)"},
		{"frame bytes at least 1", "[agent.turn]\nframe_bytes = 0", "t.toml: agent.turn.frame_bytes: 0 is below 1"},
		{"turn reads not negative", "[agent.turn]\nreads = -1", "t.toml: agent.turn.reads: -1 is below 0"},
		// hot thread
		{"hot seed replies not negative", "[hot_thread]\nseed_replies = -1", "t.toml: hot_thread.seed_replies: -1 is below 0"},
		{"hot authors not negative", "[hot_thread]\nauthors = -1", "t.toml: hot_thread.authors: -1 is below 0"},
		{"hot rates not negative", "[hot_thread]\nfetches_per_hour = -1", "t.toml: hot_thread.fetches_per_hour: -1 is below 0"},
		// desktop
		{"desktop fraction at most 1", "[desktop]\nfraction = 1.1", "t.toml: desktop.fraction: 1.1 is above 1"},
		{"desktop mode current or legacy", "[desktop]\nmode = \"new\"", "t.toml: desktop.mode: must be \"current\" or \"legacy\""},
		{"desktop windows not negative", "[desktop]\nwindows = -1", "t.toml: desktop.windows: -1 is below 0"},
		{"desktop threads not negative", "[desktop]\nthreads = -1", "t.toml: desktop.threads: -1 is below 0"},
		{"desktop tick at least 1", "[desktop]\ntick_secs = 0", "t.toml: desktop.tick_secs: 0 is below 1"},
		{"desktop backstop not negative", "[desktop]\nbackstop_secs = -1", "t.toml: desktop.backstop_secs: -1 is below 0"},
		{"desktop renewal not negative", "[desktop]\nrenewal_secs = -1", "t.toml: desktop.renewal_secs: -1 is below 0"},
		{"desktop live-only scope at least 1", "[desktop]\nlive_only_scope = 0", "t.toml: desktop.live_only_scope: 0 is below 1"},
		{"desktop live-only scope at most the app's 2048", "[desktop]\nlive_only_scope = 2049",
			"t.toml: desktop.live_only_scope: 2049 is above 2048 (the desktop app's scope)"},
		// ramp
		{"ramp has a step", "ramp = []", "t.toml: ramp: needs at least one [[ramp]] step"},
		{"ramp users never decrease", "[[ramp]]\nusers = 2\nhold_secs = 5\n[[ramp]]\nusers = 2\nhold_secs = 5\n[[ramp]]\nusers = 1\nhold_secs = 5",
			"t.toml: ramp[2].users: 1 is below ramp[1].users 2 (clients are only ever added, so users never decrease)"},
		{"ramp users above 0", "[[ramp]]\nusers = 0\nhold_secs = 5", "t.toml: ramp[0].users: 0 is not above 0"},
		{"ramp secs not negative", "[[ramp]]\nusers = 1\nramp_secs = -1\nhold_secs = 5", "t.toml: ramp[0].ramp_secs: -1 is below 0"},
		{"hold secs not negative", "[[ramp]]\nusers = 1\nhold_secs = -5", "t.toml: ramp[0].hold_secs: -5 is below 0"},
		{"a step has some length", "[[ramp]]\nusers = 1", "t.toml: ramp[0]: ramp_secs and hold_secs are both 0, so the step could not be judged"},
		{"peak clients bounded", "[[ramp]]\nusers = 1e7\nhold_secs = 1", "t.toml: ramp[0].users: 10000000 gives 1100000000 clients, above 100000000"},
		// abort
		{"abort p99 above 0", "[abort]\nmax_p99_ms = 0", "t.toml: abort.max_p99_ms: 0 is not above 0"},
		{"abort error rate at most 1", "[abort]\nmax_error_rate = 1.5", "t.toml: abort.max_error_rate: 1.5 is above 1"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			e := parseErr(t, scenarioSrc(c.snippet))
			if !containsLine(e.Error(), c.want) {
				t.Errorf("error\n%s\nlacks line\n%s", e.Error(), c.want)
			}
		})
	}
}

func TestValidationCollectsEveryError(t *testing.T) {
	e := parseErr(t, scenarioSrc(`[shape]
seed_concurrency = 0
thread_depth = 101
[human]
presence_interval_secs = 0
[population]
tiers = [{ fraction = 1.2, channels = 1 }]`))
	want := []string{
		"t.toml: shape.seed_concurrency: 0 is below 1",
		"t.toml: shape.thread_depth: 101 is above 100 (the relay rejects deeper threads)",
		"t.toml: human.presence_interval_secs: 0 is below 1",
		"t.toml: population.tiers[0].fraction: 1.2 is above 1",
		"t.toml: population.tiers: fractions sum to 1.2, above 1",
	}
	for _, w := range want {
		if !containsLine(e.Error(), w) {
			t.Errorf("error\n%s\nlacks line %q", e.Error(), w)
		}
	}
	if len(e.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(e.Problems), len(want), e.Error())
	}
}

func TestValidAtTheLimits(t *testing.T) {
	cases := []struct{ rule, snippet string }{
		{"thread depth 100", "[shape]\nthread_depth = 100"},
		{"all channels wide, members keep none of their own", "[shape]\nchannels_per_community = 3\nwide_channels = 3\n[population]\nchannels_per_member = 0"},
		{"tier fractions summing to exactly 1", "[population]\ntiers = [{ fraction = 0.7, channels = 1 }, { fraction = 0.2, channels = 2 }, { fraction = 0.1, channels = 3 }]"},
		{"presence interval exactly 1", "[human]\npresence_interval_secs = 1"},
		{"agent presence 0 disables it", "[agent]\npresence_interval_secs = 0"},
		{"repeated ramp level", "[[ramp]]\nusers = 2\nhold_secs = 600\n[[ramp]]\nusers = 2\nhold_secs = 600"},
		{"host template with a port and no connect_addr", "[target]\nws_url = \"ws://127.0.0.1:3000\"\nhttp_url = \"http://127.0.0.1:3000\"\ncommunity_host_template = \"c{n}.{run}.localhost:3000\""},
		{"host template without port and with connect_addr", "[target]\nws_url = \"wss://relay.example.com\"\nhttp_url = \"https://relay.example.com\"\nconnect_addr = \"buzz-relay.load.svc:3000\"\ncommunity_host_template = \"c{n}.{run}.load.example.com\""},
		{"only hot-thread authors", "[population]\nhumans = 0\nagents = 0\n[hot_thread]\nauthors = 1"},
		{"fractional users", "[[ramp]]\nusers = 0.5\nhold_secs = 1\n[[ramp]]\nusers = 1.5\nhold_secs = 1"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			mustParse(t, scenarioSrc(c.snippet))
		})
	}
}

func TestWarnings(t *testing.T) {
	cases := []struct{ rule, snippet, want string }{
		{"connect timeout not below the 15 s grace", "[target]\nconnect_timeout_secs = 15",
			"t.toml: target.connect_timeout_secs: 15 is not below the 15 s shutdown grace, so a stalled connect at the stop is cancelled (failing the run) instead of timing out"},
		{"connect_addr without a template", "[target]\nconnect_addr = \"127.0.0.1:3000\"", "t.toml: target.connect_addr: has no effect without target.community_host_template"},
		{"wide fraction without wide channels", "[population]\nwide_member_fraction = 0.5", "t.toml: population.wide_member_fraction: has no effect with shape.wide_channels = 0"},
		{"ramp faster than the connect rate", "[population]\nhumans = 100\nagents = 0\nconnect_rate_per_sec = 10\n[[ramp]]\nusers = 1\nramp_secs = 5\nhold_secs = 5",
			"t.toml: ramp[0].ramp_secs: 5 s is shorter than the 10 s that 100 new clients take at population.connect_rate_per_sec 10"},
		{"connect REQs beyond Buzz's WS admission", "[shape]\nchannels_per_community = 40\n[population]\nchannels_per_member = 30\n[human]\nhistory_limit = 20",
			"t.toml: population: a basic human in 30 channels sends 62 REQs at connect; Buzz admits 50 frames per 5 s per key, so buzzload paces them over about 5 s"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			w := mustParse(t, scenarioSrc(c.snippet)).Warnings()
			if !containsLine(strings.Join(w, "\n"), c.want) {
				t.Errorf("warnings %q lack %q", w, c.want)
			}
		})
	}
	long := "run_id = \"t\"\n[[ramp]]\nusers = 1\nhold_secs = 600\n"
	if w := mustParse(t, long).Warnings(); len(w) != 0 {
		t.Errorf("defaults warn: %q", w)
	}
}

// A run shorter than twice an interval that shapes it warns, naming the
// key (the soak tool's rule); an interval of exactly half the run, a key of
// clients the scenario does not run, or 0 (disabled), does not.
func TestShortRunWarnings(t *testing.T) {
	src := scenarioSrc(`[population]
humans = 4
agents = 1
[human]
mean_session_secs = 120
presence_interval_secs = 15
[agent]
presence_interval_secs = 90
[agent.turn]
per_hour = 60
mean_secs = 16
[desktop]
fraction = 1
tick_secs = 15
backstop_secs = 40
renewal_secs = 0
[abort]
warmup_secs = 50
[[ramp]]
users = 1
ramp_secs = 5
hold_secs = 25
`)
	w := strings.Join(mustParse(t, src).Warnings(), "\n")
	for _, want := range []string{
		"t.toml: desktop.backstop_secs: 40 s is more than half the run (30 s): fewer than two current-mode backstops fit",
		"t.toml: human.mean_session_secs: 120 s is more than half the run (30 s): fewer than two mean sessions fit, so reconnect churn is barely measured",
		"t.toml: agent.turn.mean_secs: 16 s is more than half the run (30 s): fewer than two mean agent turns fit, so replies and clean-up are barely measured",
		"t.toml: agent.presence_interval_secs: 90 s is more than half the run (30 s): fewer than two presence heartbeats per agent fit",
		"t.toml: abort.warmup_secs: 50 s covers the whole run (30 s): nothing is judged",
	} {
		if !containsLine(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	for _, not := range []string{"desktop.tick_secs", "desktop.renewal_secs", "human.presence_interval_secs"} {
		if strings.Contains(w, not) {
			t.Errorf("warns about %s (at most half the run, or disabled):\n%s", not, w)
		}
	}
	// No agents: the agent keys do not warn.
	noAgents := strings.Replace(src, "agents = 1", "agents = 0", 1)
	if w := strings.Join(mustParse(t, noAgents).Warnings(), "\n"); strings.Contains(w, "agent.") {
		t.Errorf("warns about agent keys without agents:\n%s", w)
	}
}

// SetDuration cuts the ramp inside a step's ramp or hold, lengthens the
// last hold, and leaves the ramp alone for 0.
func TestSetDuration(t *testing.T) {
	src := scenarioSrc("[[ramp]]\nusers = 1\nramp_secs = 10\nhold_secs = 20\n[[ramp]]\nusers = 2\nramp_secs = 10\nhold_secs = 20\n")
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "[{1 10 20} {2 10 20}]"},
		{5 * time.Second, "[{1 5 0}]"},
		{35 * time.Second, "[{1 10 20} {2 5 0}]"},
		{45 * time.Second, "[{1 10 20} {2 10 5}]"},
		{100 * time.Second, "[{1 10 20} {2 10 60}]"},
	} {
		s := mustParse(t, src)
		s.SetDuration(c.d)
		var got []string
		for _, st := range s.Ramp {
			got = append(got, fmt.Sprintf("{%v %v %v}", st.Users, st.RampSecs, st.HoldSecs))
		}
		if g := "[" + strings.Join(got, " ") + "]"; g != c.want {
			t.Errorf("SetDuration(%v): %s, want %s", c.d, g, c.want)
		}
		if c.d > 0 && s.Duration() != c.d {
			t.Errorf("SetDuration(%v): the run is %v", c.d, s.Duration())
		}
	}
}
