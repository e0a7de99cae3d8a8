package scenario

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// minimal is the smallest valid scenario: run_id and one ramp step.
const minimal = `run_id = "t"
[[ramp]]
users = 1
hold_secs = 10
`

func mustParse(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Parse("t.toml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return s
}

func parseErr(t *testing.T, src string) *Error {
	t.Helper()
	_, err := Parse("t.toml", []byte(src))
	if err == nil {
		t.Fatalf("parse succeeded, want an error")
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *Error", err, err)
	}
	return e
}

func TestEveryKeyHasItsDefault(t *testing.T) {
	s := mustParse(t, minimal)
	cases := []struct {
		key       string
		got, want any
	}{
		{"target.ws_url", s.Target.WSURL, ""},
		{"target.http_url", s.Target.HTTPURL, ""},
		{"target.connect_addr", s.Target.ConnectAddr, ""},
		{"target.community_host_template", s.Target.CommunityHostTemplate, ""},
		{"target.connect_timeout_secs", s.Target.ConnectTimeoutSecs, 10.0},
		{"target.operator_key_env", s.Target.OperatorKeyEnv, "BUZZLOAD_OPERATOR_KEY"},
		{"target.operator_key_file", s.Target.OperatorKeyFile, ""},
		{"shape.communities", s.Shape.Communities, 1},
		{"shape.channels_per_community", s.Shape.ChannelsPerCommunity, 10},
		{"shape.history_messages_per_channel", s.Shape.HistoryMessagesPerChannel, 100},
		{"shape.thread_roots_per_channel", s.Shape.ThreadRootsPerChannel, 2},
		{"shape.thread_depth", s.Shape.ThreadDepth, 10},
		{"shape.private_channels", s.Shape.PrivateChannels, false},
		{"shape.wide_channels", s.Shape.WideChannels, 0},
		{"shape.seed_concurrency", s.Shape.SeedConcurrency, 16},
		{"population.humans", s.Population.Humans, 100},
		{"population.agents", s.Population.Agents, 10},
		{"population.channels_per_member", s.Population.ChannelsPerMember, 3},
		{"population.wide_member_fraction", s.Population.WideMemberFraction, 0.0},
		{"population.wide_activity_share unset", s.Population.WideActivityShare == nil, true},
		{"population.tiers", len(s.Population.Tiers), 0},
		{"population.connect_rate_per_sec", s.Population.ConnectRatePerSec, 50.0},
		{"human.history_limit", s.Human.HistoryLimit, 50},
		{"human.thread_reply_fraction", s.Human.ThreadReplyFraction, 0.2},
		{"human.mean_session_secs", s.Human.MeanSessionSecs, 0.0},
		{"human.presence_interval_secs", s.Human.PresenceIntervalSecs, 30.0},
		{"human.typing_per_hour", s.Human.TypingPerHour, 60.0},
		{"human.messages_per_hour", s.Human.MessagesPerHour, 20.0},
		{"human.reactions_per_hour", s.Human.ReactionsPerHour, 10.0},
		{"agent.channel_subscriptions", s.Agent.ChannelSubscriptions, false},
		{"agent.presence_interval_secs", s.Agent.PresenceIntervalSecs, 0.0},
		{"agent.query_interval_secs", s.Agent.QueryIntervalSecs, 10.0},
		{"agent.events_per_hour", s.Agent.EventsPerHour, 30.0},
		{"agent.observer_frames_per_hour", s.Agent.ObserverFramesPerHour, 60.0},
		{"agent.turn.per_hour", s.Agent.Turn.PerHour, 0.0},
		{"agent.turn.mean_secs", s.Agent.Turn.MeanSecs, 60.0},
		{"agent.turn.typing_secs", s.Agent.Turn.TypingSecs, 5.0},
		{"agent.turn.frame_secs", s.Agent.Turn.FrameSecs, 2.0},
		{"agent.turn.frame_bytes", s.Agent.Turn.FrameBytes, 512},
		{"agent.turn.reads", s.Agent.Turn.Reads, 3},
		{"hot_thread.seed_replies", s.HotThread.SeedReplies, 0},
		{"hot_thread.authors", s.HotThread.Authors, 0},
		{"hot_thread.replies_per_hour", s.HotThread.RepliesPerHour, 60.0},
		{"hot_thread.fetches_per_hour", s.HotThread.FetchesPerHour, 60.0},
		{"desktop.fraction", s.Desktop.Fraction, 0.0},
		{"desktop.mode", s.Desktop.Mode, "current"},
		{"desktop.windows", s.Desktop.Windows, 3},
		{"desktop.threads", s.Desktop.Threads, 1},
		{"desktop.tick_secs", s.Desktop.TickSecs, 60.0},
		{"desktop.backstop_secs", s.Desktop.BackstopSecs, 900.0},
		{"desktop.renewal_secs", s.Desktop.RenewalSecs, 0.0},
		{"desktop.live_only_scope", s.Desktop.LiveOnlyScope, 128},
		{"abort.max_p99_ms", s.Abort.MaxP99Ms, 5000.0},
		{"abort.max_error_rate", s.Abort.MaxErrorRate, 0.01},
		{"ramp[0].ramp_secs", s.Ramp[0].RampSecs, 0.0},
		{"file", s.File, "t.toml"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("%s = %#v, want %#v", c.key, c.got, c.want)
			}
		})
	}
}

