package relayclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/localaddr"
	"github.com/buzzload/buzzload/modules/relayclient/netpoll"
	"github.com/buzzload/buzzload/modules/relayclient/wsframe"
)

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

// Conn is one WebSocket connection to a relay. Writes are serialised by a
// mutex on the caller's goroutine with a deadline on each. All methods are
// safe for concurrent use.
//
// Reads: a plain ws:// connection on Linux is read by one of a few epoll
// loops the process shares (package netpoll; issue 16: a goroutine reader
// cost a wake-up, a park and an EAGAIN read per frame); wss://, other
// systems, Config.NoPoller and BUZZLOAD_NETPOLL=0 keep one reader goroutine
// per connection.
//
// Callbacks (OnEvent, OnEventView, OnEOSE, OnClosed, publish done funcs,
// OnNotice) run on the reader: with the poller that is a loop goroutine
// shared by many connections, so a callback that blocks stalls all of them.
// They must not block (no blocking channel send, no long-held lock) and must
// not call the blocking methods (Publish, Auth, Count, Sub.Wait, SubscribeEOSE)
// of any Conn; the Async forms, Subscribe and Close are fine. Some settle on
// a deadline timer's goroutine or, when the connection ends, on a goroutine
// of their own (OnDisconnect too).
type Conn struct {
	cfg      Config
	ws       *websocket.Conn
	reg      *netpoll.Reg // the poller's registration (nil: a reader goroutine); set under mu
	relayURL string       // public URL for the NIP-42 relay tag
	born     time.Time    // dial time; monotonic base for lastFrame

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
	// lastSub is the subscription the latest EVENT went to (nil, or still
	// in subs: every delete from subs clears it). Events of one socket
	// mostly go to one subscription, and with thousands of connections
	// each map lookup missed the cache (a wide run's profile: the lookup
	// cost as much as parsing the event).
	lastSub *Sub
	late    []string // recently timed-out event ids (bounded ring)

	closeOnce sync.Once
	done      chan struct{} // closed when the reader has exited and everything is settled

	// ledger is the run's delivery ledger (nil: none), told of this
	// connection's publishes, subscriptions and deliveries as self.
	ledger Ledger
	self   string
	// watch sees the connection's life (nil: none); liveSubs counts its
	// subscriptions past EOSE and open (reader goroutine and c.mu).
	watch    Watcher
	liveSubs int

	// rf is the frame being dispatched (reader goroutine only): a field,
	// not a local, so that handing its event view to a callback allocates
	// nothing.
	rf inFrame

	// The poller path (loop goroutine only, see pollread.go): the frame
	// decoder and when a frame or ping last came (nanoseconds after born).
	dec      wsframe.Decoder
	idleFrom int64

	lastFrame atomic.Int64 // nanoseconds after born
	// reading: the reader goroutine has a frame in hand (false while it
	// waits in NextReader, when everything that arrived has been read).
	reading atomic.Bool
	// pongData is the latest ping to answer on the poll path (onPing).
	pongData atomic.Pointer[string]
	stats    struct {
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
	if c.watch != nil {
		c.watch.ConnUp(c.self, c.cfg.Target.Host, time.Now())
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
	local, err := localAddr(cfg.Target.LocalAddr)
	if err != nil {
		return fail(OutcomeError, err.Error(), 0)
	}
	nd := &net.Dialer{}
	localaddr.Bind(nd, local)
	polled := usePoller(&cfg, ep.dialURL)
	dial, readBuf := nd.DialContext, cfg.ReadBufferSize
	var hs *handshakeConn
	if polled {
		readBuf = pollReadBufferSize
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			hs = &handshakeConn{Conn: nc}
			return hs, nil
		}
	}
	d := websocket.Dialer{
		NetDialContext:    dial,
		ReadBufferSize:    readBuf,
		WriteBufferSize:   writeBufferSize,
		WriteBufferPool:   writePool,
		EnableCompression: false, // never: permessage-deflate costs ~830 KiB per connection
	}
	hdr := cfg.Header
	if ep.host != "" || (cfg.Target.Identity != nil && cfg.Keys != nil) {
		hdr = hdr.Clone()
		if hdr == nil {
			hdr = http.Header{}
		}
	}
	if ep.host != "" {
		hdr.Set("Host", ep.host)
	}
	if cfg.Target.Identity != nil && cfg.Keys != nil {
		tok, err := cfg.Target.Identity.Assertion(ctx, cfg.Keys.PubKey())
		if err != nil {
			return fail(OutcomeError, err.Error(), 0)
		}
		hdr.Set(FIHeader, "Bearer "+tok)
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
		ledger:   LedgerOf(cfg.Sink),
		watch:    WatcherOf(cfg.Sink),
	}
	if cfg.Keys != nil {
		c.self = cfg.Keys.PubKey()
	}
	if polled && c.startPoller(hs) {
		return c, nil
	}
	c.startReader()
	return c, nil
}

// startReader starts the connection's reader goroutine.
func (c *Conn) startReader() {
	ws, cfg := c.ws, &c.cfg
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
		// A polite close frame, briefly; then the socket goes, which ends the
		// reader. Off the caller: gorilla's WriteControl waits (up to its
		// deadline) for the write lock a blocked write holds, and a caller
		// on a shared poll loop must never wait (code review D3).
		go func() {
			_ = c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			c.endReader()
		}()
	})
	return nil
}

