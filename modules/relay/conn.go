package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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
	ws *websocket.Conn

	queue     sendQueue
	done      chan struct{} // closed when the writer stops
	doneOnce  sync.Once
	closeOnce sync.Once
	closing   atomic.Bool // a close frame is queued or the socket is gone
	overflows atomic.Int32
	framesOut atomic.Int64

	challenge string
	expected  string // the relay URL the AUTH relay tag must name

	authed     atomic.Bool
	pubkey     string           // written once before authed is set
	pub        *btcec.PublicKey // pubkey parsed, for signature checks
	agentOwner string           // NIP-OA owner, "" for humans
	authFailed bool             // reader goroutine only

	subs      map[string]*subscription // reader goroutine only
	authTimer *time.Timer              // the AUTH deadline, stopped once authenticated
}

// outFrame is one queued frame: data, or for a live event the
// subscription's shared `["EVENT","<sub>",` prefix (data), the event's shared
// JSON (body) and a closing bracket, so a delivery copies nothing. op is 0
// for a text frame, else a control opcode (pong, close).
type outFrame struct {
	data      []byte
	body      []byte
	op        byte
	thenClose bool // close the socket once data is written
}

var closeBracket = []byte{']'}

// WebSocket opcodes the writer emits (RFC 6455 §5.2).
const (
	opText  = 0x1
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xA
)

