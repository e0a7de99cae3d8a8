package relayclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Defaults.
const (
	DefaultConnectTimeout = 10 * time.Second // connect + auth (target.connect_timeout_secs)
	DefaultPublishTimeout = 30 * time.Second // from the start of the send to the OK
	DefaultEOSETimeout    = 30 * time.Second // REQ → EOSE
	DefaultWriteTimeout   = 10 * time.Second // any frame other than EVENT
	DefaultMaxFrameBytes  = 4 << 20          // inbound frames larger than this are discarded and counted
	DefaultReadBufferSize = 1024             // per connection, held for its life
	writeBufferSize       = 4096             // pooled: only held while a frame is written
)

// Default operation names (buzz-loadgen's).
const (
	OpConnect       = "connect"
	OpAuth          = "auth"
	OpPublish       = "publish"
	OpSubscribeEOSE = "subscribe_eose"
	OpCount         = "count"
	OpBadFrame      = "bad_frame" // an inbound frame we could not use
	OpNotice        = "notice"    // a rate-limited NOTICE that settled no operation
)

// Errors.
var (
	ErrClosed = errors.New("relay: connection closed")
)

// OpError is returned when an operation did not end ok; Result is what was
// recorded (Outcome tells throttled from error, RetryAfter how long to wait).
type OpError struct{ Result Result }

func (e *OpError) Error() string {
	return e.Result.Op + ": " + e.Result.Outcome.String() + ": " + e.Result.Error
}

// Config configures one WebSocket connection. Zero values take the defaults.
type Config struct {
	Target Target
	Keys   *nostr.Keys // the identity AUTH signs with (required for Auth)
	OATag  []string    // NIP-OA ["auth", owner, conditions, sig] for agents; nil for humans
	Sink   Sink        // nil drops Results

	ConnectTimeout time.Duration // bounds connect + auth in Connect
	PublishTimeout time.Duration // default for Publish
	EOSETimeout    time.Duration // default for Subscribe
	WriteTimeout   time.Duration // deadline of a non-EVENT write
	MaxFrameBytes  int           // inbound frame limit (discard and count beyond it)
	ReadBufferSize int           // gorilla read buffer
	// ReadIdleTimeout ends the connection (as lost) when neither a frame nor
	// a ping arrives for this long; Buzz pings every 30 s. 0 = never.
	ReadIdleTimeout time.Duration

	Header http.Header // extra upgrade headers (e.g. Buzz-Client); Host is set from Target

	// OnNotice sees every NOTICE with its arrival time (reader goroutine; must not block).
	OnNotice func(text string, at time.Time)
	// OnDisconnect is called once when the connection ends; err is nil after our Close.
	OnDisconnect func(err error)
}

