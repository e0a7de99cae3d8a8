package desktop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Config configures one desktop client (Client).
type Config struct {
	Params Params
	Target relayclient.Target
	Keys   *nostr.Keys
	// Channels are the joined channel ids (also Params.Channels when that
	// is empty); CoMembers the distinct pubkeys sharing a channel with the
	// client (profiles, statuses and presence read them).
	Channels  []string
	CoMembers []string
	// LoadCoMembers, when set, gives the co-members instead of CoMembers,
	// each time a read needs them: a client in a wide channel would
	// otherwise hold thousands of keys for reads it makes every 15 minutes.
	LoadCoMembers func() []string
	// RootMarker, when set, is the word seeded thread roots carry
	// (scenario.RootMarker(run_id)): the root lookup searches for
	// it. Empty: the lookup takes the channel head's most-replied row.
	RootMarker string
	// BeforeConnect, when set, is awaited before every connection attempt
	// (a process-wide connect-rate limiter); an error fails the attempt.
	BeforeConnect func(ctx context.Context) error
	Sink          relayclient.Sink  // every desktop_* op (and connect, auth); nil drops them
	Transport     http.RoundTripper // the shared HTTP pool; nil = a private one

	ConnectTimeout time.Duration // connect + auth; default relayclient.DefaultConnectTimeout
	ReadTimeout    time.Duration // per HTTP request; default 30 s
	Header         http.Header   // extra WebSocket upgrade headers

	// OnEvent sees every event of the channel subscriptions with its
	// arrival time (for delivery latency), read in place and valid only
	// until it returns; it runs on the reader goroutine and must not block.
	OnEvent func(ev *nostr.EventView, at time.Time, live bool)
	// Drain, when set, is awaited at the stop (with the grace) before the
	// connection closes: the place for publishes made on it to settle.
	Drain func(grace context.Context)
	// OnSession sees each new authenticated connection (nil when it ends),
	// so the shared activity schedule can publish through it. It runs on
	// the client's goroutine and must not block.
	OnSession func(c *relayclient.Conn)
}

// Client runs a Model against a relay: it is the thin driver that turns
// actions into WebSocket and HTTP requests (through modules/relayclient, which
// times and reports each as its desktop_* op) and their outcomes back into
// events, on the real clock.
type Client struct {
	cfg   Config
	model *Model
	ident Identity
	http  *relayclient.HTTP
	sink  *stopSink

	mu            sync.Mutex // guards box, relayPK, snapCommunity, roots, conn
	box           []Event
	relayPK       string
	snapCommunity string           // NIP-11's read_state_snapshot community ("": not advertised)
	roots         map[int][]string // seeded thread roots per channel index
	conn          *relayclient.Conn
	wake          chan struct{}

	subs map[string]*relayclient.Sub // run goroutine only
	wg   sync.WaitGroup

	// set by Run before anything starts: reads and EOSE waits end at the
	// stop; connects under way end with the grace.
	runCtx, connCtx context.Context
}

// New validates cfg and builds the client. It does not connect: Run does.
func New(cfg Config) (*Client, error) {
	if cfg.Keys == nil {
		return nil, errors.New("desktop: Config.Keys is required")
	}
	if len(cfg.Params.Channels) == 0 {
		cfg.Params.Channels = cfg.Channels
	}
	if len(cfg.Channels) == 0 {
		cfg.Channels = cfg.Params.Channels
	}
	if len(cfg.Channels) != len(cfg.Params.Channels) {
		return nil, fmt.Errorf("desktop: %d channels in Config but %d in Params", len(cfg.Channels), len(cfg.Params.Channels))
	}
	ident := Identity{Viewer: cfg.Keys.PubKey(), Channels: cfg.Channels, CoMembers: cfg.CoMembers, LoadCoMembers: cfg.LoadCoMembers}
	ident.presence = ident.PresenceAuthors() // at most 256, sent on every connect: kept
	cfg.Params.Presence = len(ident.presence) > 0
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	m, err := NewModel(cfg.Params)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, model: m, ident: ident, roots: map[int][]string{}, wake: make(chan struct{}, 1), subs: map[string]*relayclient.Sub{}}
	c.sink = &stopSink{inner: cfg.Sink}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: cfg.Target, Keys: cfg.Keys, Sink: c.sink, Transport: cfg.Transport, Timeout: cfg.ReadTimeout})
	if err != nil {
		return nil, fmt.Errorf("desktop: %w", err)
	}
	c.http = h
	return c, nil
}

