package relay

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Config configures a Relay. Start from DefaultConfig; the zero value is not
// usable. Every field has an environment variable (the `envconfig` tag, read
// by `buzzload relay` through mstoykov/envconfig) and a flag of the same
// meaning; names follow Buzz's BUZZ_* variables where Buzz has one.
type Config struct {
	// Listen is the TCP address to listen on ("127.0.0.1:0" picks a port).
	Listen string `envconfig:"BUZZ_LISTEN"`
	// PublicScheme is "ws" or "wss": the scheme clients use in their NIP-42
	// relay tag (and http/https in NIP-98 u tags). Buzz derives it from RELAY_URL.
	PublicScheme string `envconfig:"BUZZ_PUBLIC_SCHEME"`
	// Communities are extra hosts mapped at start-up, besides the deployment
	// community (the listen host). "localhost:<port>" is a distinct host.
	Communities []string `envconfig:"BUZZ_COMMUNITIES"`
	// DeploymentHost overrides the deployment community's host (default: the
	// listen address as clients dial it).
	DeploymentHost string `envconfig:"BUZZ_DEPLOYMENT_HOST"`

	// RelaySecret is the relay key (hex or NIP-19 nsec1…) that signs 39000/39002/39005/39006/
	// 39007 and synthetic presence; generated when empty.
	RelaySecret string `envconfig:"BUZZ_RELAY_SECRET"`
	// OperatorSecret is the operator API signer (hex or nsec1…); generated when empty
	// and then written to OperatorSecretFile.
	OperatorSecret string `envconfig:"BUZZ_OPERATOR_SECRET"`
	// OperatorSecretFile receives a generated operator secret (mode 0600).
	// Empty: the secret stays in memory (tests use Relay.OperatorKeys).
	OperatorSecretFile string `envconfig:"BUZZ_OPERATOR_SECRET_FILE"`
	// OperatorPubkeys are additional operator signers (hex or npub1…).
	OperatorPubkeys []string `envconfig:"BUZZ_OPERATOR_PUBKEYS"`
	// OperatorOrigin is RELAY_OPERATOR_API_ORIGIN: the scheme://host the
	// operator NIP-98 u tag must carry. Default: the HTTP URL of the listener.
	OperatorOrigin string `envconfig:"BUZZ_OPERATOR_ORIGIN"`
	// MaxCommunitiesPerOwner is BUZZ_MAX_COMMUNITIES_PER_OWNER.
	MaxCommunitiesPerOwner int `envconfig:"BUZZ_MAX_COMMUNITIES_PER_OWNER"`

	// VerifySignatures checks ids and Schnorr signatures of every EVENT.
	// Turn off only for capacity runs of the generator itself.
	VerifySignatures bool `envconfig:"BUZZ_VERIFY_SIGNATURES"`
	// RequireChannelMembership makes open channels writable by members only
	// (a join or an add), as private ones always are. Reading is unchanged.
	// Off by default: Buzz lets anyone in the community write to an open channel.
	RequireChannelMembership bool `envconfig:"BUZZ_REQUIRE_CHANNEL_MEMBERSHIP"`
	// RequireRelayMembership is Buzz's BUZZ_REQUIRE_RELAY_MEMBERSHIP: only
	// relay members (NIP-43; the provisioned owner, then whoever an owner or
	// admin adds with kind 9030) or agents whose NIP-OA owner is one may
	// authenticate (AUTH: "restricted: not a relay member") or use the HTTP
	// bridge (403 relay_membership_required); NIP-11 advertises NIP 43.
	RequireRelayMembership bool `envconfig:"BUZZ_REQUIRE_RELAY_MEMBERSHIP"`
	// PubkeyAllowlist is Buzz's BUZZ_PUBKEY_ALLOWLIST (docs/buzz-names.md
	// §c; handlers/auth.rs handle_auth): a pubkey-only NIP-42 AUTH from a key
	// not on the allowlist is refused "auth-required: verification failed",
	// the text of a bad signature. Buzz keeps the list in its database
	// (pubkey_allowlist); here Relay.AllowPubkeys fills it (`buzzload relay
	// --allowlist FILE`, or a run listing its own identities).
	PubkeyAllowlist bool `envconfig:"BUZZ_PUBKEY_ALLOWLIST"`
	// NIP-FI enterprise admission (nipfi.go; docs/buzz-names.md §b): mode
	// off or enforce, the issuers (a JSON array; the embedded relay takes
	// each issuer's keys inline as "jwks"), the assertions' maximum age and
	// an optional cap on a session's lease.
	NIPFIMode                      string `envconfig:"BUZZ_NIP_FI_MODE"`
	NIPFIIssuers                   string `envconfig:"BUZZ_NIP_FI_ISSUERS"`
	NIPFIMaxAssertionAgeSecs       int64  `envconfig:"BUZZ_NIP_FI_MAXIMUM_ASSERTION_AGE_SECS"`
	NIPFIMaxConnectionLifetimeSecs int64  `envconfig:"BUZZ_NIP_FI_MAX_CONNECTION_LIFETIME_SECS"`
	// ReadStateSnapshot serves the desktop's read-state snapshot extension
	// (NIP-11 read_state_snapshot, a /query filter with read_state_snapshot:1
	// answered by an object). Off reproduces the tenant-aware Buzz bridges
	// without it (api/bridge.rs @007b3665): not advertised, the field is
	// ignored and the filter answered as a plain query (an event array).
	ReadStateSnapshot bool `envconfig:"BUZZ_READ_STATE_SNAPSHOT"`
	// AllowDevPubkey accepts `X-Pubkey: <hex>` without Authorization on the
	// bridge routes (Buzz's BUZZ_REQUIRE_AUTH_TOKEN=false). Off by default.
	AllowDevPubkey bool `envconfig:"BUZZ_ALLOW_DEV_PUBKEY"`

	MaxFrameBytes      int           `envconfig:"BUZZ_MAX_FRAME_BYTES"`
	MaxContentBytes    int           `envconfig:"BUZZ_MAX_CONTENT_BYTES"`
	MaxFilters         int           `envconfig:"BUZZ_MAX_FILTERS"`
	MaxSubscriptions   int           `envconfig:"BUZZ_MAX_SUBSCRIPTIONS"`
	MaxSubIDLength     int           `envconfig:"BUZZ_MAX_SUBID_LENGTH"`
	MaxChannelsPerREQ  int           `envconfig:"BUZZ_MAX_CHANNELS_PER_REQ"`
	MaxHistoricalLimit int           `envconfig:"BUZZ_MAX_HISTORICAL_LIMIT"`
	MaxConnections     int           `envconfig:"BUZZ_MAX_CONNECTIONS"`
	SendBuffer         int           `envconfig:"BUZZ_SEND_BUFFER"`
	SlowClientGrace    int           `envconfig:"BUZZ_SLOW_CLIENT_GRACE_LIMIT"`
	CreatedAtSkew      time.Duration `envconfig:"BUZZ_CREATED_AT_SKEW"`
	AuthSkew           time.Duration `envconfig:"BUZZ_AUTH_SKEW"`
	AuthTimeout        time.Duration `envconfig:"BUZZ_AUTH_TIMEOUT"`
	PingInterval       time.Duration `envconfig:"BUZZ_PING_INTERVAL"`
	WriteTimeout       time.Duration `envconfig:"BUZZ_WRITE_TIMEOUT"`
	ReplayWindow       time.Duration `envconfig:"BUZZ_NIP98_REPLAY_WINDOW"`
	MaxBodyBytes       int64         `envconfig:"BUZZ_MAX_BODY_BYTES"`
	// MaxEventsPerCommunity caps stored events per community; the earliest
	// stored go first (bounded memory in a soak). 0: no cap.
	MaxEventsPerCommunity int `envconfig:"BUZZ_MAX_EVENTS_PER_COMMUNITY"`

	// Rate limits (per community and pubkey). RateLimit=false switches them off.
	RateLimit              bool          `envconfig:"BUZZ_RATE_LIMIT"`
	HumanMessagesPerMin    int           `envconfig:"BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN"`
	HumanAPICallsPerMin    int           `envconfig:"BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN"`
	AgentMessagesPerMin    int           `envconfig:"BUZZ_RATE_LIMIT_AGENT_MESSAGES_PER_MIN"`
	WSFramesPerWindow      int           `envconfig:"BUZZ_RATE_LIMIT_WS_FRAMES_PER_WINDOW"`
	WSFrameWindow          time.Duration `envconfig:"BUZZ_RATE_LIMIT_WS_FRAME_WINDOW"`
	ObserverFramesPerSec   int           `envconfig:"BUZZ_RATE_LIMIT_OBSERVER_FRAMES_PER_SEC"`
	LegacyRateLimitNotice  bool          `envconfig:"BUZZ_LEGACY_RATE_LIMIT_NOTICE"`
	ThreadRepliesInChannel bool          `envconfig:"BUZZ_THREAD_REPLIES_IN_CHANNEL"`
	BuzzV1                 bool          `envconfig:"BUZZ_V1_ENABLED"`
	BuzzV1RetentionSeconds int64         `envconfig:"BUZZ_V1_RETENTION_SECONDS"`
	PairingRelayURL        string        `envconfig:"BUZZ_PAIRING_RELAY_URL"`
	DrainOnClose           time.Duration `envconfig:"BUZZ_DRAIN_TIMEOUT"`
	// DrainJitterMs spreads the 1012 closes of a shutdown (and of a
	// restart drill without its own jitter) over [1, J] ms, as Buzz's
	// BUZZ_DRAIN_JITTER_MS does (docs/buzz-names.md §g; capped at 20000).
	DrainJitterMs int `envconfig:"BUZZ_DRAIN_JITTER_MS"`
	// ReplicaReadMaxAgeMs simulates Buzz's replica read routing
	// (docs/buzz-names.md §a): above 0, a /query without
	// "consistency":"strong" sees the store as a replica this far behind
	// would (nothing stored within the last B ms); "strong" reads the
	// present, as Buzz's writer does.
	ReplicaReadMaxAgeMs int `envconfig:"BUZZ_REPLICA_READ_MAX_AGE_MS"`

	// Logf receives operational log lines (never secrets), each starting
	// with its level as Buzz's tracing prints it ("ERROR", " WARN",
	// " INFO"): a run scans the embedded relay's ERROR lines. nil: silent.
	Logf func(format string, args ...any) `ignored:"true"`
}