func (c *Config) withDefaults() {
	if c.Sink == nil {
		c.Sink = NopSink{}
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.EOSETimeout == 0 {
		c.EOSETimeout = DefaultEOSETimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.ReadBufferSize <= 0 {
		c.ReadBufferSize = DefaultReadBufferSize
	}
}

// Stats are a connection's counters.
type Stats struct {
	FramesIn   int64 // frames read
	BytesIn    int64 // payload bytes read
	FramesOut  int64 // frames written
	BytesOut   int64 // payload bytes written
	BadFrames  int64 // frames that became bad_frame errors
	Notices    int64 // NOTICEs received
	LateFrames int64 // answers for operations already settled (late OK, events after our CLOSE)
}

// Package-wide buffer pools. They hold no state a caller can observe: the
// write pool is gorilla's shared WriteBufferPool (a buffer is held only while
// a frame is written), the frame pool backs reads and envelope building.
var (
	writePool = &sync.Pool{}
	framePool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}
)

func getFrameBuf() *[]byte { return framePool.Get().(*[]byte) }

func putFrameBuf(b *[]byte) {
	if cap(*b) > 64<<10 { // don't keep a rare huge frame's buffer alive
		return
	}
	*b = (*b)[:0]
	framePool.Put(b)
}

// Conn is one WebSocket connection to a relay. It runs exactly one reader
// goroutine; writes are serialised by a mutex on the caller's goroutine with
// a deadline on each. All methods are safe for concurrent use.
//
// Callbacks (OnEvent, OnEOSE, OnClosed, publish done funcs, OnNotice) run on
// the reader goroutine or a deadline timer's goroutine: they must not block,
// and must not call the blocking methods (Publish, Auth, Count, Sub.Wait)
// of the same Conn; the Async forms are fine.
type Conn struct {
	cfg      Config
	ws       *websocket.Conn
	relayURL string    // public URL for the NIP-42 relay tag
	born     time.Time // dial time; monotonic base for lastFrame

	wmu sync.Mutex // serialises writes

	mu        sync.Mutex
	closed    bool  // no new operations
	byUs      bool  // Close was called
	lostErr   error // why the relay side ended
	challenge string
	chal      chan struct{} // closed when the first AUTH challenge arrives
	authed    bool
	seq       uint64
	pubs      map[string]*pending // by event id (publishes and the AUTH event)
	counts    map[string]*pending // by COUNT sub id
	subs      map[string]*Sub
	late      []string // recently timed-out event ids (bounded ring)

	closeOnce sync.Once
	done      chan struct{} // closed when the reader has exited and everything is settled

	lastFrame atomic.Int64 // nanoseconds after born
	stats     struct {
		framesIn, bytesIn, framesOut, bytesOut, badFrames, notices, late atomic.Int64
	}
}

// Connect dials and authenticates within cfg.ConnectTimeout (and ctx),
// recording "connect" and "auth". On failure the error is an *OpError (or
// the context's error) and nothing stays open.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	cfg.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Auth(ctx); err != nil {
		c.Close()
		<-c.done
		return nil, err
	}
	return c, nil
}

// Dial opens the WebSocket and starts the reader, recording "connect". It
// does not authenticate: the relay's AUTH challenge is kept for Auth.
// Without a deadline on ctx it is bounded by ConnectTimeout.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	cfg.withDefaults()
	start := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
	}
	res := Result{Op: OpConnect, Start: start}
	fail := func(o Outcome, msg string, retry time.Duration) (*Conn, error) {
		res.Duration = time.Since(start)
		res.Outcome, res.Error, res.RetryAfter = o, msg, retry
		cfg.Sink.Record(res)
		return nil, &OpError{Result: res}
	}
	ep, err := cfg.Target.ws()
	if err != nil {
		return fail(OutcomeError, err.Error(), 0)
	}
	laddr, err := localTCPAddr(cfg.Target.LocalAddr)
	if err != nil {
		return fail(OutcomeError, err.Error(), 0)
	}
	nd := &net.Dialer{LocalAddr: laddr}
	d := websocket.Dialer{
		NetDialContext:    nd.DialContext,
		ReadBufferSize:    cfg.ReadBufferSize,
		WriteBufferSize:   writeBufferSize,
		WriteBufferPool:   writePool,
		EnableCompression: false, // never: permessage-deflate costs ~830 KiB per connection
	}
	hdr := cfg.Header
	if ep.host != "" {
		hdr = hdr.Clone()
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Set("Host", ep.host)
	}
	ws, resp, err := d.DialContext(ctx, ep.dialURL, hdr)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			msg := fmt.Sprintf("upgrade refused: HTTP %d: %s", resp.StatusCode, errorText(body))
			if resp.StatusCode == http.StatusTooManyRequests {
				return fail(OutcomeThrottled, msg, retryAfter(resp.Header, body))
			}
			return fail(OutcomeError, msg, 0)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fail(OutcomeError, "dial "+ep.dialURL+": "+ctxErr.Error(), 0)
		}
		return fail(OutcomeError, "dial "+ep.dialURL+": "+err.Error(), 0)
	}
	res.Duration = time.Since(start)
	cfg.Sink.Record(res)
	c := &Conn{
		cfg:      cfg,
		ws:       ws,
		relayURL: ep.relayURL,
		born:     start,
		chal:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	// Our own limit discards oversize frames; gorilla's (which closes the
	// connection) only guards against an endless one.
	ws.SetReadLimit(int64(max(64<<20, 4*cfg.MaxFrameBytes)))
	if idle := cfg.ReadIdleTimeout; idle > 0 {
		_ = ws.SetReadDeadline(time.Now().Add(idle))
		pong := ws.PingHandler()
		ws.SetPingHandler(func(data string) error {
			_ = ws.SetReadDeadline(time.Now().Add(idle))
			return pong(data)
		})
	}
	go c.readLoop()
	return c, nil
}

