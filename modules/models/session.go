package models

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Config is one client: which global index of which scenario it runs, and
// where its outcomes go.
type Config struct {
	// Scenario is validated and has its target URLs set (for the embedded
	// relay the runner writes them into its copy first).
	Scenario *scenario.Scenario
	// Global is the client's global index (scenario.Client tells its kind).
	Global int
	// Sink receives every operation's Result; nil drops them.
	Sink relayclient.Sink
	// Rand is the client's random source; nil derives it from run_id and
	// Global (NewRand), so runs are reproducible.
	Rand *rand.Rand
	// Users is the ramp step's users, for the ten presence peers a human
	// watches (scenario.CoMembers); 0 means the largest step.
	Users float64
	// Transport is the shared HTTP pool (relayclient.NewTransport); nil gives the
	// client a private one.
	Transport http.RoundTripper
	// LocalAddr is an optional source IP for every dial.
	LocalAddr string
	// BeforeConnect, when set, is awaited before every connection attempt:
	// the place for a process-wide population.connect_rate_per_sec limiter.
	// An error ends the session as stopped.
	BeforeConnect func(ctx context.Context) error
	// Backoff paces reconnects after failed sessions; zero = defaults.
	Backoff Backoff
	// Header holds extra WebSocket upgrade headers.
	Header http.Header
	// PubKey, when set, gives client g's pubkey (a per-run memo,
	// scenario.KeyMemo.PubKey); nil derives each (Scenario.PubKey).
	PubKey func(g int) string
	// Keys, when set, gives client g's keys (the same memo's Keys, so a
	// client's own derivation serves its peers too); nil derives them
	// (Scenario.Keys).
	Keys func(g int) *nostr.Keys
}

// EndReason says why a session ended.
type EndReason uint8

// The reasons a session ends.
const (
	// EndStopped: the stop context ended and everything in flight settled
	// within the grace. Normal.
	EndStopped EndReason = iota
	// EndSession: the schedule's session end (human.mean_session_secs):
	// an ordinary reconnect follows. Normal.
	EndSession
	// EndFailed: the connect or auth failed, the connection was lost, or the
	// relay CLOSED a live subscription. Already recorded as the operation's
	// error; the next session reconnects after a backoff. Not an exit.
	EndFailed
	// EndCancelled: the grace ended with operations still in flight; they
	// were recorded as "unfinished at stop" errors. An unexpected exit: it
	// fails the run.
	EndCancelled
	// EndExited: the client could not run (bad config, a panic). An
	// unexpected exit: it fails the run.
	EndExited
	// EndInterrupted: the run was aborted (grace cancelled, not run out:
	// an abortOnFail threshold, test.abort(), a signal). What was in flight
	// was cut at once, as k6 cuts an aborted run, and recorded as pending
	// "cut by the abort". A consequence of the abort, not a client failure,
	// wherever the abort falls (before the stop or within the grace).
	EndInterrupted
)

// CutByAbort prefixes the Error of an operation the abort cut short; such
// Results stay pending (not errors): the abort, not the relay, ended them.
const CutByAbort = "cut by the abort: "

// Aborted reports whether grace ended because the run was aborted rather
// than because the shutdown grace ran out: the runner cancels it on an
// abort, and its deadline passes at the end of the grace.
func Aborted(grace context.Context) bool {
	return grace != nil && errors.Is(grace.Err(), context.Canceled)
}

func (r EndReason) String() string {
	switch r {
	case EndStopped:
		return "stopped"
	case EndSession:
		return "session_end"
	case EndFailed:
		return "failed"
	case EndCancelled:
		return "cancelled"
	case EndExited:
		return "exited"
	case EndInterrupted:
		return "interrupted"
	}
	return fmt.Sprintf("end(%d)", uint8(r))
}

// End is how one session ended.
type End struct {
	Reason EndReason
	// Err says why for EndFailed, EndCancelled and EndExited.
	Err error
}

// Unexpected reports whether the client exited unexpectedly (the
// buzz_client_exits metric; it fails the run): cancelled at the end of
// the grace, or unable to run at all.
func (e End) Unexpected() bool { return e.Reason == EndCancelled || e.Reason == EndExited }

func (e End) String() string {
	if e.Err != nil {
		return e.Reason.String() + ": " + e.Err.Error()
	}
	return e.Reason.String()
}

// ExitError is what Run returns when the client exited unexpectedly (with
// Run, unreachable from the binary).
type ExitError struct{ End End }

func (e *ExitError) Error() string { return "client exited: " + e.End.String() }