// stopSink drops what a stop abandons: once the client is stopping, a
// desktop EOSE wait or read cut short (pending) is not recorded. Other
// operations on the socket (connect, auth, the activity's publishes) are
// the caller's to judge.
type stopSink struct {
	inner relayclient.Sink
	// stop is Run's stop context, set before anything starts. Its Err is
	// the stopping mark itself: a flag set by a callback of its own could
	// go up after a request cut by the stop had recorded itself.
	stop context.Context
}

func (s *stopSink) Record(r relayclient.Result) {
	if s.inner == nil {
		return
	}
	stopped := s.stop != nil && s.stop.Err() != nil
	if stopped && r.Outcome == relayclient.OutcomePending && strings.HasPrefix(r.Op, "desktop_") {
		return
	}
	s.inner.Record(r)
}

// Unwrap is the sink it passes Results on to (relayclient.Wrapper).
func (s *stopSink) Unwrap() relayclient.Sink { return s.inner }

// Conn is the current authenticated connection, or nil between sessions.
func (c *Client) Conn() *relayclient.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}

// EndSession is the human's session end (human.mean_session_secs): an
// ordinary reconnect. Safe to call from any goroutine.
func (c *Client) EndSession() { c.post(SessionEnd{At: time.Now()}) }

// takeBox empties the inbox post fills and returns what was in it.
func (c *Client) takeBox() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	box := c.box
	c.box = nil
	return box
}

func (c *Client) post(ev Event) {
	c.mu.Lock()
	c.box = append(c.box, ev)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// connected carries the new connection with its Connected event.
type connected struct {
	Connected
	conn *relayclient.Conn
}

func (connected) event() {}

// Run runs the client until stop ends, then shuts down:
//   - pending EOSE waits and desktop reads are abandoned and not recorded
//     (the subscriptions are closed, the reads cancelled);
//   - a connect under way finishes within its own timeout, as long as grace
//     lasts (nil: no limit), and is then closed;
//   - Config.Drain, when set, is awaited (with grace) before the connection
//     closes, so publishes made on it can settle.
//
// Run returns once every goroutine it started has finished; its error is
// always nil today (the signature leaves room for a client that cannot run).
func (c *Client) Run(stop, grace context.Context) error {
	if grace == nil {
		grace = context.WithoutCancel(stop)
	}
	// The sink reads the stop mark from stop itself, so it is up the moment
	// stop ends, before any operation can record itself as cut short.
	c.sink.stop = stop
	runCtx, cancel := context.WithCancel(stop)
	connCtx, cancelConn := context.WithCancel(context.WithoutCancel(grace))
	unhook := context.AfterFunc(grace, cancelConn)
	defer func() {
		cancel()
		c.wg.Wait()
		unhook()
		cancelConn()
		// a connection that came up as the client stopped is not left open
		for _, ev := range c.takeBox() {
			if cn, ok := ev.(connected); ok {
				cn.conn.Close()
			}
		}
	}()
	c.runCtx, c.connCtx = runCtx, connCtx
	c.exec(c.model.Step(Start{At: time.Now()}))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := c.model.NextWake()
		d := time.Until(next)
		if d < 0 {
			d = 0
		}
		timer.Reset(d)
		select {
		case <-stop.Done():
			c.model.Step(Stop{At: time.Now()})
			c.shutdown(grace)
			return nil
		case <-c.wake:
		case <-timer.C:
		}
		// Frames first: a deadline or tick that passed while answers that
		// arrived in time were waiting is judged after them.
		for _, ev := range c.takeBox() {
			if cn, ok := ev.(connected); ok {
				c.adopt(cn)
				ev = cn.Connected
			}
			c.exec(c.model.Step(ev))
		}
		if now := time.Now(); !now.Before(c.model.NextWake()) {
			var last time.Time
			if conn := c.Conn(); conn != nil {
				last = conn.LastFrameAt()
			}
			c.exec(c.model.Step(Wake{At: now, LastFrame: last}))
		}
	}
}