// RelayURL is the public URL this connection claims in its NIP-42 relay tag.
func (c *Conn) RelayURL() string { return c.relayURL }

// Done is closed when the connection has ended and every operation on it
// has settled.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended: nil while open and after our Close.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostErr
}

// LastFrameAt is when the latest frame arrived (zero before the first).
func (c *Conn) LastFrameAt() time.Time {
	d := c.lastFrame.Load()
	if d == 0 {
		return time.Time{}
	}
	return c.born.Add(time.Duration(d))
}

// Stats returns the connection's counters.
func (c *Conn) Stats() Stats {
	return Stats{
		FramesIn:   c.stats.framesIn.Load(),
		BytesIn:    c.stats.bytesIn.Load(),
		FramesOut:  c.stats.framesOut.Load(),
		BytesOut:   c.stats.bytesOut.Load(),
		BadFrames:  c.stats.badFrames.Load(),
		Notices:    c.stats.notices.Load(),
		LateFrames: c.stats.late.Load(),
	}
}

// InFlight is the number of publishes and COUNTs awaiting their answer.
func (c *Conn) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.counts)
	for _, p := range c.pubs {
		if p.kind == kindPublish {
			n++
		}
	}
	return n
}

// Close ends the connection: operations still in flight settle as pending.
// It is idempotent, does not wait (wait on Done), and may be called from a
// callback.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.byUs = true
		c.closed = true
		c.mu.Unlock()
		// A polite close frame, briefly; then the socket goes, which ends the reader.
		_ = c.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = c.ws.Close()
	})
	return nil
}

// abort ends the connection because of err (a write failed, the relay went away).
func (c *Conn) abort(err error) {
	c.mu.Lock()
	if c.lostErr == nil && !c.byUs {
		c.lostErr = err
	}
	c.closed = true
	c.mu.Unlock()
	_ = c.ws.Close()
}

// write sends one text frame with a deadline. Writers queue on the mutex;
// the deadline bounds how long any one write can hold it.
func (c *Conn) write(b []byte, deadline time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	_ = c.ws.SetWriteDeadline(deadline)
	if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		err = fmt.Errorf("write: %w", err)
		c.abort(err)
		return err
	}
	c.stats.framesOut.Add(1)
	c.stats.bytesOut.Add(int64(len(b)))
	return nil
}

// readLoop is the connection's one reader goroutine.
func (c *Conn) readLoop() {
	var err error
	defer func() { c.finish(err) }()
	for {
		var typ int
		var r io.Reader
		typ, r, err = c.ws.NextReader()
		if err != nil {
			return
		}
		// Timestamp on arrival, before reading the body and parsing.
		at := time.Now()
		c.lastFrame.Store(int64(at.Sub(c.born)))
		if idle := c.cfg.ReadIdleTimeout; idle > 0 {
			_ = c.ws.SetReadDeadline(at.Add(idle))
		}
		bp := getFrameBuf()
		var n int64
		var tooBig bool
		*bp, n, tooBig, err = readFrame(r, *bp, c.cfg.MaxFrameBytes)
		if err != nil {
			putFrameBuf(bp)
			return
		}
		c.stats.framesIn.Add(1)
		c.stats.bytesIn.Add(n)
		switch {
		case tooBig:
			c.badFrame(at, n, fmt.Errorf("frame too large (%d bytes, limit %d)", n, c.cfg.MaxFrameBytes), *bp)
		case typ != websocket.TextMessage && typ != websocket.BinaryMessage:
			c.badFrame(at, n, fmt.Errorf("unexpected message type %d", typ), *bp)
		default:
			c.dispatch(*bp, at)
		}
		putFrameBuf(bp)
	}
}

