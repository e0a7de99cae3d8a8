package relay

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// conn is one WebSocket client. The HTTP handler goroutine reads; one writer
// goroutine owns all writes through a bounded queue (docs/buzz-protocol.md §1.1: 1000
// messages, dropped after 15 consecutive overflows).
type conn struct {
	r  *Relay
	c  *community
	ws *websocket.Conn // reads (and its writes go through the writer: owned.go)
	nc net.Conn        // the socket, written by the writer alone

	queue     sendQueue
	done      chan struct{} // closed when the writer stops
	doneOnce  sync.Once
	closeOnce sync.Once
	closing   atomic.Bool // a close frame is queued or the socket is gone
	overflows atomic.Int32
	framesOut atomic.Int64

	writeDeadline time.Time // the socket's write deadline (the writer's only)

	challenge string
	expected  string // the relay URL the AUTH relay tag must name

	authed     atomic.Bool
	pubkey     string           // written once before authed is set
	pub        *btcec.PublicKey // pubkey parsed, for signature checks
	agentOwner string           // NIP-OA owner, "" for humans
	authFailed bool             // reader goroutine only
	fi         *fiGrant         // the NIP-FI assertion of the upgrade (nil: NIP-FI off)

	subs      map[string]*subscription // reader goroutine only
	authTimer *time.Timer              // the AUTH deadline, stopped once authenticated

	// pong is the latest ping's payload still to answer (nil: none): one
	// pong at most waits in the queue however often the peer pings
	// (RFC 6455 §5.5.3 allows answering only the latest; code review D2).
	pong atomic.Pointer[[]byte]
	// closeTimer drops a peer that does not take the close frame in time;
	// stopped when the connection ends (code review D6).
	closeTimer atomic.Pointer[time.Timer]
}

// onPing queues a pong unless one is already waiting, whose payload it
// replaces.
func (k *conn) onPing(data string) error {
	b := []byte(data)
	if k.pong.Swap(&b) == nil {
		k.queue.push(outFrame{op: opPong}, 0)
	}
	return nil
}

func (r *Relay) serveWS(w http.ResponseWriter, req *http.Request) {
	if r.draining.Load() {
		http.Error(w, "relay restarting", http.StatusServiceUnavailable)
		return
	}
	c := r.lookup(req.Host)
	if c == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, unmappedBody)
		return
	}
	var fi *fiGrant
	if r.fi != nil {
		// WS-NIP-FI: the field is verified at the upgrade, its key bound
		// to the later NIP-42 AUTH (handleAuth).
		g, missing, err := r.fi.verify(req.Header, time.Now())
		if err != nil {
			r.logf(" INFO relay: %s: NIP-FI refused an upgrade: %v", c.host, err)
			fiDeny(w, missing)
			return
		}
		fi = &g
	}
	ow := &owningWriter{ResponseWriter: w}
	ws, err := r.upgrader.Upgrade(ow, req, nil)
	if err != nil {
		return // the upgrader has answered
	}
	nc := ow.owned.Conn // the socket itself: the writer's
	if n := r.conns.Add(1); n > int64(r.cfg.MaxConnections) {
		// Beyond the cap Buzz drops new sockets without a message.
		r.conns.Add(-1)
		ws.NetConn().Close()
		return
	}
	// connWG.Add must not race Close's Wait: both go under drainMu.
	r.drainMu.Lock()
	if r.draining.Load() {
		r.drainMu.Unlock()
		r.conns.Add(-1)
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "relay restarting"), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	r.connWG.Add(1)
	r.drainMu.Unlock()
	r.stats.connsTotal.Add(1)
	expected := r.cfg.PublicScheme + "://" + nostr.NormalizeHost(req.Host)
	// The socket runs on its own goroutine and the handler returns: net/http
	// then lets go of the request, its 4 KB response writer and the grown
	// stack of its serving goroutine, which an idle socket does not need.
	go func() {
		defer r.connWG.Done()
		defer r.conns.Add(-1)
		r.runConn(c, ws, ow.owned, nc, expected, fi)
	}()
}

// runConn serves one upgraded socket until it closes.
func (r *Relay) runConn(c *community, ws *websocket.Conn, owned *ownedConn, nc net.Conn, expected string, fi *fiGrant) {
	k := &conn{
		r: r, c: c, ws: ws, nc: nc,
		queue:     newSendQueue(),
		done:      make(chan struct{}),
		challenge: randomHex(32),
		expected:  expected,
		subs:      map[string]*subscription{},
		fi:        fi,
	}
	if fi != nil {
		// The session lease: min(the token's exp, the lifetime cap).
		lease := time.AfterFunc(time.Until(fi.deadline), func() {
			r.logf(" INFO relay: %s: NIP-FI session lease expired — closing connection", c.host)
			k.closeWith(websocket.ClosePolicyViolation, fiLeaseReason)
		})
		defer lease.Stop()
	}
	owned.k.Store(k) // from here the writer is the socket's only writer (owned.go)
	c.addConn(k)
	defer c.removeConn(k)
	if r.draining.Load() {
		k.closeWith(websocket.CloseServiceRestart, "relay restarting")
	}
	hardCap := int64(r.cfg.MaxFrameBytes)*4 + 1<<20
	ws.SetReadLimit(hardCap)
	idle := 3*r.cfg.PingInterval + 10*time.Second
	ws.SetReadDeadline(time.Now().Add(idle))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(idle)) })
	// Answers to the peer's pings and close frames go through the writer,
	// the socket's only writer.
	ws.SetPingHandler(k.onPing)
	ws.SetCloseHandler(func(code int, _ string) error {
		k.closeWith(code, "")
		return nil
	})

	writerDone := make(chan struct{})
	go func() { k.writeLoop(); close(writerDone) }()
	k.enqueue(wire.AuthEnvelope{Challenge: k.challenge}.Append(nil))
	k.authTimer = time.AfterFunc(r.cfg.AuthTimeout, func() {
		if !k.authed.Load() {
			r.stats.authTimeouts.Add(1)
			k.closeWith(websocket.ClosePolicyViolation, "auth-required: authentication timed out")
		}
	})

	k.readLoop(idle)

	k.authTimer.Stop()
	k.closeWith(websocket.CloseNormalClosure, "")
	<-writerDone
	if t := k.closeTimer.Load(); t != nil {
		t.Stop()
	}
	ws.Close()
	for _, s := range k.subs {
		c.subs.remove(s)
	}
	if k.authed.Load() {
		c.presenceConnClosed(k.pubkey)
	}
}