// Client is one simulated client across its sessions: identity, random
// source, backoff and the state that outlives a connection (an agent's turn
// under way, a human's known thread roots). A Client runs one session at a
// time; it is not safe for concurrent Session calls.
type Client struct {
	cfg   Config
	sc    *scenario.Scenario
	info  scenario.Client
	keys  *nostr.Keys
	oaTag []string
	ep    scenario.Endpoint
	rng   *rand.Rand
	sink  *stopSink
	http  *relayclient.HTTP // agents and hot-thread authors
	bo    backoffState

	human *humanState
	agent *agentState
	hot   *hotState
}

// New prepares client cfg.Global. It fails for an index that is not a
// client of the scenario, or for a desktop human (modules/models/desktop runs
// those, using Activity for their schedule).
func New(cfg Config) (*Client, error) {
	if cfg.Scenario == nil {
		return nil, errors.New("client: no scenario")
	}
	sc := cfg.Scenario
	info, ok := sc.Client(cfg.Global)
	if !ok {
		return nil, fmt.Errorf("client: global index %d is not a client of scenario %q", cfg.Global, sc.RunID)
	}
	if info.Kind == scenario.KindDesktop {
		return nil, fmt.Errorf("client: global index %d is a desktop human (modules/models/desktop runs it)", cfg.Global)
	}
	if sc.Target.WSURL == "" || sc.Target.HTTPURL == "" {
		return nil, errors.New("client: the scenario has no target URLs (set them to the embedded relay's before creating clients)")
	}
	if cfg.Sink == nil {
		cfg.Sink = relayclient.NopSink{}
	}
	if cfg.Rand == nil {
		cfg.Rand = NewRand(sc.RunID, cfg.Global)
	}
	if cfg.Users <= 0 {
		cfg.Users = sc.PeakUsers()
	}
	keys := sc.Keys
	if cfg.Keys != nil {
		keys = cfg.Keys
	}
	c := &Client{cfg: cfg, sc: sc, info: info, keys: keys(cfg.Global), rng: cfg.Rand,
		sink: &stopSink{inner: cfg.Sink}, ep: sc.Endpoint(info.Community)}
	c.bo = backoffState{cfg: cfg.Backoff.withDefaults()}
	if c.keys == nil {
		return nil, fmt.Errorf("client: no keys for global index %d", cfg.Global)
	}
	switch info.Kind {
	case scenario.KindAgent:
		owner := sc.AgentOwnerKeys(cfg.Global)
		tag, err := nostr.AttestAgent(owner, c.keys.PubKey(), "")
		if err != nil {
			return nil, fmt.Errorf("client: NIP-OA tag of agent %d: %w", cfg.Global, err)
		}
		c.oaTag = tag
		c.agent = newAgentState(c, owner.PubKey())
	case scenario.KindHotAuthor:
		if !sc.HotThreadEnabled() {
			return nil, fmt.Errorf("client: global index %d is a hot-thread author but the scenario has no hot thread", cfg.Global)
		}
		c.hot = &hotState{}
	default:
		c.human = &humanState{}
	}
	if info.Kind == scenario.KindAgent || info.Kind == scenario.KindHotAuthor {
		h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: c.target(), Keys: c.keys, OATag: c.oaTag,
			Sink: c.sink, Transport: cfg.Transport, Timeout: HTTPTimeout})
		if err != nil {
			return nil, fmt.Errorf("client: HTTP client: %w", err)
		}
		c.http = h
	}
	return c, nil
}

// Kind is the client's model.
func (c *Client) Kind() scenario.Kind { return c.info.Kind }

// Global is the client's global index.
func (c *Client) Global() int { return c.cfg.Global }

// PubKey is the client's public key.
func (c *Client) PubKey() string { return c.keys.PubKey() }

func (c *Client) target() relayclient.Target {
	t := relayclient.Target{WSURL: c.ep.WSURL, HTTPURL: c.ep.HTTPURL, LocalAddr: c.cfg.LocalAddr, Identity: c.ep.Identity}
	if c.sc.Target.CommunityHostTemplate != "" {
		t.Host = c.ep.Host
		t.ConnectAddr = c.ep.DialAddr
	}
	return t
}

func (c *Client) connectTimeout() time.Duration {
	if c.sc.Target.ConnectTimeoutSecs > 0 {
		return scenario.Secs(c.sc.Target.ConnectTimeoutSecs)
	}
	return relayclient.DefaultConnectTimeout
}

// session is what one session's code gets: the stop signal (no new
// requests), the operation context (cancelled only when the grace ends)
// and the in-flight tracker.
type session struct {
	stop     <-chan struct{} // closed at the stop: start nothing new
	stopCtx  context.Context
	halt     context.Context // ends at the stop or when the session fails
	unhalt   context.CancelFunc
	opCtx    context.Context // for operations under way: ends with the grace
	inflight *tracker

	mu      sync.Mutex
	failErr error
}