// readFrame reads a whole message into buf, keeping at most limit bytes and
// discarding the rest (the connection stays usable).
func readFrame(r io.Reader, buf []byte, limit int) ([]byte, int64, bool, error) {
	buf = buf[:0]
	for {
		if len(buf) > limit {
			rest, err := io.Copy(io.Discard, r)
			return buf[:limit], int64(len(buf)) + rest, true, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(cap(buf), limit+1) // read one byte past the limit to notice it
		m, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			if len(buf) > limit {
				return buf[:limit], int64(len(buf)), true, nil
			}
			return buf, int64(len(buf)), false, nil
		}
		if err != nil {
			return buf, int64(len(buf)), false, err
		}
	}
}

// finish settles everything once the reader has stopped.
func (c *Conn) finish(readErr error) {
	c.mu.Lock()
	c.closed = true
	byUs := c.byUs
	if !byUs && c.lostErr == nil {
		c.lostErr = connLost(readErr)
		var ne net.Error
		if errors.As(readErr, &ne) && ne.Timeout() && c.cfg.ReadIdleTimeout > 0 {
			c.lostErr = fmt.Errorf("no frame or ping from the relay within %v: %w", c.cfg.ReadIdleTimeout, readErr)
		}
	}
	lost := c.lostErr
	pubs, counts, subs := c.pubs, c.counts, c.subs
	c.pubs, c.counts, c.subs = nil, nil, nil
	c.mu.Unlock()
	_ = c.ws.Close()

	o, why := OutcomePending, "connection closed with the operation in flight"
	if !byUs {
		o, why = OutcomeError, "connection lost: "+lost.Error()
	}
	now := time.Now()
	for _, p := range pubs {
		c.complete(p, p.result(now, o, why, 0, 0), 0)
	}
	for _, p := range counts {
		c.complete(p, p.result(now, o, why, 0, 0), 0)
	}
	for _, s := range subs {
		s.connEnded(now, o, why, byUs)
	}
	if c.cfg.OnDisconnect != nil {
		c.cfg.OnDisconnect(lost)
	}
	close(c.done)
}

func connLost(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		if ce.Text != "" {
			return fmt.Errorf("closed by relay: code %d %q", ce.Code, trimReason(ce.Text))
		}
		return fmt.Errorf("closed by relay: code %d", ce.Code)
	}
	if err == nil {
		err = io.EOF
	}
	return fmt.Errorf("read: %w", err)
}

// badFrame records an inbound frame we could not use, quoting its start.
func (c *Conn) badFrame(at time.Time, n int64, err error, b []byte) {
	c.stats.badFrames.Add(1)
	c.cfg.Sink.Record(Result{
		Op: OpBadFrame, Start: at, Outcome: OutcomeError, BytesReceived: n,
		Error: err.Error() + ": " + quote(b),
	})
}

// dispatch routes one parsed frame. It runs on the reader goroutine.
func (c *Conn) dispatch(b []byte, at time.Time) {
	f, err := ParseFrame(b)
	if err != nil {
		c.badFrame(at, int64(len(b)), err, b)
		return
	}
	n := int64(len(b))
	switch f.Verb {
	case VerbAuth:
		c.mu.Lock()
		first := c.challenge == ""
		c.challenge = f.Message
		c.mu.Unlock()
		if first && f.Message != "" {
			close(c.chal)
		}
	case VerbOK:
		c.onOK(&f, at, n, b)
	case VerbEvent:
		c.onEvent(&f, at, n, b)
	case VerbEOSE:
		c.onEOSE(&f, at, n, b)
	case VerbClosed:
		c.onClosed(&f, at, n, b)
	case VerbCount:
		c.onCount(&f, at, n, b)
	case VerbNotice:
		c.onNotice(&f, at, n)
	}
}

// opKind tells what a pending entry waits for.
type opKind uint8

const (
	kindPublish opKind = iota
	kindAuth
	kindCount
)

// pending is one operation awaiting its answer.
type pending struct {
	kind  opKind
	op    string
	key   string // event id or COUNT sub id
	seq   uint64 // send order, for "oldest pending"
	start time.Time
	sent  int64
	timer *time.Timer
	done  func(Result, int64)
}

func (p *pending) result(now time.Time, o Outcome, msg string, recv int64, retry time.Duration) Result {
	return Result{Op: p.op, Start: p.start, Duration: now.Sub(p.start), Outcome: o, Error: msg,
		BytesSent: p.sent, BytesReceived: recv, RetryAfter: retry}
}