// appendFrameHeader appends an unmasked server frame header (FIN set).
func appendFrameHeader(dst []byte, op byte, n int) []byte {
	dst = append(dst, 0x80|op)
	switch {
	case n < 126:
		return append(dst, byte(n))
	case n <= 0xFFFF:
		return append(dst, 126, byte(n>>8), byte(n))
	default:
		return append(dst, 127, 0, 0, 0, 0, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// frameWriter gathers a batch of frames into one vectored write: under
// fan-out a busy socket gets many frames per syscall, and event bodies are
// never copied. The writer goroutine is the only writer of the socket
// (pings, pongs and close frames go through it too), so frames never
// interleave; gorilla/websocket only reads.
type frameWriter struct {
	hdrs []byte
	bufs net.Buffers
	size int
}

func (w *frameWriter) add(f outFrame) {
	op := f.op
	if op == 0 {
		op = opText
	}
	n := len(f.data)
	if f.body != nil {
		n += len(f.body) + 1
	}
	start := len(w.hdrs)
	w.hdrs = appendFrameHeader(w.hdrs, op, n)
	// hdrs was sized for the whole batch, so this slice stays valid.
	w.bufs = append(w.bufs, w.hdrs[start:len(w.hdrs):len(w.hdrs)], f.data)
	if f.body != nil {
		w.bufs = append(w.bufs, f.body, closeBracket)
	}
	w.size += n
}

func (w *frameWriter) reset(frames int) {
	if cap(w.hdrs) < 14*frames {
		w.hdrs = make([]byte, 0, 14*frames)
	}
	w.hdrs = w.hdrs[:0]
	clear(w.bufs)
	w.bufs = w.bufs[:0]
	w.size = 0
}

// smallWrite is the batch size below which frames are copied into one
// buffer rather than written with writev.
const smallWrite = 16 << 10

func (k *conn) flush(w *frameWriter) error {
	if len(w.bufs) == 0 {
		return nil
	}
	nc := k.ws.NetConn()
	nc.SetWriteDeadline(time.Now().Add(k.r.cfg.WriteTimeout))
	var err error
	if w.size < smallWrite {
		// Small batches are copied into one buffer and written plainly:
		// writev keeps a per-socket iovec array alive (~10 KB per idle
		// connection), which only large batches are worth.
		out := make([]byte, 0, w.size+len(w.hdrs))
		for _, b := range w.bufs {
			out = append(out, b...)
		}
		_, err = nc.Write(out)
	} else {
		bufs := w.bufs // WriteTo consumes its receiver
		_, err = bufs.WriteTo(nc)
	}
	w.reset(0)
	return err
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
	ws, err := r.upgrader.Upgrade(w, req, nil)
	if err != nil {
		return // the upgrader has answered
	}
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
		r.runConn(c, ws, expected)
	}()
}

// runConn serves one upgraded socket until it closes.
func (r *Relay) runConn(c *community, ws *websocket.Conn, expected string) {
	k := &conn{
		r: r, c: c, ws: ws,
		queue:     newSendQueue(),
		done:      make(chan struct{}),
		challenge: randomHex(32),
		expected:  expected,
		subs:      map[string]*subscription{},
	}
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
	ws.SetPingHandler(func(data string) error {
		k.queue.push(outFrame{op: opPong, data: []byte(data)}, 0)
		return nil
	})
	ws.SetCloseHandler(func(code int, _ string) error {
		k.closeWith(code, "")
		return nil
	})

	writerDone := make(chan struct{})
	go func() { k.writeLoop(); close(writerDone) }()
	k.enqueue(appendAuthFrame(nil, k.challenge))
	k.authTimer = time.AfterFunc(r.cfg.AuthTimeout, func() {
		if !k.authed.Load() {
			k.closeWith(websocket.ClosePolicyViolation, "auth-required: authentication timed out")
		}
	})

	k.readLoop(idle)

	k.authTimer.Stop()
	k.closeWith(websocket.CloseNormalClosure, "")
	<-writerDone
	ws.Close()
	for _, s := range k.subs {
		c.subs.remove(s)
	}
	if k.authed.Load() {
		c.presenceConnClosed(k.pubkey)
	}
}

func appendAuthFrame(dst []byte, challenge string) []byte {
	dst = append(dst, `["AUTH","`...)
	dst = append(dst, challenge...)
	return append(dst, `"]`...)
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
			k.enqueueClose([]byte(noticeFrame(fmt.Sprintf("error: frame too large (%d bytes, limit %d)", len(data), limit))))
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

// writeLoop is the socket's only writer (see frameWriter).
func (k *conn) writeLoop() {
	defer k.finish()
	ping := time.NewTicker(k.r.cfg.PingInterval)
	defer ping.Stop()
	var batch []outFrame
	var w frameWriter
	for {
		select {
		case <-k.done:
			return
		case <-k.queue.ready:
			batch = k.queue.take(batch[:0])
			w.reset(len(batch))
			for i, f := range batch {
				batch[i] = outFrame{} // let the frame be collected
				w.add(f)
				if f.op == opClose {
					k.flush(&w)
					return
				}
				if f.op != 0 {
					continue
				}
				n := k.framesOut.Add(1)
				if k.r.faults.shouldDrop(k.pubkeyIfAuthed(), n) {
					k.flush(&w)
					k.abort()
					return
				}
				if f.thenClose {
					w.add(closeFrame(websocket.ClosePolicyViolation, ""))
					k.flush(&w)
					return
				}
				if w.size >= 256<<10 { // keep one write's memory bounded
					if err := k.flush(&w); err != nil {
						k.abort()
						return
					}
				}
			}
			if err := k.flush(&w); err != nil {
				k.abort()
				return
			}
			if cap(batch) > 64 {
				batch = nil // do not pin a burst's worth of memory on an idle socket
			}
		case <-ping.C:
			w.reset(1)
			w.add(outFrame{op: opPing})
			if err := k.flush(&w); err != nil {
				k.abort()
				return
			}
		}
	}
}

func closeFrame(code int, reason string) outFrame {
	msg := websocket.FormatCloseMessage(code, reason)
	if code == websocket.CloseNoStatusReceived {
		msg = []byte{}
	}
	return outFrame{op: opClose, data: msg}
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
		time.AfterFunc(k.r.cfg.WriteTimeout+time.Second, k.abort)
	})
}

// finish marks the connection done (the writer has stopped).
func (k *conn) finish() { k.doneOnce.Do(func() { close(k.done) }) }

// abort drops the TCP connection without a close frame.
func (k *conn) abort() {
	k.closing.Store(true)
	k.finish()
	k.ws.NetConn().Close()
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
		k.r.logf("relay: dropping slow consumer %s", k.pubkeyIfAuthed())
		k.abort() // it is not reading: a close frame would only queue behind the backlog
	}
}