// shutdown abandons the subscriptions, lets Drain run, then closes the
// connection.
func (c *Client) shutdown(grace context.Context) {
	for id, s := range c.subs {
		s.Close() // an EOSE wait closed before its EOSE: stopSink drops it (abandoned at the stop)
		delete(c.subs, id)
	}
	if c.cfg.Drain != nil {
		c.cfg.Drain(grace)
	}
	c.disconnect()
}

func (c *Client) disconnect() {
	c.mu.Lock()
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
		if c.cfg.OnSession != nil {
			c.cfg.OnSession(nil)
		}
	}
	clear(c.subs)
}

// adopt makes a new connection current if the model still wants it.
func (c *Client) adopt(cn connected) {
	if cn.Epoch != c.model.epoch || c.model.state != stateConnecting {
		cn.conn.Close()
		return
	}
	c.mu.Lock()
	c.conn = cn.conn
	c.mu.Unlock()
	if cn.conn.Err() != nil {
		// it died before the model took it: its Disconnected was ignored
		c.post(Disconnected{At: time.Now(), Epoch: cn.Epoch})
	}
	if c.cfg.OnSession != nil {
		c.cfg.OnSession(cn.conn)
	}
}

func (c *Client) exec(acts []Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case Connect:
			c.wg.Add(1)
			go c.connect(a)
		case Disconnect:
			c.disconnect()
		case OpenSub:
			c.open(a.Spec)
		case CloseSub:
			if s := c.subs[a.ID]; s != nil {
				s.Close()
				delete(c.subs, a.ID)
			}
		case StartRead:
			c.wg.Add(1)
			go c.read(a.Read)
		}
	}
}

type nip11Doc struct {
	Self string `json:"self"`
	// ReadStateSnapshot is the snapshot extension's descriptor: the app
	// asks for the snapshot only when it carries version 1 and a
	// community_id (docs/desktop-requests.md §5.8).
	ReadStateSnapshot *struct {
		Version     int    `json:"version"`
		CommunityID string `json:"community_id"`
	} `json:"read_state_snapshot"`
}

// snapshotCommunity is the community id the relay's NIP-11 snapshot
// descriptor names, or "" when it advertises no usable snapshot.
func (d *nip11Doc) snapshotCommunity() string {
	if s := d.ReadStateSnapshot; s != nil && s.Version == 1 && s.CommunityID != "" {
		return s.CommunityID
	}
	return ""
}

// connect reads NIP-11 (a desktop read: abandoned at the stop) and then
// connects; a connect that has started runs to its own timeout within the
// grace, but none starts after the stop.
func (c *Client) connect(a Connect) {
	defer c.wg.Done()
	ctx := c.runCtx
	if c.cfg.BeforeConnect != nil {
		if err := c.cfg.BeforeConnect(ctx); err != nil {
			c.post(ConnectFailed{At: time.Now(), Epoch: a.Epoch})
			return
		}
	}
	if a.NIP11 {
		var doc nip11Doc
		if r := c.http.NIP11(ctx, OpNIP11, &doc); r.Outcome == relayclient.OutcomeOK {
			c.mu.Lock()
			if doc.Self != "" {
				c.relayPK = doc.Self
			}
			c.snapCommunity = doc.snapshotCommunity()
			c.mu.Unlock()
		}
	}
	if ctx.Err() != nil {
		return
	}
	epoch := a.Epoch
	conn, err := relayclient.Connect(c.connCtx, relayclient.Config{
		Target: c.cfg.Target, Keys: c.cfg.Keys, Sink: c.sink, Header: c.cfg.Header,
		ConnectTimeout: c.cfg.ConnectTimeout, EOSETimeout: c.cfg.Params.EOSETimeout,
		OnDisconnect: func(err error) {
			if err != nil { // nil: our own Close
				c.post(Disconnected{At: time.Now(), Epoch: epoch, Lease: strings.Contains(err.Error(), relayclient.LeaseReason)})
			}
		},
	})
	if err != nil {
		c.post(ConnectFailed{At: time.Now(), Epoch: epoch})
		return
	}
	c.post(connected{Connected: Connected{At: time.Now(), Epoch: epoch}, conn: conn})
}