// DefaultConfig returns Buzz's defaults (docs/buzz-protocol.md §1.3, §2.1).
func DefaultConfig() Config {
	return Config{
		Listen:                 "127.0.0.1:0",
		PublicScheme:           "ws",
		MaxCommunitiesPerOwner: 5,
		VerifySignatures:       true,
		ReadStateSnapshot:      true,
		MaxFrameBytes:          524288,
		MaxContentBytes:        262144,
		MaxFilters:             10,
		MaxSubscriptions:       1024,
		MaxSubIDLength:         256,
		MaxChannelsPerREQ:      128,
		MaxHistoricalLimit:     1000,
		MaxConnections:         10000,
		SendBuffer:             1000,
		SlowClientGrace:        15,
		CreatedAtSkew:          900 * time.Second,
		AuthSkew:               60 * time.Second,
		AuthTimeout:            5 * time.Second,
		PingInterval:           30 * time.Second,
		WriteTimeout:           10 * time.Second,
		ReplayWindow:           120 * time.Second,
		MaxBodyBytes:           1 << 20,
		RateLimit:              true,
		HumanMessagesPerMin:    60,
		HumanAPICallsPerMin:    300,
		AgentMessagesPerMin:    120,
		WSFramesPerWindow:      50,
		WSFrameWindow:          5 * time.Second,
		ObserverFramesPerSec:   100,
		BuzzV1RetentionSeconds: 2592000,
		DrainOnClose:           2 * time.Second,
	}
}