func (k *conn) enqueueClose(b []byte) {
	k.closing.Store(true)
	k.queue.push(outFrame{data: b, thenClose: true}, 0)
	// Wait for the writer so the caller's return does not race the close.
	<-k.done
}

// deliver queues a live event without blocking. When SendBuffer frames are
// already waiting the delivery is dropped; SlowClientGrace consecutive drops
// disconnect the client (docs/buzz-protocol.md §1.1 item 7).
func (k *conn) deliver(s *subscription, e *entry) {
	if k.queue.push(outFrame{data: s.prefix, body: e.JSON}, k.r.cfg.SendBuffer) {
		k.overflows.Store(0)
		k.r.stats.deliveries.Add(1)
		return
	}
	k.r.stats.dropped.Add(1)
	if int(k.overflows.Add(1)) == k.r.cfg.SlowClientGrace {
		k.r.stats.slow.Add(1)
		k.r.logf("relay: dropping slow consumer %s", k.pubkeyIfAuthed())
		k.abort() // it is not reading: a close frame would only queue behind the backlog
	}
}

// sendQueue is a connection's outbound queue. It holds nothing while the
// socket is idle (a buffered channel of SendBuffer would pin ~32 KB per
// connection), and the writer drains it in batches.
type sendQueue struct {
	mu    sync.Mutex
	items []outFrame
	ready chan struct{} // capacity 1: "items is non-empty"
}

func newSendQueue() sendQueue { return sendQueue{ready: make(chan struct{}, 1)} }