// complete records and hands over a settled operation; the caller has
// already removed p from its map, so this runs once per operation.
func (c *Conn) complete(p *pending, r Result, count int64) {
	if p.timer != nil {
		p.timer.Stop()
	}
	c.cfg.Sink.Record(r)
	if p.done != nil {
		p.done(r, count)
	}
}

// register adds p under its key to m (allocated lazily) and arms its
// deadline (timeout after p.start; 0 = none). The timer is set under the
// lock so that whoever later takes p sees it.
func (c *Conn) register(m *map[string]*pending, p *pending, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if *m == nil {
		*m = make(map[string]*pending)
	}
	if _, dup := (*m)[p.key]; dup {
		return fmt.Errorf("relay: %s %s is already in flight on this connection", p.op, p.key)
	}
	c.seq++
	p.seq = c.seq
	(*m)[p.key] = p
	if timeout > 0 {
		p.timer = time.AfterFunc(timeout-time.Since(p.start), func() {
			if q := c.takeIf(m, p.key, p); q != nil {
				if q.kind == kindPublish {
					c.rememberLate(q.key)
				}
				msg := "no OK within " + timeout.String()
				if q.kind == kindCount {
					msg = "no COUNT reply within " + timeout.String()
				}
				c.complete(q, q.result(time.Now(), OutcomeError, msg, 0, 0), 0)
			}
		})
	}
	return nil
}

// takeIf removes key from m if it still maps to want (nil = any) and returns it.
func (c *Conn) takeIf(m *map[string]*pending, key string, want *pending) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := (*m)[key]
	if p == nil || (want != nil && p != want) {
		return nil
	}
	delete(*m, key)
	return p
}

// rememberLate notes a timed-out event id so its late OK is not a bad frame.
func (c *Conn) rememberLate(id string) {
	const ring = 64
	c.mu.Lock()
	if len(c.late) >= ring {
		copy(c.late, c.late[1:])
		c.late = c.late[:ring-1]
	}
	c.late = append(c.late, id)
	c.mu.Unlock()
}

func (c *Conn) wasLate(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.late {
		if l == id {
			c.late = append(c.late[:i], c.late[i+1:]...)
			return true
		}
	}
	return false
}

func (c *Conn) onOK(f *Frame, at time.Time, n int64, b []byte) {
	p := c.takeIf(&c.pubs, f.EventID, nil)
	if p == nil {
		if c.wasLate(f.EventID) {
			c.stats.late.Add(1)
			return
		}
		c.badFrame(at, n, errors.New("OK for an event id with no publish in flight"), b)
		return
	}
	if f.OK {
		c.complete(p, p.result(at, OutcomeOK, "", n, 0), 0)
		return
	}
	o, retry := Classify(f.Message)
	c.complete(p, p.result(at, o, trimReason(f.Message), n, retry), 0)
}

func (c *Conn) onCount(f *Frame, at time.Time, n int64, b []byte) {
	p := c.takeIf(&c.counts, f.SubID, nil)
	if p == nil {
		c.badFrame(at, n, errors.New("COUNT for a subscription id with no COUNT in flight"), b)
		return
	}
	c.complete(p, p.result(at, OutcomeOK, "", n, 0), f.Count)
}

// onNotice handles NOTICE. A rate-limited NOTICE is how relay-v0.2.1
// rejects an EVENT (no OK follows) or a COUNT: it settles the oldest
// pending publish on this socket (else the oldest COUNT), so nothing waits
// out its deadline for an OK that will never come.
func (c *Conn) onNotice(f *Frame, at time.Time, n int64) {
	c.stats.notices.Add(1)
	if c.cfg.OnNotice != nil {
		c.cfg.OnNotice(f.Message, at)
	}
	if !strings.HasPrefix(f.Message, "rate-limited:") {
		return
	}
	o, retry := Classify(f.Message)
	msg := "NOTICE without OK: " + trimReason(f.Message)
	c.mu.Lock()
	var oldest *pending
	for _, p := range c.pubs {
		if p.kind == kindPublish && (oldest == nil || p.seq < oldest.seq) {
			oldest = p
		}
	}
	m := &c.pubs
	if oldest == nil {
		m = &c.counts
		for _, p := range c.counts {
			if oldest == nil || p.seq < oldest.seq {
				oldest = p
			}
		}
	}
	if oldest != nil {
		delete(*m, oldest.key)
	}
	c.mu.Unlock()
	if oldest == nil {
		c.cfg.Sink.Record(Result{Op: OpNotice, Start: at, Outcome: o, Error: trimReason(f.Message),
			BytesReceived: n, RetryAfter: retry})
		return
	}
	c.complete(oldest, oldest.result(at, o, msg, n, retry), 0)
}