func TestGivenKeysOverrideDefaults(t *testing.T) {
	s := mustParse(t, `run_id = "r"
[population]
humans = 7
wide_activity_share = 0
tiers = [{ fraction = 0.5, channels = 2 }]
[desktop]
mode = "legacy"
[agent.turn]
per_hour = 3
[[ramp]]
users = 1
ramp_secs = 2.5
hold_secs = 4
[[ramp]]
users = 3
hold_secs = 1
`)
	if s.Population.Humans != 7 || s.Population.Agents != 10 {
		t.Errorf("humans/agents = %d/%d, want 7/10", s.Population.Humans, s.Population.Agents)
	}
	if s.Population.WideActivityShare == nil || *s.Population.WideActivityShare != 0 {
		t.Errorf("wide_activity_share = 0 must be set, not unset")
	}
	if len(s.Population.Tiers) != 1 || s.Population.Tiers[0] != (Tier{0.5, 2}) {
		t.Errorf("tiers = %+v", s.Population.Tiers)
	}
	if s.Desktop.Mode != ModeLegacy || s.Agent.Turn.PerHour != 3 || s.Agent.Turn.MeanSecs != 60 {
		t.Errorf("desktop/turn = %+v %+v", s.Desktop, s.Agent.Turn)
	}
	if len(s.Ramp) != 2 || s.Ramp[0] != (Step{1, 2.5, 4}) || s.Ramp[1] != (Step{3, 0, 1}) {
		t.Errorf("ramp = %+v", s.Ramp)
	}
}

func TestUnknownKeysAreErrorsNamingTheKeyPath(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"typo in a table", `[population]
tierz = []`, []string{"t.toml: unknown key population.tierz"}},
		{"top-level key", `runid = "x"`, []string{"t.toml: unknown key runid"}},
		{"unknown table", `[humans]
rate = 1`, []string{"t.toml: unknown key humans"}},
		{"nested table", `[agent.turn]
per_hours = 1`, []string{"t.toml: unknown key agent.turn.per_hours"}},
		{"inside an inline array of tables", `[population]
tiers = [{ fraction = 0.1, channels = 2 }, { fraction = 0.1, chanels = 2 }]`,
			[]string{"t.toml: unknown key population.tiers[1].chanels"}},
		{"inside an array of tables", `[[ramp]]
users = 1
hold_secs = 1
[[ramp]]
users = 2
hold_sec = 1`, []string{"t.toml: unknown key ramp[1].hold_sec"}},
		{"keys are case-sensitive", `[population]
Humans = 3`, []string{"t.toml: unknown key population.Humans"}},
		{"every unknown key is reported", `[shape]
wide = 1
[desktop]
tick = 3`, []string{"t.toml: unknown key shape.wide", "t.toml: unknown key desktop.tick"}},
		{"a secret in the target gets a hint and is not echoed", `[target]
operator_key = "5c0c523f52a5b6fad39ed2403092df8cebc36318b39383bca6c00808626fab3a"`,
			[]string{"t.toml: unknown key target.operator_key (secrets never go in a scenario file: name them with target.operator_key_env or target.operator_key_file)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `run_id = "t"` + "\n" + c.src
			if !strings.Contains(c.src, "[[ramp]]") {
				src += "\n[[ramp]]\nusers = 1\nhold_secs = 1\n"
			}
			e := parseErr(t, src)
			// The near-miss suggestions are TestUnknownKeySuggestsTheNearMiss's.
			msg := suggestion.ReplaceAllString(e.Error(), "")
			for _, w := range c.want {
				if !containsLine(msg, w) {
					t.Errorf("error\n%s\nlacks line %q", msg, w)
				}
			}
			if len(e.Problems) != len(c.want) {
				t.Errorf("%d problems, want %d:\n%s", len(e.Problems), len(c.want), msg)
			}
			if strings.Contains(msg, "5c0c523f") {
				t.Errorf("error echoes the secret: %s", msg)
			}
		})
	}
}

