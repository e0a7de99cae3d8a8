package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mstoykov/envconfig"
	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/relay"
)

const relayUsage = `usage: buzzload relay [flags]

Runs the embedded Buzz-compatible relay until SIGINT or SIGTERM.
Every flag has an environment variable (shown in brackets); a flag given on
the command line wins over the variable. Secrets are read only from the
environment: BUZZ_RELAY_SECRET (relay signing key, hex or nsec1…) and
BUZZ_OPERATOR_SECRET (operator API key, hex or nsec1…). Without BUZZ_OPERATOR_SECRET a
key is generated and written (mode 0600) to --operator-secret-file, by default
operator.key in a new private directory (0700) under $TMPDIR; the file must not
exist yet, a link is never followed, and it is removed when the relay stops.

flags:
`

// relayCmd runs `buzzload relay`.
func relayCmd(ctx context.Context, args []string, env cliEnv) int {
	cfg, fs, err := relayConfig(args, env)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(env.Stdout, relayUsage)
		fmt.Fprint(env.Stdout, fs.FlagUsages())
		return 0
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "buzzload relay: %s\n", termtext.Lines(err.Error()))
		return 2
	}
	stopProfiles, err := startProfiles(profilePaths(fs, env.Env))
	if err != nil {
		fmt.Fprintf(env.Stderr, "buzzload relay: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	defer func() {
		if err := stopProfiles(); err != nil {
			fmt.Fprintf(env.Stderr, "buzzload relay: %s\n", termtext.Lines(err.Error()))
		}
	}()
	var logMu sync.Mutex
	if relayVerbose(fs) {
		cfg.Logf = func(format string, a ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintf(env.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format(time.RFC3339)}, a...)...)
		}
	}
	if cfg.OperatorSecret == "" && cfg.OperatorSecretFile == "" {
		// A fresh 0700 directory: nobody else can plant a link or a file
		// at the path, and repeated starts never collide on one name.
		dir, err := os.MkdirTemp("", "buzzload-relay-")
		if err != nil {
			fmt.Fprintf(env.Stderr, "buzzload relay: private directory for the operator secret: %s\n", termtext.Lines(err.Error()))
			return 1
		}
		defer os.RemoveAll(dir)
		cfg.OperatorSecretFile = filepath.Join(dir, "operator.key")
	}
	allow, err := readAllowlist(fs, envLookup(env.Env))
	if err != nil {
		fmt.Fprintf(env.Stderr, "buzzload relay: %s\n", termtext.Lines(err.Error()))
		return 2
	}
	r, err := relay.New(cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "buzzload relay: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	defer r.Close() // removes a generated secret file on every return
	if err := r.AllowPubkeys(allow...); err != nil {
		fmt.Fprintf(env.Stderr, "buzzload relay: %s\n", termtext.Lines(err.Error()))
		return 2
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "buzzload relay: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	u := r.URLs()
	fmt.Fprintf(env.Stdout, "buzzload relay listening on %s\n", r.Addr())
	// Its Prometheus series (issue 45): the URL alone, for --relay-metrics.
	fmt.Fprintf(env.Stdout, "http://%s/metrics\n", r.Addr())
	fmt.Fprintf(env.Stdout, "  websocket:       %s\n", u.WS)
	fmt.Fprintf(env.Stdout, "  http:            %s\n", u.HTTP)
	fmt.Fprintf(env.Stdout, "  community host:  %s\n", u.Host)
	fmt.Fprintf(env.Stdout, "  relay pubkey:    %s\n", r.RelayPubKey())
	fmt.Fprintf(env.Stdout, "  operator pubkey: %s\n", r.OperatorPubKey())
	fmt.Fprintf(env.Stdout, "  operator origin: %s\n", r.OperatorOrigin())
	if p, mode := r.OperatorSecretFile(); p != "" {
		// The mode printed is the one the file has, not the one asked for.
		fmt.Fprintf(env.Stdout, "  operator secret: written to %s (mode %04o)\n", p, mode)
	} else {
		fmt.Fprintf(env.Stdout, "  operator secret: from BUZZ_OPERATOR_SECRET\n")
	}
	select {
	case <-ctx.Done():
	case s := <-env.Signals:
		fmt.Fprintf(env.Stdout, "buzzload relay: %v received, shutting down\n", s)
	}
	if err := r.Close(); err != nil {
		fmt.Fprintf(env.Stderr, "buzzload relay: shutdown: %s\n", termtext.Lines(err.Error()))
		return 1
	}
	st := r.Stats()
	fmt.Fprintf(env.Stdout, "buzzload relay: stopped after %d connections (%d AUTH refused), %d events accepted, %d refused, %d throttled, %d deliveries (%d dropped, %d slow consumers), %d HTTP requests (%d NIP-98 refused)\n",
		st.ConnectionsTotal, st.AuthFailed, st.EventsAccepted, st.EventsRejected, st.Throttled,
		st.Deliveries, st.DroppedDeliveries, st.SlowConsumers, st.HTTPRequests, st.HTTPAuthFailed)
	return 0
}

func relayVerbose(fs *pflag.FlagSet) bool {
	v, _ := fs.GetBool("verbose")
	return v
}

// relayConfig builds the configuration: defaults, then environment, then flags.
func relayConfig(args []string, env cliEnv) (relay.Config, *pflag.FlagSet, error) {
	cfg := relay.DefaultConfig()
	cfg.Listen = "127.0.0.1:7777"
	cfg.OperatorSecretFile = "" // relayCmd picks a private directory when none is given
	lookup := relayLookup(env.Env)
	fs := pflag.NewFlagSet("relay", pflag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {}
	if err := envconfig.Process("", &cfg, lookup); err != nil {
		return cfg, fs, fmt.Errorf("environment: %w", err)
	}
	if _, ok := lookup("BUZZ_OPERATOR_SECRET"); ok {
		cfg.OperatorSecretFile = "" // a given secret is never written anywhere
	}
	str := func(p *string, name, env, usage string) { fs.StringVar(p, name, *p, usage+" ["+env+"]") }
	list := func(p *[]string, name, env, usage string) { fs.StringSliceVar(p, name, *p, usage+" ["+env+"]") }
	boolean := func(p *bool, name, env, usage string) { fs.BoolVar(p, name, *p, usage+" ["+env+"]") }
	integer := func(p *int, name, env, usage string) { fs.IntVar(p, name, *p, usage+" ["+env+"]") }
	dur := func(p *time.Duration, name, env, usage string) { fs.DurationVar(p, name, *p, usage+" ["+env+"]") }

	str(&cfg.Listen, "listen", "BUZZ_LISTEN", "host:port to listen on (port 0 picks one)")
	str(&cfg.PublicScheme, "public-scheme", "BUZZ_PUBLIC_SCHEME", "ws or wss: the scheme clients put in NIP-42 relay and NIP-98 u tags")
	str(&cfg.DeploymentHost, "deployment-host", "BUZZ_DEPLOYMENT_HOST", "host of the deployment community (default: the listen address)")
	list(&cfg.Communities, "community", "BUZZ_COMMUNITIES", "extra community host to map at start-up (repeatable, comma-separated)")
	str(&cfg.OperatorSecretFile, "operator-secret-file", "BUZZ_OPERATOR_SECRET_FILE", "where a generated operator secret is written (mode 0600; must not exist; default: a new private directory)")
	list(&cfg.OperatorPubkeys, "operator-pubkey", "BUZZ_OPERATOR_PUBKEYS", "additional operator API signer (hex or npub1…; repeatable)")
	str(&cfg.OperatorOrigin, "operator-origin", "BUZZ_OPERATOR_ORIGIN", "origin operator NIP-98 u tags must name (default: the HTTP URL)")
	integer(&cfg.MaxCommunitiesPerOwner, "max-communities-per-owner", "BUZZ_MAX_COMMUNITIES_PER_OWNER", "communities one owner may hold")
	boolean(&cfg.VerifySignatures, "verify-signatures", "BUZZ_VERIFY_SIGNATURES", "verify event ids and signatures (turn off only for capacity runs)")
	boolean(&cfg.RequireChannelMembership, "require-channel-membership", "BUZZ_REQUIRE_CHANNEL_MEMBERSHIP", "open channels are writable by members only (join or add)")
	boolean(&cfg.RequireRelayMembership, "require-relay-membership", "BUZZ_REQUIRE_RELAY_MEMBERSHIP", "only NIP-43 relay members (the provisioned owner and whom owners/admins add with kind 9030) may authenticate or use HTTP")
	boolean(&cfg.ReadStateSnapshot, "read-state-snapshot", "BUZZ_READ_STATE_SNAPSHOT", "serve the read-state snapshot extension (false: an older Buzz without it)")
	boolean(&cfg.AllowDevPubkey, "allow-dev-pubkey", "BUZZ_ALLOW_DEV_PUBKEY", "accept X-Pubkey without NIP-98 on the bridge routes (dev only)")
	integer(&cfg.MaxFrameBytes, "max-frame-bytes", "BUZZ_MAX_FRAME_BYTES", "largest WebSocket frame")
	integer(&cfg.ReplicaReadMaxAgeMs, "replica-read-max-age-ms", "BUZZ_REPLICA_READ_MAX_AGE_MS", "simulate read replicas this far behind: a /query without \"consistency\":\"strong\" misses what was stored in the last N ms")
	integer(&cfg.DrainJitterMs, "drain-jitter-ms", "BUZZ_DRAIN_JITTER_MS", "spread the shutdown's 1012 closes over [1, J] ms, as Buzz does (at most 20000)")
	integer(&cfg.MaxContentBytes, "max-content-bytes", "BUZZ_MAX_CONTENT_BYTES", "largest event content")
	integer(&cfg.MaxFilters, "max-filters", "BUZZ_MAX_FILTERS", "filters per REQ/COUNT//query")
	integer(&cfg.MaxSubscriptions, "max-subscriptions", "BUZZ_MAX_SUBSCRIPTIONS", "subscriptions per connection")
	integer(&cfg.MaxSubIDLength, "max-subid-length", "BUZZ_MAX_SUBID_LENGTH", "longest subscription id")
	integer(&cfg.MaxChannelsPerREQ, "max-channels-per-req", "BUZZ_MAX_CHANNELS_PER_REQ", "distinct #h values in one REQ (0: no cap)")
	integer(&cfg.MaxHistoricalLimit, "max-historical-limit", "BUZZ_MAX_HISTORICAL_LIMIT", "events replayed per REQ filter")
	integer(&cfg.MaxConnections, "max-connections", "BUZZ_MAX_CONNECTIONS", "open WebSocket connections")
	integer(&cfg.SendBuffer, "send-buffer", "BUZZ_SEND_BUFFER", "outbound queue per connection, in messages")
	integer(&cfg.SlowClientGrace, "slow-client-grace", "BUZZ_SLOW_CLIENT_GRACE_LIMIT", "consecutive queue overflows before a client is dropped")
	dur(&cfg.CreatedAtSkew, "created-at-skew", "BUZZ_CREATED_AT_SKEW", "allowed event created_at skew")
	dur(&cfg.AuthSkew, "auth-skew", "BUZZ_AUTH_SKEW", "allowed NIP-42/NIP-98 created_at skew")
	dur(&cfg.AuthTimeout, "auth-timeout", "BUZZ_AUTH_TIMEOUT", "time a socket has to authenticate")
	dur(&cfg.PingInterval, "ping-interval", "BUZZ_PING_INTERVAL", "WebSocket ping interval (3 missed pongs close)")
	dur(&cfg.WriteTimeout, "write-timeout", "BUZZ_WRITE_TIMEOUT", "deadline for one WebSocket write")
	dur(&cfg.ReplayWindow, "nip98-replay-window", "BUZZ_NIP98_REPLAY_WINDOW", "how long a NIP-98 event id is refused after use")
	integer(&cfg.MaxEventsPerCommunity, "max-events-per-community", "BUZZ_MAX_EVENTS_PER_COMMUNITY", "stored events kept per community, oldest evicted first (0: no cap)")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest HTTP request body [BUZZ_MAX_BODY_BYTES]")
	boolean(&cfg.RateLimit, "rate-limit", "BUZZ_RATE_LIMIT", "enforce rate limits (false switches every limit off)")
	integer(&cfg.HumanMessagesPerMin, "human-messages-per-min", "BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN", "stored messages per minute, humans")
	integer(&cfg.HumanAPICallsPerMin, "human-api-calls-per-min", "BUZZ_RATE_LIMIT_HUMAN_API_CALLS_PER_MIN", "HTTP API calls per minute, humans")
	integer(&cfg.AgentMessagesPerMin, "agent-messages-per-min", "BUZZ_RATE_LIMIT_AGENT_MESSAGES_PER_MIN", "stored messages per minute, NIP-OA agents")
	integer(&cfg.WSFramesPerWindow, "ws-frames-per-window", "BUZZ_RATE_LIMIT_WS_FRAMES_PER_WINDOW", "EVENT/REQ/COUNT frames per window and key")
	dur(&cfg.WSFrameWindow, "ws-frame-window", "BUZZ_RATE_LIMIT_WS_FRAME_WINDOW", "the WebSocket frame window")
	integer(&cfg.ObserverFramesPerSec, "observer-frames-per-sec", "BUZZ_RATE_LIMIT_OBSERVER_FRAMES_PER_SEC", "kind-24200 frames per second per agent")
	boolean(&cfg.LegacyRateLimitNotice, "legacy-rate-limit-notice", "BUZZ_LEGACY_RATE_LIMIT_NOTICE", "answer throttled EVENT/COUNT with a NOTICE (relay-v0.2.1)")
	boolean(&cfg.ThreadRepliesInChannel, "thread-replies-in-channel", "BUZZ_THREAD_REPLIES_IN_CHANNEL", "channel windows count thread replies as rows (projection mode)")
	boolean(&cfg.BuzzV1, "buzz-v1", "BUZZ_V1_ENABLED", "serve the /buzz/v1 sidebar and read-state API")
	fs.Int64Var(&cfg.BuzzV1RetentionSeconds, "buzz-v1-retention-seconds", cfg.BuzzV1RetentionSeconds, "/buzz/v1 unread horizon [BUZZ_V1_RETENTION_SECONDS]")
	str(&cfg.PairingRelayURL, "pairing-relay-url", "BUZZ_PAIRING_RELAY_URL", "another relay URL accepted in NIP-42 relay tags")
	dur(&cfg.DrainOnClose, "drain-timeout", "BUZZ_DRAIN_TIMEOUT", "how long shutdown waits for sockets to close")
	boolean(&cfg.PubkeyAllowlist, "pubkey-allowlist", "BUZZ_PUBKEY_ALLOWLIST", "refuse a pubkey-only NIP-42 AUTH from a key not on the allowlist (--allowlist), as Buzz does")
	fs.String("allowlist", "", "file of hex pubkeys, one a line (# comments), for --pubkey-allowlist (`buzzload plan --pubkeys` writes a run's) [BUZZLOAD_RELAY_ALLOWLIST]")
	fs.Bool("verbose", false, "log relay errors to stderr")
	fs.BoolP("help", "h", false, "show this help")
	registerProfileFlags(fs)

	if err := fs.Parse(args); err != nil {
		return cfg, fs, err
	}
	if h, _ := fs.GetBool("help"); h {
		return cfg, fs, pflag.ErrHelp
	}
	if fs.NArg() > 0 {
		return cfg, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fs, err
	}
	return cfg, fs, nil
}

// relayLookup reads variables from env (KEY=VALUE), not the process.
func relayLookup(environ []string) func(string) (string, bool) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if i := strings.IndexByte(kv, '='); i > 0 {
			m[kv[:i]] = kv[i+1:]
		}
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// readAllowlist reads --allowlist (or BUZZLOAD_RELAY_ALLOWLIST): hex
// pubkeys one a line, blank lines and # comments skipped; a bad line is an
// error naming the file and the line.
func readAllowlist(fs *pflag.FlagSet, lookup func(string) (string, bool)) ([]string, error) {
	path, _ := fs.GetString("allowlist")
	if !fs.Changed("allowlist") {
		path, _ = lookup("BUZZLOAD_RELAY_ALLOWLIST")
	}
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--allowlist: %w", err)
	}
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) != 64 || strings.Trim(line, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("--allowlist %s:%d: %q is not a hex pubkey (64 lowercase hex digits)", path, i+1, termtext.Clean(line[:min(len(line), 80)]))
		}
		out = append(out, line)
	}
	return out, nil
}
