package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Version is reported in NIP-11.
const Version = "buzzload-localrelay/0.1"

// Relay is the embedded Buzz-compatible relay. Build it with New, start it
// with Start, stop it with Close. All methods are safe for concurrent use.
type Relay struct {
	cfg          Config
	relayKeys    *nostr.Keys
	operatorKeys *nostr.Keys
	operators    map[string]bool
	secretFile   *secretFile // where a generated operator secret was written (nil: none)

	upgrader websocket.Upgrader
	faults   *Faults

	fi *fiPolicy // NIP-FI enforcement (nil: off)

	allowMu   sync.RWMutex
	allowlist map[string]bool // Config.PubkeyAllowlist's keys (hex)

	mu         sync.RWMutex
	comms      map[string]*community // by normalised host; tombstoned ones stay
	deployHost string

	ln       net.Listener
	srv      *http.Server
	started  atomic.Bool
	draining atomic.Bool
	// The drills' ends (unix ns; 0: none) and the slow store's delay
	// (drills.go).
	downUntil, stallUntil, limiterUntil, slowUntil, slowDelay atomic.Int64
	drainMu                                                   sync.Mutex // orders connWG.Add against Close's Wait
	closed                                                    chan struct{}
	closeMu                                                   sync.Once
	conns                                                     atomic.Int64
	connWG                                                    sync.WaitGroup
	opReplay                                                  *replayCache
	stats                                                     counters
	wsURL                                                     string
	httpURL                                                   string
	opOrigin                                                  string
}

// URLs are where a started relay listens.
type URLs struct {
	WS   string // ws://host:port (the deployment community)
	HTTP string // http://host:port
	Host string // the deployment community's normalised host
}

// New validates cfg and prepares the keys. It does not listen yet.
// A generated operator secret is written (0600) to cfg.OperatorSecretFile,
// which must not exist yet; Close removes it.
func New(cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r := &Relay{cfg: cfg, comms: map[string]*community{}, closed: make(chan struct{}), operators: map[string]bool{}}
	var err error
	if r.fi, err = parseNIPFI(cfg.NIPFIMode, cfg.NIPFIIssuers, cfg.NIPFIMaxAssertionAgeSecs, cfg.NIPFIMaxConnectionLifetimeSecs); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	if cfg.RelaySecret != "" {
		r.relayKeys, err = nostr.NewKeys(cfg.RelaySecret)
	} else {
		r.relayKeys, err = nostr.GenerateKeys()
	}
	if err != nil {
		return nil, fmt.Errorf("relay: relay key: %w", err)
	}
	if cfg.OperatorSecret != "" {
		r.operatorKeys, err = nostr.NewKeys(cfg.OperatorSecret)
		if err != nil {
			return nil, fmt.Errorf("relay: BUZZ_OPERATOR_SECRET: %w", err)
		}
	} else {
		if r.operatorKeys, err = nostr.GenerateKeys(); err != nil {
			return nil, fmt.Errorf("relay: operator key: %w", err)
		}
		if cfg.OperatorSecretFile != "" {
			sf, err := writeSecretFile(cfg.OperatorSecretFile, r.operatorKeys.SecretHex())
			if err != nil {
				return nil, fmt.Errorf("relay: BUZZ_OPERATOR_SECRET_FILE: %w", err)
			}
			r.secretFile = sf
		}
	}
	r.operators[r.operatorKeys.PubKey()] = true
	for _, pk := range cfg.OperatorPubkeys {
		hexPK, _ := nostr.PubKeyHex(pk) // Validate checked it (hex or npub1…)
		r.operators[hexPK] = true
	}
	r.faults = newFaults()
	r.opReplay = newReplayCache(cfg.ReplayWindow)
	r.upgrader = websocket.Upgrader{
		// A 1 KiB read buffer (larger payloads are read straight into the
		// message) instead of net/http's 4 KiB one; the writer frames
		// messages itself, so gorilla's write buffers are pooled and unused.
		ReadBufferSize:  1024,
		WriteBufferPool: &sync.Pool{},
		// Buzz does not check Origin; browsers and tools dial from anywhere.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return r, nil
}

// Start listens on cfg.Listen, maps the deployment community and the
// configured ones, and serves in the background. Cancelling ctx closes the relay.
func (r *Relay) Start(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("relay: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", r.cfg.Listen)
	if err != nil {
		return fmt.Errorf("relay: listen on %s: %w", r.cfg.Listen, err)
	}
	r.ln = ln
	addr := ln.Addr().(*net.TCPAddr)
	host := r.cfg.DeploymentHost
	if host == "" {
		ip := addr.IP.String()
		if addr.IP.IsUnspecified() {
			ip = "127.0.0.1"
		}
		host = net.JoinHostPort(ip, fmt.Sprint(addr.Port))
	}
	r.deployHost = nostr.NormalizeHost(host)
	httpScheme := "http"
	if r.cfg.PublicScheme == "wss" {
		httpScheme = "https"
	}
	r.wsURL = r.cfg.PublicScheme + "://" + r.deployHost
	r.httpURL = httpScheme + "://" + r.deployHost
	r.opOrigin = strings.TrimSuffix(r.cfg.OperatorOrigin, "/")
	if r.opOrigin == "" {
		r.opOrigin = r.httpURL
	}
	dep, err := r.createCommunity(r.deployHost, "", true)
	if err != nil {
		ln.Close()
		return err
	}
	if r.cfg.DeploymentHost == "" && (addr.IP.IsLoopback() || addr.IP.IsUnspecified()) {
		// Like Buzz's community_host_aliases: localhost:<port> reaches the
		// deployment community too (hosts are otherwise distinct by name).
		r.mu.Lock()
		r.comms[nostr.NormalizeHost(net.JoinHostPort("localhost", fmt.Sprint(addr.Port)))] = dep
		r.mu.Unlock()
	}
	for _, h := range r.cfg.Communities {
		if _, err := r.createCommunity(nostr.NormalizeHost(h), "", false); err != nil {
			ln.Close()
			return err
		}
	}
	r.srv = &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute, // idle keep-alive HTTP connections (not upgraded sockets)
		MaxHeaderBytes:    64 << 10,
	}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.logf("ERROR relay: serve: %v", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			r.Close()
		case <-r.closed:
		}
	}()
	go r.janitor()
	return nil
}

