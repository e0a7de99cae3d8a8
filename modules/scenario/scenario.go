// Package scenario is the buzzload scenario model: the buzz-loadgen TOML keys
// with their defaults, validation that names the file, key path and reason,
// and the pure functions every other part derives the run from: community
// hosts, channel ids, which channels are private or wide, which global index
// is which client, deterministic channel membership, activity weights, the
// ramp as steps and ramping-vus stages, the abort rules, and the data-shape
// conventions seed and the clients share (root markers and contents, the
// send-time tag).
//
// Nothing here touches the network or a clock: the same scenario gives the
// same answers in seed, in every VU and in every shard, which is what lets
// them agree without coordination. docs/scenario.md is the reference for the
// keys and rules.
package scenario

import "github.com/buzzload/buzzload/modules/expect"

// Scenario is one parsed and validated scenario file. The TOML keys map to
// the fields one to one; File is where it was read from (for messages) and is
// not a key.
type Scenario struct {
	File string `toml:"-"`
	// identitySecret is mixed into every derived key (SetIdentitySecret);
	// never in the file, never printed.
	identitySecret []byte
	aimed          bool // a copy aimed at the embedded relay (drill.go)
	// fi supplies NIP-FI assertions (SetFederatedIdentity; nil: none).
	fi FederatedIdentity

	RunID      string     `toml:"run_id"`
	Target     Target     `toml:"target"`
	Shape      Shape      `toml:"shape"`
	Population Population `toml:"population"`
	Human      Human      `toml:"human"`
	Agent      Agent      `toml:"agent"`
	HotThread  HotThread  `toml:"hot_thread"`
	Desktop    Desktop    `toml:"desktop"`
	Ramp       []Step     `toml:"ramp"`
	Abort      Abort      `toml:"abort"`
	// Expect are the errors the deployment gives by design ([[expect]]):
	// counted apart, not as failures (modules/expect).
	Expect []expect.Rule `toml:"expect"`
	Verify Verify        `toml:"verify"`
	// Drills are the disruptions the run performs ([[drill]], drill.go).
	Drills []Drill `toml:"drill"`
	// Capacity is how `buzzload capacity` searches (capacity.go).
	Capacity Capacity `toml:"capacity"`
}

// Verify is the durability audit after the run: the events the relay
// acknowledged are read back through its normal read paths (issue 26).
type Verify struct {
	// Sample is how many acknowledged events are kept for the audit, a
	// uniform sample of all of them (reservoir); 0 turns the audit off.
	Sample int `toml:"sample"`
	// TimeoutSecs bounds the audit's reads.
	TimeoutSecs float64 `toml:"timeout_secs"`
	// Sweep checks after the run that the relay still serves: NIP-11, a
	// fresh AUTH, a channel read.
	Sweep bool `toml:"sweep"`
	// LedgerSample is the share of published events the delivery ledger
	// judges (modules/ledger, issue 40), chosen by event id so that every
	// runner picks the same ones; 0 turns the ledger off.
	LedgerSample float64 `toml:"ledger_sample"`
	// MaxLost is how many lost deliveries the run tolerates (default 0:
	// one fails it).
	MaxLost int `toml:"max_lost"`
	// VisibilityEvery: one acknowledged channel message in this many (by
	// id) is polled for by a member until readable; 0 turns it off.
	VisibilityEvery int `toml:"visibility_every"`
	// DrillRecoverWithinSecs: after a drill or a disruption, every affected
	// client must be back, with all its subscriptions, within this long.
	DrillRecoverWithinSecs float64 `toml:"drill_recover_within_secs"`
	// MaxDrift: the drift check fails when an operation's p99, its error
	// rate or the generator's memory got worse by more than this fraction
	// between the first and last fifth of the last step's hold
	// (report/drift.go); 0 turns it off.
	MaxDrift float64 `toml:"max_drift"`
}

// Verify bounds.
const (
	DefaultVerifySample = 100000
	MaxVerifySample     = 10000000
)

// Target says where the relay is and how to reach its communities.
type Target struct {
	// WSURL and HTTPURL are the relay's public URLs. Both empty means the
	// embedded local relay. With a host template only their schemes and
	// paths are used.
	WSURL   string `toml:"ws_url"`
	HTTPURL string `toml:"http_url"`
	// ConnectAddr (host:port) is dialled in plaintext for every community
	// host, when CommunityHostTemplate is set.
	ConnectAddr string `toml:"connect_addr"`
	// CommunityHostTemplate makes community n's host, with {run} and {n}.
	CommunityHostTemplate string  `toml:"community_host_template"`
	ConnectTimeoutSecs    float64 `toml:"connect_timeout_secs"`
	// NIP-FI assertions for a relay that enforces NIP-FI (docs/buzz-names.md
	// §b): a JSON file of hex pubkey → compact JWS, or a command run (sh -c)
	// for each identity with BUZZLOAD_NIP_FI_PUBKEY set, printing its token.
	// $BUZZLOAD_NIP_FI_TOKENS_FILE / $BUZZLOAD_NIP_FI_TOKEN_COMMAND win.
	// The tokens are never printed.
	NIPFITokensFile   string `toml:"nip_fi_tokens_file"`
	NIPFITokenCommand string `toml:"nip_fi_token_command"`
	// LocalIPs are the source addresses of the clients' WebSocket
	// connections, in k6's localIPs format (localaddr.Parse); "" lets the
	// kernel choose.
	LocalIPs string `toml:"local_ips"`
	// The operator key is never in the file: these name where it is.
	OperatorKeyEnv  string `toml:"operator_key_env"`
	OperatorKeyFile string `toml:"operator_key_file"`
}