func TestTypeErrorsNameTheKeyPathAndLine(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"string for an integer", `run_id = "t"
[population]
humans = "many"
[[ramp]]
users = 1
hold_secs = 1`, []string{"t.toml:3: population.humans: is a string, want an integer"}},
		{"float for an integer", `run_id = "t"
[shape]

communities = 1.5
[[ramp]]
users = 1
hold_secs = 1`, []string{"t.toml:4: shape.communities: is a float, want an integer"}},
		{"integer for a string", `run_id = 5
[[ramp]]
users = 1
hold_secs = 1`, []string{"t.toml:1: run_id: is an integer, want a string"}},
		{"string in an array of tables keeps its index", `run_id = "t"
[[ramp]]
users = 1
hold_secs = 1
[[ramp]]
users = "two"
hold_secs = 1`, []string{"t.toml:6: ramp[1].users: is a string, want a number"}},
		{"table expected", `run_id = "t"
desktop = 3
[[ramp]]
users = 1
hold_secs = 1`, []string{"t.toml:2: desktop: is an integer, want a table"}},
		// The decoder stops at one of them (which one varies), so only that
		// one has a line: compared here without lines.
		{"boolean expected, all type errors reported", `run_id = "t"
[shape]
private_channels = "yes"
seed_concurrency = true
[[ramp]]
users = 1
hold_secs = 1`, []string{"t.toml: shape.private_channels: is a string, want a boolean",
			"t.toml: shape.seed_concurrency: is a boolean, want an integer"}},
		{"array of tables expected", `run_id = "t"
ramp = 3`, []string{"t.toml:2: ramp: is an integer, want an array of tables"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := parseErr(t, c.src)
			msg := e.Error()
			if len(c.want) > 1 {
				msg = lineNumRe.ReplaceAllString(msg, "t.toml:")
				if !lineNumRe.MatchString(e.Error()) {
					t.Errorf("no problem carries a line: %s", e.Error())
				}
			}
			for _, w := range c.want {
				if !containsLine(msg, w) {
					t.Errorf("error\n%s\nlacks line %q", msg, w)
				}
			}
			if strings.Contains(msg, "many") || strings.Contains(msg, "two") {
				t.Errorf("error echoes a string value: %s", msg)
			}
		})
	}
}

func TestSyntaxErrorNamesTheLine(t *testing.T) {
	e := parseErr(t, "run_id = \"t\"\ncommunities = = 1\n[shape]\n")
	if len(e.Problems) != 1 || e.Problems[0].Kind != ProblemSyntax || e.Problems[0].Line != 2 {
		t.Fatalf("problems = %+v", e.Problems)
	}
	if !strings.HasPrefix(e.Error(), "t.toml:2: ") {
		t.Errorf("error %q does not start with file:line", e.Error())
	}
}

func TestDuplicateKeyIsAnError(t *testing.T) {
	e := parseErr(t, "run_id = \"t\"\nrun_id = \"u\"\n")
	if e.Problems[0].Line != 2 {
		t.Errorf("problems = %+v", e.Problems)
	}
}

func TestLoadReadsFileAndNamesIt(t *testing.T) {
	if _, err := Load("does/not/exist.toml"); err == nil || !strings.Contains(err.Error(), "does/not/exist.toml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

var lineNumRe = regexp.MustCompile(`t\.toml:\d+:`)

func containsLine(msg, line string) bool {
	for _, l := range strings.Split(msg, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// A near-miss key names the key meant (issue 47 item 3); a far one does not
// guess.
func TestUnknownKeySuggestsTheNearMiss(t *testing.T) {
	for toml, want := range map[string]string{
		"[population]\nhumanz = 3\n": "unknown key population.humanz (did you mean humans?)",
		"[abort]\nmax_p99 = 3\n":     "unknown key abort.max_p99 (did you mean max_p99_ms?)",
		"[population]\nzebras = 3\n": "unknown key population.zebras",
	} {
		_, err := Parse("t.toml", []byte("run_id = \"x\"\n"+toml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", toml, err, want)
			continue
		}
		if strings.Contains(want, "zebras") && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%q guessed: %v", toml, err)
		}
	}
}

var suggestion = regexp.MustCompile(` \(did you mean [^)]*\?\)`)

// A file nesting inline tables deeper than MaxNesting, or larger than
// MaxFileBytes, is refused before the decoder reads it, naming the bound
// (issue 43 M1: 12 KB of nesting made 246 MB); brackets in strings and
// comments do not count.
func TestDeepOrHugeFilesAreRefusedBeforeDecoding(t *testing.T) {
	deep := "run_id = \"x\"\n" + "a = " + strings.Repeat("{b = ", 20000) + "1" + strings.Repeat("}", 20000) + "\n"
	_, err := Parse("deep.toml", []byte(deep))
	if err == nil || !strings.Contains(err.Error(), "deep.toml:2: tables and arrays nest deeper than 32 levels") {
		t.Errorf("deep: %v", err)
	}
	huge := "run_id = \"x\"\n# " + strings.Repeat("x", MaxFileBytes) + "\n"
	if _, err := Parse("huge.toml", []byte(huge)); err == nil || !strings.Contains(err.Error(), "above the 1048576 a scenario may have") {
		t.Errorf("huge: %v", err)
	}
	fine := "run_id = \"x\" # [[[[ not nesting\nname = \"{{{{{{\"\n[[ramp]]\nusers = 1\nhold_secs = 1\n"
	if p := checkShape([]byte(fine)); p != nil {
		t.Errorf("brackets in a string or a comment counted: %+v", p)
	}
}