// janitor prunes replay caches and idle rate-limit state once a second.
func (r *Relay) janitor() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.closed:
			return
		case now := <-t.C:
			r.opReplay.prune(now)
			for _, c := range r.allCommunities() {
				c.replay.prune(now)
				c.limits.prune(now)
			}
		}
	}
}

// URLs returns the listening URLs; valid after Start.
func (r *Relay) URLs() URLs { return URLs{WS: r.wsURL, HTTP: r.httpURL, Host: r.deployHost} }

// Addr is the listener's address (host:port), valid after Start.
func (r *Relay) Addr() string {
	if r.ln == nil {
		return ""
	}
	return r.ln.Addr().String()
}

// RelayPubKey is the key that signs relay events (NIP-11 `self`).
func (r *Relay) RelayPubKey() string { return r.relayKeys.PubKey() }

// OperatorPubKey is the operator API signer this relay accepts.
func (r *Relay) OperatorPubKey() string { return r.operatorKeys.PubKey() }

// OperatorKeys returns the operator signer, for in-process callers (tests,
// `buzzload run` against the embedded relay). Never log its secret.
func (r *Relay) OperatorKeys() *nostr.Keys { return r.operatorKeys }

// OperatorOrigin is the origin operator NIP-98 u tags must use.
func (r *Relay) OperatorOrigin() string { return r.opOrigin }

// OperatorSecretFile is where a generated operator secret was written ("" if
// none) and the permission bits the file was created with.
func (r *Relay) OperatorSecretFile() (path string, mode fs.FileMode) {
	if r.secretFile == nil {
		return "", 0
	}
	return r.secretFile.path, r.secretFile.Mode()
}

// Faults returns the fault-injection controls (Go API only).
func (r *Relay) Faults() *Faults { return r.faults }

// Close drains: new upgrades get 503 "relay restarting", open sockets are
// closed with 1012 "relay restarting", then the server stops.
func (r *Relay) Close() error {
	var err error
	r.closeMu.Do(func() {
		r.drainMu.Lock()
		r.draining.Store(true)
		r.drainMu.Unlock()
		close(r.closed)
		jitter := time.Duration(min(max(r.cfg.DrainJitterMs, 0), 20000)) * time.Millisecond
		r.drainAll(jitter) // Buzz's shutdown: 1012 to every socket, spread by BUZZ_DRAIN_JITTER_MS
		done := make(chan struct{})
		go func() { r.connWG.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(r.cfg.DrainOnClose + jitter):
		}
		if r.srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.DrainOnClose)
			defer cancel()
			if e := r.srv.Shutdown(ctx); e != nil {
				err = r.srv.Close()
			}
		}
		if r.secretFile != nil {
			r.secretFile.remove() // the generated key dies with the relay
		}
	})
	return err
}

func (r *Relay) logf(format string, args ...any) {
	if r.cfg.Logf != nil {
		r.cfg.Logf(format, args...)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the OS RNG failing is unrecoverable
	}
	return hex.EncodeToString(b)
}

func newUUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// isUUID accepts the canonical 8-4-4-4-12 hex form (any case).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// ---- routing ----

const unmappedBody = "relay: no community is configured for this host"