// Shape is the seeded data shape.
type Shape struct {
	Communities               int  `toml:"communities"`
	ChannelsPerCommunity      int  `toml:"channels_per_community"`
	HistoryMessagesPerChannel int  `toml:"history_messages_per_channel"`
	ThreadRootsPerChannel     int  `toml:"thread_roots_per_channel"`
	ThreadDepth               int  `toml:"thread_depth"`
	PrivateChannels           bool `toml:"private_channels"`
	WideChannels              int  `toml:"wide_channels"`
	SeedConcurrency           int  `toml:"seed_concurrency"`
}

// Population is the clients per unit of a ramp step's users, and how they
// spread over channels.
type Population struct {
	Humans             int     `toml:"humans"`
	Agents             int     `toml:"agents"`
	ChannelsPerMember  int     `toml:"channels_per_member"`
	WideMemberFraction float64 `toml:"wide_member_fraction"`
	// WideActivityShare is nil when unset, which is not the same as 0.
	WideActivityShare *float64 `toml:"wide_activity_share"`
	Tiers             []Tier   `toml:"tiers"`
	ConnectRatePerSec float64  `toml:"connect_rate_per_sec"`
	// HumansPerVU is how many basic humans one VU runs (issue 49): a VU is
	// a JS runtime (~30 KB), a human's session ~20 KB, so at scale one
	// runtime carries several sessions.
	HumansPerVU int `toml:"humans_per_vu"`
}

// Tier is a share of humans that joins Channels own channels instead of
// channels_per_member.
type Tier struct {
	Fraction float64 `toml:"fraction"`
	Channels int     `toml:"channels"`
}

// Human is the basic human's behaviour; desktop humans share it.
type Human struct {
	HistoryLimit         int     `toml:"history_limit"`
	ThreadReplyFraction  float64 `toml:"thread_reply_fraction"`
	MeanSessionSecs      float64 `toml:"mean_session_secs"`
	PresenceIntervalSecs float64 `toml:"presence_interval_secs"`
	TypingPerHour        float64 `toml:"typing_per_hour"`
	MessagesPerHour      float64 `toml:"messages_per_hour"`
	ReactionsPerHour     float64 `toml:"reactions_per_hour"`
}

// Agent is the agent's behaviour.
type Agent struct {
	ChannelSubscriptions  bool      `toml:"channel_subscriptions"`
	PresenceIntervalSecs  float64   `toml:"presence_interval_secs"`
	QueryIntervalSecs     float64   `toml:"query_interval_secs"`
	EventsPerHour         float64   `toml:"events_per_hour"`
	ObserverFramesPerHour float64   `toml:"observer_frames_per_hour"`
	Turn                  AgentTurn `toml:"turn"`
}

// AgentTurn models a harness working in bursts; PerHour 0 disables turns.
type AgentTurn struct {
	PerHour    float64 `toml:"per_hour"`
	MeanSecs   float64 `toml:"mean_secs"`
	TypingSecs float64 `toml:"typing_secs"`
	FrameSecs  float64 `toml:"frame_secs"`
	FrameBytes int     `toml:"frame_bytes"`
	Reads      int     `toml:"reads"`
}

// HotThread is one thread that keeps growing. SeedReplies and Authors both 0
// disable it.
type HotThread struct {
	SeedReplies    int     `toml:"seed_replies"`
	Authors        int     `toml:"authors"`
	RepliesPerHour float64 `toml:"replies_per_hour"`
	FetchesPerHour float64 `toml:"fetches_per_hour"`
}

// Desktop mode names.
const (
	ModeCurrent = "current"
	ModeLegacy  = "legacy"
)

// Desktop is the desktop-app model run by Fraction of the humans.
type Desktop struct {
	Fraction     float64 `toml:"fraction"`
	Mode         string  `toml:"mode"`
	Windows      int     `toml:"windows"`
	Threads      int     `toml:"threads"`
	TickSecs     float64 `toml:"tick_secs"`
	BackstopSecs float64 `toml:"backstop_secs"`
	RenewalSecs  float64 `toml:"renewal_secs"`
	// LiveOnlyScope is the channels per current-mode live-only REQ. The app
	// puts up to 2048 channels in one; Buzz refuses more than 128 explicit
	// #h values per REQ, so the default is 128 and 2048 reproduces the spec
	// for a relay without that cap.
	LiveOnlyScope int `toml:"live_only_scope"`
	// CoMemberLimit bounds the distinct co-members a desktop human reads
	// profiles and statuses of (the app reads every one: ⌈M/500⌉ and
	// ⌈M/100⌉ requests); presence watches the first 256 of them. A bound
	// because each client holds its co-members' keys.
	CoMemberLimit int `toml:"co_member_limit"`
}