// --- AUTH ---

// Auth answers the relay's challenge (NIP-42, with the NIP-OA tag for
// agents) and waits for its OK, recording "auth". Without a deadline on
// ctx it is bounded by ConnectTimeout.
func (c *Conn) Auth(ctx context.Context) error {
	start := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.ConnectTimeout)
		defer cancel()
	}
	p := &pending{kind: kindAuth, op: OpAuth, start: start}
	fail := func(o Outcome, msg string) error {
		r := p.result(time.Now(), o, msg, 0, 0)
		c.cfg.Sink.Record(r)
		return &OpError{Result: r}
	}
	if c.cfg.Keys == nil {
		return fail(OutcomeError, "no keys to authenticate with")
	}
	select {
	case <-c.chal:
	case <-ctx.Done():
		return fail(OutcomeError, "no AUTH challenge from the relay: "+ctx.Err().Error())
	case <-c.done:
		return fail(OutcomeError, "no AUTH challenge: "+c.errText())
	}
	c.mu.Lock()
	challenge := c.challenge
	c.mu.Unlock()
	ev, err := nostr.AuthEvent(c.cfg.Keys, c.relayURL, challenge, time.Now(), c.cfg.OATag)
	if err != nil {
		return fail(OutcomeError, "build AUTH: "+err.Error())
	}
	res := make(chan Result, 1)
	p.key = ev.ID
	p.done = func(r Result, _ int64) { res <- r }
	bp := getFrameBuf()
	defer putFrameBuf(bp)
	*bp = appendEventEnvelope((*bp)[:0], "AUTH", ev)
	p.sent = int64(len(*bp))
	if err := c.register(&c.pubs, p, 0); err != nil {
		return fail(OutcomeError, err.Error())
	}
	deadline, _ := ctx.Deadline()
	err = c.write(*bp, deadline)
	if err != nil {
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		}
		r := <-res
		return &OpError{Result: r}
	}
	select {
	case r := <-res:
		if r.Outcome != OutcomeOK {
			return &OpError{Result: r}
		}
		c.mu.Lock()
		c.authed = true
		c.mu.Unlock()
		return nil
	case <-ctx.Done():
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomeError, "no OK for AUTH: "+ctx.Err().Error(), 0, 0), 0)
		}
		return &OpError{Result: <-res}
	}
}

// Authenticated reports whether Auth succeeded on this connection.
func (c *Conn) Authenticated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.authed
}

func (c *Conn) errText() string {
	if err := c.Err(); err != nil {
		return err.Error()
	}
	return "connection closed"
}

// --- publish ---

// PublishOptions tune one publish.
type PublishOptions struct {
	Op      string        // default "publish" (e.g. "hot_reply")
	Timeout time.Duration // from the start of the send to the OK; default Config.PublishTimeout
}

// PublishAsync sends ev and returns once it is written; done (may be nil)
// gets the Result when the OK arrives, the deadline passes (error), a
// rate-limited NOTICE settles it, or the connection ends. The Result is
// recorded either way. A write that fails (or cannot finish by the
// deadline) ends the connection. The returned error is the write's.
// done may run before PublishAsync returns (a write error, a very fast OK).
func (c *Conn) PublishAsync(ev *nostr.Event, opt PublishOptions, done func(Result)) error {
	var fn func(Result, int64)
	if done != nil {
		fn = func(r Result, _ int64) { done(r) }
	}
	_, err := c.publish(ev, opt, fn)
	return err
}

