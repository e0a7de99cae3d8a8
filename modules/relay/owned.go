package relay

import (
	"bufio"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// One writer per socket (code review D1). gorilla/websocket reads the
// socket and, on a read-limit or protocol error, writes a close frame of
// its own (Conn.WriteControl) and moves the write deadline. Handed the
// socket through ownedConn, gorilla's writes after the upgrade are queued
// to the connection's writer (writer.go) like any frame, in order, and its
// deadlines are ignored: the writer is the only thing that writes to the
// socket and sets its deadline, close frames included.

// ownedConn is the socket as gorilla sees it.
type ownedConn struct {
	net.Conn
	// k is set when the connection's writer owns the socket; until then
	// (the 101 answer, a refusal during a drain) writes go straight out.
	k atomic.Pointer[conn]
}

// Write queues p (a whole frame: gorilla writes a control frame in one
// call) to the writer once it owns the socket.
func (o *ownedConn) Write(p []byte) (int, error) {
	k := o.k.Load()
	if k == nil {
		return o.Conn.Write(p)
	}
	k.queueRaw(append([]byte(nil), p...))
	return len(p), nil
}

// SetWriteDeadline is the writer's alone once it owns the socket.
func (o *ownedConn) SetWriteDeadline(t time.Time) error {
	if o.k.Load() != nil {
		return nil
	}
	return o.Conn.SetWriteDeadline(t)
}

// SetDeadline keeps the read half (gorilla's) and leaves the write half to
// the writer once it owns the socket.
func (o *ownedConn) SetDeadline(t time.Time) error {
	if o.k.Load() != nil {
		return o.Conn.SetReadDeadline(t)
	}
	return o.Conn.SetDeadline(t)
}

// owningWriter hands the upgrader the socket wrapped in an ownedConn.
type owningWriter struct {
	http.ResponseWriter
	owned *ownedConn
}

// Hijack implements http.Hijacker.
func (w *owningWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.owned = &ownedConn{Conn: nc}
	return w.owned, brw, nil
}

// queueRaw queues a frame gorilla wrote whole. It is at most one close
// frame per connection (gorilla writes nothing after a close), so it is not
// bounded; a close frame ends the writer as the relay's own do.
func (k *conn) queueRaw(frame []byte) {
	f := outFrame{data: frame, raw: true}
	if len(frame) > 0 && frame[0]&0x0f == opClose {
		f.op = opClose
		k.closing.Store(true)
	}
	k.queue.push(f, 0)
}