func (k *conn) readLoop(idle time.Duration) {
	limit := k.r.cfg.MaxFrameBytes
	for {
		mt, rd, err := k.ws.NextReader()
		if err != nil {
			return
		}
		data, err := io.ReadAll(rd)
		if err != nil {
			return
		}
		k.ws.SetReadDeadline(time.Now().Add(idle))
		if len(data) > limit {
			k.enqueueClose((noticeFrame(fmt.Sprintf("error: frame too large (%d bytes, limit %d)", len(data), limit))))
			return
		}
		if mt == websocket.BinaryMessage && !utf8.Valid(data) {
			k.notice("invalid message: binary frame is not UTF-8")
			continue
		}
		if k.closing.Load() {
			continue // closing: drain the peer until it answers or the deadline passes
		}
		k.handle(data)
	}
}

func (k *conn) pubkeyIfAuthed() string {
	if k.authed.Load() {
		return k.pubkey
	}
	return ""
}

// closeWith queues a close frame behind what is already queued and lets
// the reader finish the handshake (reading on until the peer answers or a
// second passes), so queued frames are not lost to a TCP reset. A peer that
// does not take the frames within WriteTimeout is dropped.
func (k *conn) closeWith(code int, reason string) {
	k.closeOnce.Do(func() {
		k.closing.Store(true)
		k.queue.push(closeFrame(code, reason), 0)
		k.ws.SetReadDeadline(time.Now().Add(time.Second))
		k.closeTimer.Store(time.AfterFunc(k.r.cfg.WriteTimeout+time.Second, k.abort))
	})
}

// finish marks the connection done (the writer has stopped).
func (k *conn) finish() { k.doneOnce.Do(func() { close(k.done) }) }

// abort drops the TCP connection without a close frame.
func (k *conn) abort() {
	k.closing.Store(true)
	k.finish()
	k.nc.Close()
}

// enqueue queues a reply to the client's own request. Replies are not
// dropped: they are bounded by what the client asks for (one REQ may replay
// MaxFilters×MaxHistoricalLimit events). A client that lets more than that
// plus four send buffers pile up is disconnected.
func (k *conn) enqueue(b []byte) {
	limit := 4*k.r.cfg.SendBuffer + k.r.cfg.MaxFilters*k.r.cfg.MaxHistoricalLimit
	if !k.queue.push(outFrame{data: b}, limit) {
		if !k.closing.Load() {
			k.r.stats.slow.Add(1)
		}
		k.r.logf(" WARN relay: dropping slow consumer %s", k.pubkeyIfAuthed())
		k.abort() // it is not reading: a close frame would only queue behind the backlog
	}
}

func (k *conn) enqueueClose(b []byte) {
	k.closing.Store(true)
	k.queue.push(outFrame{data: b, thenClose: true}, 0)
	// Wait for the writer so the caller's return does not race the close.
	<-k.done
}

// deliver queues a live event without blocking and reports whether it was
// queued (the caller counts deliveries and drops). When SendBuffer frames
// are already waiting the delivery is dropped; SlowClientGrace consecutive
// drops disconnect the client (docs/buzz-protocol.md §1.1 item 7).
func (k *conn) deliver(s *subscription, e *entry) bool {
	if k.queue.push(outFrame{data: s.prefix, body: e.JSON}, k.r.cfg.SendBuffer) {
		if n := k.overflows.Load(); n != 0 {
			endDropRun(&k.overflows, n)
		}
		return true
	}
	if int(k.overflows.Add(1)) == k.r.cfg.SlowClientGrace {
		k.r.stats.slow.Add(1)
		k.r.logf(" WARN relay: dropping slow consumer %s", k.pubkeyIfAuthed())
		k.abort() // it is not reading: a close frame would only queue behind the backlog
	}
	return false
}

// endDropRun ends the run of seen consecutive drops a queued delivery
// interrupted, but only that run: a drop a concurrent fan-out counted
// after seen was read stays counted (code review D5: a Store(0) lost it,
// and a slow consumer could outlive its grace).
func endDropRun(drops *atomic.Int32, seen int32) { drops.CompareAndSwap(seen, 0) }