func (c *Client) open(sp SubSpec) {
	conn := c.Conn()
	if conn == nil { // cannot happen while the model is connected; never leave a setup slot taken
		c.post(SubFailed{Sub: sp.ID, At: time.Now()})
		return
	}
	// Frames are judged by arrival: the wait lasts one more timeout for
	// frames that arrived in time but were not yet read, and the model
	// judges the EOSE by its arrival (a probe is judged by any frame).
	timeout, grace := c.model.p.EOSETimeout, c.model.p.EOSETimeout
	if sp.Probe {
		timeout, grace = c.model.p.ProbeWindow, 0
	}
	var replayed atomic.Int64
	id := sp.ID
	opt := relayclient.SubOptions{
		ID: id, Op: sp.Op, EOSETimeout: timeout, EOSEGrace: grace,
		OnEventView: func(ev *nostr.EventView, at time.Time, live bool) {
			if !live {
				replayed.Add(1)
			}
			if sp.Route.Channel() && c.cfg.OnEvent != nil {
				c.cfg.OnEvent(ev, at, live)
			}
		},
		OnEOSE: func(r relayclient.Result) {
			switch r.Outcome {
			case relayclient.OutcomeOK:
				c.post(EOSE{Sub: id, At: r.Start.Add(r.Duration), Sent: r.Start, Count: int(replayed.Load())})
			case relayclient.OutcomePending: // our Close, or the connection's end
			case relayclient.OutcomeThrottled: // a rate-limited CLOSED before the EOSE: retried
				c.post(SubClosed{Sub: id, At: r.Start.Add(r.Duration), Reason: r.Error})
			default:
				c.post(SubFailed{Sub: id, At: r.Start.Add(r.Duration)})
			}
		},
		OnClosed: func(reason string, at time.Time) { c.post(SubClosed{Sub: id, At: at, Reason: reason}) },
	}
	s, err := conn.Subscribe(SubFilters(sp, &c.ident), opt)
	if err != nil {
		c.post(SubFailed{Sub: id, At: time.Now()})
		return
	}
	c.subs[id] = s
}

func (c *Client) read(r Read) {
	defer c.wg.Done()
	ctx := c.runCtx
	ok, snapOK := c.runRead(ctx, r)
	if ctx.Err() != nil {
		return // abandoned by the stop
	}
	c.post(ReadSettled{Read: r.Key, At: time.Now(), OK: ok, SnapshotOK: snapOK})
}

func (c *Client) query(ctx context.Context, op string, fs []relayclient.Filter, check func([]byte) error) bool {
	body, err := relayclient.FiltersJSON(fs)
	if err != nil {
		return false
	}
	_, res := c.http.Do(ctx, relayclient.Request{Op: op, Method: http.MethodPost, Path: "/query", Body: body,
		Header: http.Header{"Content-Type": {"application/json"}}, Timeout: c.cfg.ReadTimeout, Check: check})
	return res.Outcome == relayclient.OutcomeOK
}

// eventsCheck parses a /query reply and hands the events to fn, whose
// error makes the request an error.
func (c *Client) eventsCheck(fn func([]nostr.Event) error) func([]byte) error {
	return func(body []byte) error {
		evs, err := relayclient.ParseEvents(body)
		if err != nil {
			return err
		}
		c.http.Saw(evs) // a recovery of what the app missed live (issue 40)
		if fn == nil {
			return nil
		}
		return fn(evs)
	}
}