// push appends f unless max > 0 and max frames are already queued.
func (q *sendQueue) push(f outFrame, max int) bool {
	q.mu.Lock()
	if max > 0 && len(q.items) >= max {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// take moves every queued frame into dst.
func (q *sendQueue) take(dst []outFrame) []outFrame {
	q.mu.Lock()
	dst = append(dst, q.items...)
	clear(q.items)
	if cap(q.items) > 256 {
		q.items = nil
	} else {
		q.items = q.items[:0]
	}
	q.mu.Unlock()
	return dst
}

func noticeFrame(msg string) string { return `["NOTICE",` + jsonString(msg) + `]` }

func (k *conn) notice(msg string) { k.enqueue([]byte(noticeFrame(msg))) }

func (k *conn) ok(id string, accepted bool, msg string) {
	k.enqueue([]byte(`["OK",` + jsonString(id) + `,` + strconv.FormatBool(accepted) + `,` + jsonString(msg) + `]`))
}

func (k *conn) closed(sub, msg string) {
	k.enqueue([]byte(`["CLOSED",` + jsonString(sub) + `,` + jsonString(msg) + `]`))
}

func (k *conn) eose(s string) {
	k.enqueue([]byte(`["EOSE",` + jsonString(s) + `]`))
}

// handle dispatches one client frame (docs/buzz-protocol.md §1.2).
func (k *conn) handle(data []byte) {
	var elems [8][]byte // a frame's elements; REQs with more filters spill
	msg, err := wire.Elements(data, elems[:0])
	if err != nil {
		k.notice("invalid message: " + trimDetail(err.Error()))
		return
	}
	if len(msg) == 0 {
		k.notice("invalid message: empty array")
		return
	}
	verb, err := jsonText(msg[0])
	if err != nil {
		k.notice("invalid message: verb is not a string")
		return
	}
	switch verb {
	case "AUTH":
		k.handleAuth(msg)
	case "EVENT":
		k.handleEvent(msg)
	case "REQ":
		k.r.stats.reqs.Add(1)
		k.handleReq(msg, false)
	case "COUNT":
		k.handleReq(msg, true)
	case "CLOSE":
		k.handleClose(msg)
	default:
		k.notice("invalid message: unknown message type " + strconv.Quote(trimDetail(verb)))
	}
}

// subID decodes a frame's second element, a subscription id.
func subID(msg [][]byte) (string, error) {
	if len(msg) < 2 {
		return "", errors.New("no subscription id")
	}
	return jsonText(msg[1])
}

// jsonText decodes a string element as encoding/json decoded it into a
// string before the relay used the wire scanner: null is "", invalid
// UTF-8 becomes U+FFFD.
func jsonText(raw []byte) (string, error) {
	if string(raw) == "null" {
		return "", nil
	}
	v, err := wire.ParseString(raw)
	return wire.ValidUTF8(v), err
}

func trimDetail(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

func (k *conn) handleClose(msg [][]byte) {
	sub, err := subID(msg)
	if err != nil {
		k.notice("invalid message: CLOSE needs a subscription id")
		return
	}
	if s := k.subs[sub]; s != nil {
		k.c.subs.remove(s)
		delete(k.subs, sub)
	}
	k.closed(sub, "")
}

// handleAuth is NIP-42 as Buzz applies it (docs/buzz-protocol.md §1.5).
func (k *conn) handleAuth(msg [][]byte) {
	if len(msg) < 2 {
		k.notice("invalid message: AUTH needs an event")
		return
	}
	ev, err := nostr.ParseEvent(msg[1])
	if err != nil {
		k.notice("invalid message: AUTH event: " + trimDetail(err.Error()))
		return
	}
	switch {
	case k.authed.Load():
		k.ok(ev.ID, false, "auth-required: already authenticated")
		return
	case k.authFailed:
		k.ok(ev.ID, false, "auth-required: authentication already failed")
		return
	}
	check := nostr.AuthCheck{
		Challenge: k.challenge, RelayURL: k.expected, Now: time.Now(),
		MaxSkew: k.r.cfg.AuthSkew, AllowOATags: true,
	}
	if k.r.cfg.PairingRelayURL != "" {
		check.AlsoAccept = []string{k.r.cfg.PairingRelayURL}
	}
	oa, err := nostr.VerifyAuthEvent(ev, check)
	owner := ""
	if err == nil && oa != nil {
		owner, err = verifyOATag(oa, ev.PubKey, ev.Kind, ev.CreatedAt)
	}
	if err != nil {
		k.authFailed = true
		k.r.stats.authFailed.Add(1)
		k.r.logf("relay: %s: AUTH refused for %s: %v", k.c.host, trimDetail(ev.PubKey), err)
		k.ok(ev.ID, false, "auth-required: verification failed")
		return
	}
	k.r.stats.authOK.Add(1)
	k.pubkey = ev.PubKey
	k.pub, _ = nostr.ParsePubKey(ev.PubKey)
	k.agentOwner = owner
	k.authed.Store(true)
	k.authTimer.Stop()
	if owner != "" {
		k.c.agentOwner.Store(ev.PubKey, owner)
	}
	k.c.presenceConnOpened(ev.PubKey)
	k.ok(ev.ID, true, "")
}

// throttled answers a rate-limited frame: OK/CLOSED (newer relays) or a
// NOTICE with no OK (relay-v0.2.1, Config.LegacyRateLimitNotice).
func (k *conn) throttledEvent(id, reason string) {
	if k.r.cfg.LegacyRateLimitNotice {
		k.notice(reason)
		return
	}
	k.ok(id, false, reason)
}

func (k *conn) handleEvent(msg [][]byte) {
	if len(msg) < 2 {
		k.notice("invalid message: EVENT needs an event")
		return
	}
	ev, err := nostr.ParseEvent(msg[1])
	if err != nil {
		k.notice("invalid message: " + trimDetail(err.Error()))
		return
	}
	if !k.authed.Load() {
		k.ok(ev.ID, false, "auth-required: not authenticated")
		return
	}
	if reason := k.c.limits.frame(k.pubkey, time.Now()); reason != "" {
		k.r.stats.throttled.Add(1)
		k.throttledEvent(ev.ID, reason)
		return
	}
	res := k.r.ingest(k.c, ev, ingestAuth{pubkey: k.pubkey, pub: k.pub, agentOwner: k.agentOwner, ws: true})
	if res.throttled {
		k.throttledEvent(ev.ID, res.message)
		return
	}
	k.ok(ev.ID, res.accepted, res.message)
}

// handleReq serves REQ and COUNT (docs/buzz-protocol.md §1.6, §1.7).
func (k *conn) handleReq(msg [][]byte, count bool) {
	sub, err := subID(msg)
	if err != nil {
		k.notice("invalid message: missing subscription id")
		return
	}
	if !k.authed.Load() {
		if !count {
			k.notice("auth-required: authenticate before subscribing")
		}
		k.closed(sub, "auth-required: not authenticated")
		return
	}
	if len(sub) == 0 || len(sub) > k.r.cfg.MaxSubIDLength {
		k.closed(sub, fmt.Sprintf("invalid: subscription id must be 1-%d bytes", k.r.cfg.MaxSubIDLength))
		return
	}
	if reason := k.c.limits.frame(k.pubkey, time.Now()); reason != "" {
		k.r.stats.throttled.Add(1)
		if count && k.r.cfg.LegacyRateLimitNotice {
			k.notice(reason)
		} else {
			k.closed(sub, reason)
		}
		return
	}
	raws := msg[2:]
	if len(raws) == 0 {
		k.closed(sub, "invalid: at least one filter is required")
		return
	}
	if len(raws) > k.r.cfg.MaxFilters {
		k.closed(sub, fmt.Sprintf("invalid: too many filters (%d, limit %d)", len(raws), k.r.cfg.MaxFilters))
		return
	}
	filters, err := parseReqFilters(raws)
	if err != nil {
		k.closed(sub, "invalid: "+err.Error())
		return
	}
	mode := accessWS
	if count {
		mode = accessCOUNT
	}
	if reason := k.c.checkReadAccess(filters, k.pubkey, mode, k.r.cfg.MaxChannelsPerREQ); reason != "" {
		k.closed(sub, reason)
		return
	}
	if count {
		n, reason := k.c.count(filters, k.pubkey)
		if reason != "" {
			k.closed(sub, reason)
			return
		}
		k.enqueue([]byte(`["COUNT",` + jsonString(sub) + `,{"count":` + strconv.Itoa(n) + `}]`))
		return
	}
	if old := k.subs[sub]; old != nil {
		// A REQ reusing an id replaces the old subscription (NIP-01).
		k.c.subs.remove(old)
		delete(k.subs, sub)
	}
	if len(k.subs) >= k.r.cfg.MaxSubscriptions {
		k.closed(sub, "error: too many subscriptions")
		return
	}
	idJSON := jsonString(sub)
	s := &subscription{conn: k, id: sub, prefix: []byte(`["EVENT",` + idJSON + `,`), filters: filters, channels: channelScope(filters)}
	// Register before replaying so nothing published in between is missed;
	// a live event may then also appear in the replay (clients dedupe by id).
	k.c.subs.add(s)
	k.subs[sub] = s
	for _, e := range k.c.history(filters, k.pubkey, k.r.cfg.MaxHistoricalLimit) {
		k.queue.push(outFrame{data: s.prefix, body: e.AppendJSON(make([]byte, 0, 320+len(e.Content)))}, 0)
	}
	switch d, withhold := k.r.faults.eoseDelay(sub); {
	case withhold:
	case d > 0:
		time.AfterFunc(d, func() { k.eose(sub) })
	default:
		k.eose(sub)
	}
}