// fail ends the session as failed (the first reason wins).
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.failErr == nil {
		s.failErr = err
	}
	s.mu.Unlock()
	s.unhalt()
}

// leaseEnd ends the session as its schedule would (EndSession: no
// failure recorded, the next session connects without a backoff).
func (s *session) leaseEnd() { s.unhalt() }

// failure is why the session failed, nil while it has not.
func (s *session) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failErr
}

// end is how the session ended, once its loop has returned: failed, else
// stopped, else the schedule's session end.
func (s *session) end() End {
	if err := s.failure(); err != nil {
		return End{Reason: EndFailed, Err: err}
	}
	if s.stopCtx.Err() != nil {
		return End{Reason: EndStopped}
	}
	return End{Reason: EndSession} // the schedule's end, or a NIP-FI lease's
}

// Session runs one session of the client: it waits out its backoff if the
// previous session failed, connects, runs until the session ends, stop is
// cancelled, or a failure ends it, and returns how it ended.
//
// Shutdown: when stop ends the client starts no new request, publish or
// connect; operations under way finish within their own deadlines (a
// connect within target.connect_timeout_secs, a publish 30 s for its OK,
// HTTP requests their 30 s) as long as grace lasts. When grace runs out
// (its deadline) first, whatever is still in flight is recorded as an
// "unfinished at stop" error and the session returns EndCancelled. When
// grace is cancelled (the run was aborted, see Aborted) whatever is in
// flight is recorded as pending, "cut by the abort", and the session
// returns EndInterrupted. A nil grace never ends: in-flight operations
// always run to their own deadlines.
func (c *Client) Session(stop, grace context.Context) (end End) {
	if grace == nil {
		grace = context.WithoutCancel(stop)
	}
	defer func() {
		if p := recover(); p != nil {
			end = End{Reason: EndExited, Err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
		}
	}()
	if stop.Err() != nil {
		return End{Reason: EndStopped}
	}
	// Operations end only through the hook below, after the sink knows the
	// grace is over, so what they record is marked unfinished.
	opCtx, cancelOps := context.WithCancel(context.WithoutCancel(grace))
	defer cancelOps()
	var graceEnded, aborted atomic.Bool
	hooked := make(chan struct{})
	c.sink.stopped.Store(false)
	c.sink.aborted.Store(false)
	unhook := context.AfterFunc(grace, func() {
		defer close(hooked)
		// From here on anything still in flight settles as unfinished, or
		// as cut by the abort.
		if Aborted(grace) {
			aborted.Store(true)
			c.sink.aborted.Store(true)
		} else {
			graceEnded.Store(true)
			c.sink.stopped.Store(true)
		}
		cancelOps()
	})
	halt, unhalt := context.WithCancel(stop)
	defer unhalt()
	s := &session{stop: stop.Done(), stopCtx: stop, halt: halt, unhalt: unhalt, opCtx: opCtx, inflight: newTracker()}
	defer func() {
		if !unhook() {
			<-hooked // the grace ended: let the hook finish marking it
		}
		switch {
		case end.Reason == EndExited:
		case aborted.Load():
			end = End{Reason: EndInterrupted, Err: errors.New("the run was aborted")}
		case graceEnded.Load():
			end = End{Reason: EndCancelled, Err: errors.New("operations still in flight when the shutdown grace ended")}
		}
	}()
	if !c.bo.wait(stop, c.rng) {
		return End{Reason: EndStopped}
	}
	switch c.info.Kind {
	case scenario.KindAgent:
		end = c.agentSession(s)
	case scenario.KindHotAuthor:
		end = c.hotSession(s)
	default:
		end = c.humanSession(s)
	}
	switch end.Reason {
	case EndFailed:
		c.bo.failed()
		// A throttled connect names how long to wait: wait at least that.
		var oe *relayclient.OpError
		if errors.As(end.Err, &oe) && oe.Result.RetryAfter > 0 {
			c.bo.atLeast = oe.Result.RetryAfter
		}
	case EndSession, EndStopped:
		c.bo.reset()
	}
	return end
}

// Run runs sessions one after another until stop ends (returns nil) or the
// client exits unexpectedly (returns an *ExitError). It is the plain-Go
// form of what the extension does with one session per iteration.
// Unreachable from the binary (deadcode), kept: the models stay usable from plain Go, and the e2e
// tests drive them so.
func Run(stop, grace context.Context, cfg Config) error {
	c, err := New(cfg)
	if err != nil {
		return &ExitError{End: End{Reason: EndExited, Err: err}}
	}
	for {
		end := c.Session(stop, grace)
		if end.Unexpected() {
			return &ExitError{End: end}
		}
		if stop.Err() != nil {
			return nil
		}
	}
}

// connect dials and authenticates within the connect timeout. It is not
// started after the stop; once started it finishes within its own deadline
// unless the grace ends. A connection lost later fails the session.
func (c *Client) connect(s *session) (*relayclient.Conn, error) {
	if c.cfg.BeforeConnect != nil {
		if err := c.cfg.BeforeConnect(s.stopCtx); err != nil {
			return nil, errStopped
		}
	}
	if s.stopped() {
		return nil, errStopped
	}
	return relayclient.Connect(s.opCtx, relayclient.Config{
		Target: c.target(), Keys: c.keys, OATag: c.oaTag, Sink: c.sink,
		ConnectTimeout: c.connectTimeout(), Header: c.cfg.Header,
		OnDisconnect: func(err error) {
			if err != nil && strings.Contains(err.Error(), relayclient.LeaseReason) {
				// NIP-FI's session lease ended: an ordinary reconnect
				// with a fresh assertion, not a lost connection.
				s.leaseEnd()
				return
			}
			if err != nil {
				s.fail(fmt.Errorf("connection lost: %w", err))
			}
		},
	})
}

// errStopped means the stop came before a connect could start.
var errStopped = errors.New("stopped")

// connectEnd maps a connect error to how the session ends.
func connectEnd(err error) End {
	if errors.Is(err, errStopped) {
		return End{Reason: EndStopped}
	}
	return End{Reason: EndFailed, Err: err}
}

// stopped reports whether the stop has come.
func (s *session) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// settle waits for in-flight operations (bounded by the grace), then
// closes conn (if any). Subscriptions are ended here first without a CLOSE
// frame (Sub.Forget: the socket's close ends them on the relay), so those
// still waiting for EOSE are recorded as pending ("closed before EOSE"):
// the report's abandoned column accounts for them.
func (s *session) settle(conn *relayclient.Conn, subs []*relayclient.Sub) {
	s.inflight.wait(s.opCtx)
	for _, sub := range subs {
		if sub != nil {
			sub.Forget()
		}
	}
	if conn != nil {
		conn.Close()
		select {
		case <-conn.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// tracker counts operations in flight so a shutdown can wait for them.
type tracker struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed while n == 0
}

func newTracker() *tracker {
	z := make(chan struct{})
	close(z)
	return &tracker{zero: z}
}

func (t *tracker) add() {
	t.mu.Lock()
	if t.n == 0 {
		t.zero = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	t.n--
	if t.n == 0 {
		close(t.zero)
	}
	t.mu.Unlock()
}

// wait blocks until nothing is in flight or ctx ends.
func (t *tracker) wait(ctx context.Context) {
	t.mu.Lock()
	z := t.zero
	t.mu.Unlock()
	select {
	case <-z:
	case <-ctx.Done():
	}
}

// stopSink passes Results through, as CutShort reads them once the grace
// has ended (stopped) or an abort cancelled it (aborted).
type stopSink struct {
	inner   relayclient.Sink
	stopped atomic.Bool
	aborted atomic.Bool
}

func (s *stopSink) Record(r relayclient.Result) {
	s.inner.Record(CutShort(r, s.aborted.Load(), s.stopped.Load()))
}

// Unwrap is the sink it passes Results on to (relayclient.Wrapper).
func (s *stopSink) Unwrap() relayclient.Sink { return s.inner }

// CutShort is how a Result reads after its session's grace: an operation
// cut short (pending, or failed by the cancellation) is pending "cut by
// the abort" when the run was aborted, else, once the grace ran out
// (ended), an "unfinished at stop" error, which is what a cancelled
// client's in-flight operations are. Throttles are the relay's own answer
// and stay throttles; an EOSE wait the session closed stays abandoned
// (buzz-LOADGEN "Abort" abandons EOSE waits at the stop). Every model's
// session sink (modules/models/desktop too) reads Results through it.
func CutShort(r relayclient.Result, aborted, ended bool) relayclient.Result {
	cutShort := r.Outcome == relayclient.OutcomePending || r.Outcome == relayclient.OutcomeError
	switch {
	case aborted && cutShort && !strings.HasPrefix(r.Error, CutByAbort):
		r.Outcome = relayclient.OutcomePending
		r.Error = CutByAbort + r.Error
	case ended && cutShort && !strings.HasPrefix(r.Error, "unfinished at stop") && r.Error != relayclient.ClosedBeforeEOSE:
		r.Outcome = relayclient.OutcomeError
		r.Error = "unfinished at stop: " + r.Error
	}
	return r
}