func (c *Conn) publish(ev *nostr.Event, opt PublishOptions, done func(Result, int64)) (*pending, error) {
	start := time.Now()
	if opt.Op == "" {
		opt.Op = OpPublish
	}
	if opt.Timeout <= 0 {
		opt.Timeout = c.cfg.PublishTimeout
	}
	p := &pending{kind: kindPublish, op: opt.Op, key: ev.ID, start: start, done: done}
	bp := getFrameBuf()
	defer putFrameBuf(bp)
	*bp = appendEventEnvelope((*bp)[:0], "EVENT", ev)
	p.sent = int64(len(*bp))
	// The deadline counts from the start of the send; the timer may fire
	// while the write is still blocked, and whichever settles first wins.
	if err := c.register(&c.pubs, p, opt.Timeout); err != nil {
		c.complete(p, p.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		return p, err
	}
	err := c.write(*bp, start.Add(opt.Timeout))
	if err != nil {
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		}
		return p, err
	}
	return p, nil
}

// Publish sends ev and waits for its settlement (see PublishAsync). If ctx
// ends first the publish is settled as pending (recorded so) and returned.
func (c *Conn) Publish(ctx context.Context, ev *nostr.Event, opt PublishOptions) Result {
	ch := make(chan Result, 1)
	p, _ := c.publish(ev, opt, func(r Result, _ int64) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		if q := c.takeIf(&c.pubs, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomePending, "cancelled before the OK: "+ctx.Err().Error(), 0, 0), 0)
		}
		return <-ch
	}
}

// --- COUNT ---

// CountOptions tune one COUNT.
type CountOptions struct {
	Op      string        // default "count"
	ID      string        // subscription id; default generated
	Timeout time.Duration // default Config.PublishTimeout
}

// Count sends a COUNT and waits for the reply, recording the Result. A
// CLOSED for its id settles it with the relay's reason.
func (c *Conn) Count(ctx context.Context, filters []Filter, opt CountOptions) (int64, Result) {
	start := time.Now()
	if opt.Op == "" {
		opt.Op = OpCount
	}
	if opt.Timeout <= 0 {
		opt.Timeout = c.cfg.PublishTimeout
	}
	if opt.ID == "" {
		opt.ID = c.nextID('c')
	}
	type reply struct {
		r Result
		n int64
	}
	ch := make(chan reply, 1)
	p := &pending{kind: kindCount, op: opt.Op, key: opt.ID, start: start,
		done: func(r Result, n int64) { ch <- reply{r, n} }}
	fail := func(msg string) (int64, Result) {
		r := p.result(time.Now(), OutcomeError, msg, 0, 0)
		c.cfg.Sink.Record(r)
		return 0, r
	}
	if err := checkSubID(opt.ID); err != nil {
		return fail(err.Error())
	}
	bp := getFrameBuf()
	defer putFrameBuf(bp)
	var err error
	if *bp, err = appendSubEnvelope((*bp)[:0], "COUNT", opt.ID, filters); err != nil {
		return fail(err.Error())
	}
	p.sent = int64(len(*bp))
	if err := c.register(&c.counts, p, opt.Timeout); err != nil {
		return fail(err.Error())
	}
	if err := c.write(*bp, earliest(ctx, start.Add(opt.Timeout))); err != nil {
		if q := c.takeIf(&c.counts, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomeError, err.Error(), 0, 0), 0)
		}
	}
	select {
	case rp := <-ch:
		return rp.n, rp.r
	case <-ctx.Done():
		if q := c.takeIf(&c.counts, p.key, p); q != nil {
			c.complete(q, q.result(time.Now(), OutcomePending, "cancelled before the COUNT reply: "+ctx.Err().Error(), 0, 0), 0)
		}
		rp := <-ch
		return rp.n, rp.r
	}
}

func (c *Conn) nextID(prefix byte) string {
	c.mu.Lock()
	c.seq++
	n := c.seq
	c.mu.Unlock()
	return string(prefix) + strconv.FormatUint(n, 36)
}

func checkSubID(id string) error {
	if len(id) < 1 || len(id) > 256 {
		return fmt.Errorf("relay: subscription id must be 1-256 bytes, got %d", len(id))
	}
	return nil
}

// earliest returns the earlier of ctx's deadline and d.
func earliest(ctx context.Context, d time.Time) time.Time {
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

func retryAfter(h http.Header, body []byte) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := time.Until(t); d > 0 {
				return d.Round(time.Second)
			}
		}
	}
	return RetryIn(string(body))
}