// ServeHTTP routes by path and Host (docs/buzz-protocol.md §3.1, §3.8).
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	if path == "/metrics" && req.Method == http.MethodGet {
		// Buzz's metrics port answers apart from its API (metrics.go).
		r.serveMetrics(w)
		return
	}
	if r.down() && !strings.HasPrefix(path, "/operator/drill") {
		serveDown(w)
		return
	}
	if strings.HasPrefix(path, "/operator/") {
		r.serveOperator(w, req)
		return
	}
	switch path {
	case "/", "/info":
		if path == "/" && req.Method == http.MethodGet && websocket.IsWebSocketUpgrade(req) &&
			!strings.Contains(req.Header.Get("Accept"), "application/nostr+json") {
			r.serveWS(w, req)
			return
		}
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			writeJSONError(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		r.serveNIP11(w, req)
		return
	case "/health", "/_liveness":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok"))
		return
	case "/_readiness":
		if r.draining.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting_down"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		return
	}
	c := r.lookup(req.Host)
	if c == nil {
		writeJSONError(w, http.StatusNotFound, unmappedBody)
		return
	}
	switch {
	case path == "/query" || path == "/events" || path == "/count":
		// Protected by NIP-FI's HTTP guard (router.rs nip_fi_assertion_guard).
		if r.fi != nil {
			g, missing, err := r.fi.verify(req.Header, time.Now())
			if err != nil {
				r.logf(" INFO relay: %s: NIP-FI refused %s: %v", c.host, path, err)
				fiDeny(w, missing)
				return
			}
			req = req.WithContext(context.WithValue(req.Context(), fiGrantKey{}, g))
		}
		r.serveBridge(w, req, c)
	case strings.HasPrefix(path, "/buzz/v1/") && r.cfg.BuzzV1:
		r.serveBuzzV1(w, req, c)
	default:
		writeJSONError(w, http.StatusNotFound, "not found")
	}
}

// lookup returns the active community for a Host header, or nil when the
// host is unmapped, archived or deleted (all fail closed the same way).
func (r *Relay) lookup(host string) *community {
	h := nostr.NormalizeHost(host)
	if h == "" {
		return nil
	}
	r.mu.RLock()
	c := r.comms[h]
	r.mu.RUnlock()
	if c == nil || !c.active() {
		return nil
	}
	return c
}

func (r *Relay) allCommunities() []*community {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*community, 0, len(r.comms))
	for _, c := range r.comms {
		out = append(out, c)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"error: internal server error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// serveNIP11 writes the relay information document (docs/buzz-protocol.md §5).
func (r *Relay) serveNIP11(w http.ResponseWriter, req *http.Request) {
	nips := []int{1, 2, 10, 11, 16, 17, 23, 25, 29, 33, 38, 42, 50}
	if r.cfg.RequireRelayMembership {
		nips = append(nips, 43) // nip11.rs: advertised only when enforced
	}
	doc := map[string]any{
		"name":                 "Buzz Relay",
		"description":          "Buzz — private team communication relay (buzzload local relay)",
		"pubkey":               nil,
		"contact":              nil,
		"supported_nips":       nips,
		"supported_extensions": []string{"nip-er"},
		"software":             "https://github.com/buzzload/buzzload",
		"version":              Version,
		"limitation": map[string]any{
			"max_message_length":   r.cfg.MaxFrameBytes,
			"max_subscriptions":    r.cfg.MaxSubscriptions,
			"max_filters":          r.cfg.MaxFilters,
			"max_limit":            r.cfg.MaxHistoricalLimit,
			"max_subid_length":     r.cfg.MaxSubIDLength,
			"min_pow_difficulty":   nil,
			"auth_required":        true,
			"payment_required":     false,
			"restricted_writes":    true,
			"due_delivery_mode":    "push",
			"max_not_before_delta": 31536000,
		},
		"self": r.relayKeys.PubKey(),
	}
	if c := r.lookup(req.Host); c != nil {
		if r.cfg.ReadStateSnapshot {
			doc["read_state_snapshot"] = map[string]any{
				"version": 1, "community_id": c.id, "max_events": 4096, "max_event_array_bytes": 8 << 20,
			}
		}
		if r.cfg.BuzzV1 {
			doc["buzz_v1"] = map[string]any{
				"version": 1, "base_path": "/buzz/v1", "retention_seconds": r.cfg.BuzzV1RetentionSeconds,
				"max_channels": 20, "max_intents": 100, "max_contexts": 20, "max_context_messages": 100,
				"max_thread_summaries": 5, "eligible_kinds": buzzV1Kinds,
			}
		}
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	b, _ := json.Marshal(doc)
	w.Header().Set("Content-Type", "application/nostr+json")
	w.Write(b)
}