// CoMemberLimitOrDefault is desktop.co_member_limit, the default when unset
// (a Scenario built in code rather than parsed).
func (d *Desktop) CoMemberLimitOrDefault() int {
	if d.CoMemberLimit > 0 {
		return d.CoMemberLimit
	}
	return DefaultCoMemberLimit
}

// Live-only scope: the default fits Buzz's cap on explicit #h values per REQ;
// the maximum is the desktop app's own scope.
const (
	DefaultLiveOnlyScope = 128
	MaxLiveOnlyScope     = 2048
	// DefaultCoMemberLimit reads every co-member of communities of up to
	// 10,000 people; MaxCoMemberLimit keeps a client's keys under ~16 MB.
	DefaultCoMemberLimit = 10000
	MaxCoMemberLimit     = 250000
)

// Step is one [[ramp]] entry: grow to Users times the population over
// RampSecs, then hold for HoldSecs.
type Step struct {
	Users    float64 `toml:"users"`
	RampSecs float64 `toml:"ramp_secs"`
	HoldSecs float64 `toml:"hold_secs"`
}

// Abort holds the limits each step is judged by at the end of its hold.
type Abort struct {
	MaxP99Ms     float64 `toml:"max_p99_ms"`
	MaxErrorRate float64 `toml:"max_error_rate"`
	// WarmupSecs is the warm-up from the start of the run: what settles in
	// it is reported apart and not judged (the gateway profiles exclude
	// their first 10 s the same way). 0: none.
	WarmupSecs float64 `toml:"warmup_secs"`
	// GeneratorMaxLagMs: a step whose scheduling lag p99 (due → started)
	// exceeds it is marked "generator saturated" (issue 14); so is one
	// whose CPU stays above 90 % of the cores.
	GeneratorMaxLagMs float64 `toml:"generator_max_lag_ms"`
	// FailOnGeneratorSaturation makes a saturated step a failure.
	FailOnGeneratorSaturation bool `toml:"fail_on_generator_saturation"`
}

// DefaultOperatorKeyEnv is the environment variable the operator key is read
// from when target.operator_key_env is not set.
const DefaultOperatorKeyEnv = "BUZZLOAD_OPERATOR_KEY"

// Defaults returns a scenario with every key at its default. run_id and
// [[ramp]] have none and must be given.
func Defaults() Scenario {
	return Scenario{
		Target: Target{
			ConnectTimeoutSecs: 10,
			OperatorKeyEnv:     DefaultOperatorKeyEnv,
		},
		Shape: Shape{
			Communities:               1,
			ChannelsPerCommunity:      10,
			HistoryMessagesPerChannel: 100,
			ThreadRootsPerChannel:     2,
			ThreadDepth:               10,
			SeedConcurrency:           16,
		},
		Population: Population{
			Humans:            100,
			Agents:            10,
			ChannelsPerMember: 3,
			Tiers:             []Tier{},
			ConnectRatePerSec: 50,
			HumansPerVU:       1,
		},
		Human: Human{
			HistoryLimit:         50,
			ThreadReplyFraction:  0.2,
			PresenceIntervalSecs: 30,
			TypingPerHour:        60,
			MessagesPerHour:      20,
			ReactionsPerHour:     10,
		},
		Agent: Agent{
			QueryIntervalSecs:     10,
			EventsPerHour:         30,
			ObserverFramesPerHour: 60,
			Turn: AgentTurn{
				MeanSecs:   60,
				TypingSecs: 5,
				FrameSecs:  2,
				FrameBytes: 512,
				Reads:      3,
			},
		},
		HotThread: HotThread{
			RepliesPerHour: 60,
			FetchesPerHour: 60,
		},
		Desktop: Desktop{
			Mode:          ModeCurrent,
			Windows:       3,
			Threads:       1,
			TickSecs:      60,
			BackstopSecs:  900,
			LiveOnlyScope: DefaultLiveOnlyScope,
			CoMemberLimit: DefaultCoMemberLimit,
		},
		Capacity: defaultCapacity(),
		Verify:   Verify{Sample: DefaultVerifySample, TimeoutSecs: 60, Sweep: true, LedgerSample: 1, VisibilityEvery: 100, DrillRecoverWithinSecs: 30, MaxDrift: 0.5},
		Abort: Abort{
			MaxP99Ms:          5000,
			MaxErrorRate:      0.01,
			GeneratorMaxLagMs: 100,
		},
	}
}