// closedErrLocked is ErrClosed naming the side that closed the connection
// and its close code or error, so an operation lost to a closed connection
// says why (issue 43: three publishes failed with a bare "connection
// closed"). c.mu is held.
func (c *Conn) closedErrLocked() error {
	switch {
	case c.lostErr != nil:
		return fmt.Errorf("%w (%v)", ErrClosed, c.lostErr)
	case c.byUs:
		return fmt.Errorf("%w (closed by this client)", ErrClosed)
	}
	return ErrClosed
}

// abort ends the connection because of err (a write failed, the relay went away).
func (c *Conn) abort(err error) {
	c.mu.Lock()
	if c.lostErr == nil && !c.byUs {
		c.lostErr = err
	}
	c.closed = true
	c.mu.Unlock()
	c.endReader()
}

// endReader stops reading: the goroutine reader ends when the socket is
// closed; a polled socket leaves the poller first (its OnDetach settles
// and closes it, so a reused descriptor number never reaches this Conn).
func (c *Conn) endReader() {
	c.mu.Lock()
	reg := c.reg
	c.mu.Unlock()
	if reg != nil {
		reg.Remove()
		return
	}
	_ = c.ws.Close()
}

// write sends one text frame with a deadline. Writers queue on the mutex;
// the deadline bounds how long any one write can hold it.
func (c *Conn) write(b []byte, deadline time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	closed, why := c.closed, c.closedErrLocked()
	c.mu.Unlock()
	if closed {
		return why
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
		c.reading.Store(false)
		typ, r, err = c.ws.NextReader()
		c.reading.Store(true)
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
	live := c.liveSubs
	pubs, counts, subs := c.pubs, c.counts, c.subs
	c.pubs, c.counts, c.subs, c.lastSub = nil, nil, nil, nil
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
	if c.watch != nil {
		e := ConnEnd{Self: c.self, Host: c.cfg.Target.Host, At: now, ByUs: byUs, LiveSubs: live, Code: websocket.CloseAbnormalClosure}
		var ce *websocket.CloseError
		switch {
		case errors.As(readErr, &ce):
			e.Code, e.Reason = ce.Code, trimReason(ce.Text)
		case lost != nil:
			e.Reason = lost.Error()
		}
		if byUs {
			e.Code, e.Reason = websocket.CloseNormalClosure, ""
		}
		c.watch.ConnEnded(e)
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

// dispatch routes one parsed frame. It runs on the reader (goroutine or loop).
func (c *Conn) dispatch(b []byte, at time.Time) {
	in := &c.rf
	if err := scanFrame(b, in); err != nil {
		c.badFrame(at, int64(len(b)), err, b)
		return
	}
	n := int64(len(b))
	f := &in.Frame
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
		c.onOK(f, at, n, b)
	case VerbEvent:
		c.onEvent(in, at, n, b)
	case VerbEOSE:
		c.onEOSE(f, at, n, b)
	case VerbClosed:
		c.onClosed(f, at, n, b)
	case VerbCount:
		c.onCount(f, at, n, b)
	case VerbNotice:
		c.onNotice(f, at, n)
	}
}