// Validate reports the first unusable setting, naming its environment variable.
func (c *Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("BUZZ_LISTEN: %q is not host:port: %w", c.Listen, err)
	}
	if c.PublicScheme != "ws" && c.PublicScheme != "wss" {
		return fmt.Errorf("BUZZ_PUBLIC_SCHEME: %q must be ws or wss", c.PublicScheme)
	}
	pos := []struct {
		name string
		v    int
	}{
		{"BUZZ_MAX_FRAME_BYTES", c.MaxFrameBytes}, {"BUZZ_MAX_CONTENT_BYTES", c.MaxContentBytes},
		{"BUZZ_MAX_FILTERS", c.MaxFilters}, {"BUZZ_MAX_SUBSCRIPTIONS", c.MaxSubscriptions},
		{"BUZZ_MAX_SUBID_LENGTH", c.MaxSubIDLength}, {"BUZZ_MAX_HISTORICAL_LIMIT", c.MaxHistoricalLimit},
		{"BUZZ_MAX_CONNECTIONS", c.MaxConnections}, {"BUZZ_SEND_BUFFER", c.SendBuffer},
		{"BUZZ_SLOW_CLIENT_GRACE_LIMIT", c.SlowClientGrace},
	}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("%s: %d must be positive", p.name, p.v)
		}
	}
	if c.MaxChannelsPerREQ < 0 {
		return fmt.Errorf("BUZZ_MAX_CHANNELS_PER_REQ: %d is negative (0 means no cap)", c.MaxChannelsPerREQ)
	}
	durs := []struct {
		name string
		v    time.Duration
	}{
		{"BUZZ_CREATED_AT_SKEW", c.CreatedAtSkew}, {"BUZZ_AUTH_SKEW", c.AuthSkew},
		{"BUZZ_AUTH_TIMEOUT", c.AuthTimeout}, {"BUZZ_PING_INTERVAL", c.PingInterval},
		{"BUZZ_WRITE_TIMEOUT", c.WriteTimeout}, {"BUZZ_NIP98_REPLAY_WINDOW", c.ReplayWindow},
	}
	for _, d := range durs {
		if d.v <= 0 {
			return fmt.Errorf("%s: %v must be positive", d.name, d.v)
		}
	}
	if c.RateLimit {
		rl := []struct {
			name string
			v    int
		}{
			{"BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN", c.HumanMessagesPerMin},
			{"BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN", c.HumanAPICallsPerMin},
			{"BUZZ_RATE_LIMIT_AGENT_MESSAGES_PER_MIN", c.AgentMessagesPerMin},
			{"BUZZ_RATE_LIMIT_WS_FRAMES_PER_WINDOW", c.WSFramesPerWindow},
			{"BUZZ_RATE_LIMIT_OBSERVER_FRAMES_PER_SEC", c.ObserverFramesPerSec},
		}
		for _, p := range rl {
			if p.v <= 0 {
				return fmt.Errorf("%s: %d must be positive (set BUZZ_RATE_LIMIT=false to switch limits off)", p.name, p.v)
			}
		}
		if c.WSFrameWindow <= 0 {
			return fmt.Errorf("BUZZ_RATE_LIMIT_WS_FRAME_WINDOW: %v must be positive", c.WSFrameWindow)
		}
	}
	for i, h := range c.Communities {
		if strings.TrimSpace(h) == "" {
			return fmt.Errorf("BUZZ_COMMUNITIES[%d]: empty host", i)
		}
	}
	for i, pk := range c.OperatorPubkeys {
		if _, err := nostr.PubKeyHex(pk); err != nil {
			return fmt.Errorf("BUZZ_OPERATOR_PUBKEYS[%d]: %w", i, err)
		}
	}
	if c.RelaySecret != "" {
		if _, err := nostr.NewKeys(c.RelaySecret); err != nil {
			return fmt.Errorf("BUZZ_RELAY_SECRET: %w", err)
		}
	}
	if c.OperatorSecret != "" {
		if _, err := nostr.NewKeys(c.OperatorSecret); err != nil {
			return fmt.Errorf("BUZZ_OPERATOR_SECRET: %w", err)
		}
	}
	if c.MaxEventsPerCommunity < 0 {
		return errors.New("BUZZ_MAX_EVENTS_PER_COMMUNITY: must not be negative (0 means no cap)")
	}
	if c.MaxBodyBytes <= 0 {
		return errors.New("BUZZ_MAX_BODY_BYTES: must be positive")
	}
	return nil
}