// runRead runs one read's requests in order; ok is false if any of its
// main requests failed, snapOK the snapshot's outcome.
func (c *Client) runRead(ctx context.Context, r Read) (ok, snapOK bool) {
	ok, snapOK = true, true
	c.mu.Lock()
	ident := c.ident
	ident.Relay = c.relayPK
	snapCommunity := c.snapCommunity
	c.mu.Unlock()
	switch r.Key.Kind {
	case ReadRoster:
		p := &RosterPager{Viewer: ident.Viewer}
		for !p.Done() && ok {
			ok = c.query(ctx, OpRoster, []relayclient.Filter{p.Filter()}, c.eventsCheck(func(evs []nostr.Event) error { p.Advance(evs); return nil }))
		}
		return ok, true
	case ReadWindow:
		p := &WindowPager{Channel: ident.Channels[WindowChannel(r.Key.Index)], Relay: ident.Relay}
		for !p.Done() && ok {
			ok = c.query(ctx, OpWindow, []relayclient.Filter{p.Filter()}, c.eventsCheck(func(evs []nostr.Event) error { _, err := p.Advance(evs); return err }))
		}
		return ok, true
	case ReadThread:
		return c.readThread(ctx, r.Key.Index, &ident), true
	}
	for _, req := range FixedRequests(r, &ident) {
		if ctx.Err() != nil {
			return false, false
		}
		if req.Op == OpReadState {
			if snapCommunity == "" {
				// No descriptor in NIP-11: the app's plain bounded read.
				snapOK = c.query(ctx, req.Op, []relayclient.Filter{PlainReadStateFilter(ident.Viewer)}, c.eventsCheck(nil))
			} else {
				snapOK = c.query(ctx, req.Op, req.Filters, CheckReadStateSnapshot(ident.Viewer, snapCommunity))
			}
			continue
		}
		if !c.query(ctx, req.Op, req.Filters, c.eventsCheck(nil)) {
			ok = false
			break
		}
	}
	return ok, snapOK
}

// readThread is thread t's root lookup and first page. Before the first
// one in a channel the generator searches for its seeded roots (http_query,
// cached; not an app request); every read then makes the app's lookup of
// the root by id (desktop_thread_root) and the page
// (docs/desktop-requests.md §5.13, §5.14). Without a root no page is read.
func (c *Client) readThread(ctx context.Context, t int, ident *Identity) bool {
	n := len(ident.Channels)
	ch := ThreadChannel(t, n)
	chID := ident.Channels[ch]
	c.mu.Lock()
	roots, known := c.roots[ch]
	c.mu.Unlock()
	if !known {
		var found []string
		f := RootSearchFilter(chID)
		if c.cfg.RootMarker != "" {
			f = MarkedRootSearchFilter(chID, c.cfg.RootMarker)
		}
		ok := c.query(ctx, relayclient.OpHTTPQuery, []relayclient.Filter{f}, c.eventsCheck(func(evs []nostr.Event) error {
			if c.cfg.RootMarker != "" {
				found = scenario.MarkedRoots(evs, c.cfg.RootMarker)
			} else if r := PickRoot(evs); r != "" {
				found = []string{r}
			}
			return nil
		}))
		if !ok {
			return false // not cached: the next recovery searches again
		}
		roots = found
		c.mu.Lock()
		c.roots[ch] = roots
		c.mu.Unlock()
	}
	if len(roots) == 0 {
		return true
	}
	root := roots[(t/n)%len(roots)]
	if !c.query(ctx, OpThreadRoot, []relayclient.Filter{RootLookupFilter(chID, root)}, c.eventsCheck(nil)) {
		return false
	}
	return c.query(ctx, OpThreadWindow, []relayclient.Filter{ThreadPageFilter(chID, root)}, c.eventsCheck(nil))
}
