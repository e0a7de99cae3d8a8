package wsframe

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The oracle: gorilla/websocket writes the server's side of a stream
// (Upgrader over an in-memory hijacked connection) and reads it back as a
// client (Dialer over a connection replaying the bytes). The decoder must
// see the same messages and control frames as gorilla's client does.

// memConn is a net.Conn whose writes are captured and whose reads replay
// a script (for the client side: the 101 response, then the stream).
type memConn struct {
	mu      sync.Mutex
	written bytes.Buffer
	toRead  *bytes.Reader
	respond func(req []byte) []byte // builds what is read, from what was written
}

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.toRead == nil {
		if c.respond == nil {
			return 0, io.EOF
		}
		c.toRead = bytes.NewReader(c.respond(c.written.Bytes()))
	}
	return c.toRead.Read(p)
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written.Write(p)
}

func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// hijackWriter is the http.ResponseWriter an Upgrader hijacks.
type hijackWriter struct {
	conn *memConn
	hdr  http.Header
}

func (w *hijackWriter) Header() http.Header         { return w.hdr }
func (w *hijackWriter) Write(p []byte) (int, error) { return w.conn.Write(p) }
func (w *hijackWriter) WriteHeader(int)             {}
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.conn, bufio.NewReadWriter(bufio.NewReader(w.conn), bufio.NewWriter(w.conn)), nil
}

const testKey = "dGhlIHNhbXBsZSBub25jZQ=="

// serverStream is what a gorilla server writes after the upgrade while
// script runs (writeBuf: its write buffer size, small to fragment).
func serverStream(t testing.TB, writeBuf int, script func(ws *websocket.Conn) error) []byte {
	t.Helper()
	mc := &memConn{}
	r, _ := http.NewRequest("GET", "http://relay.test/", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", testKey)
	up := websocket.Upgrader{WriteBufferSize: writeBuf, ReadBufferSize: 1024}
	ws, err := up.Upgrade(&hijackWriter{conn: mc, hdr: http.Header{}}, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := script(ws); err != nil {
		t.Fatal(err)
	}
	all := mc.written.Bytes()
	i := bytes.Index(all, []byte("\r\n\r\n"))
	if i < 0 {
		t.Fatal("no upgrade response")
	}
	return append([]byte(nil), all[i+4:]...)
}

// gorillaEvents is what a gorilla client reads from stream, in the
// decoder's event notation (see show).
func gorillaEvents(t testing.TB, stream []byte) []string {
	t.Helper()
	mc := &memConn{respond: func(req []byte) []byte {
		key := ""
		for _, line := range strings.Split(string(req), "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Sec-WebSocket-Key") {
				key = strings.TrimSpace(v)
			}
		}
		h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(h[:]) + "\r\n\r\n"
		return append([]byte(resp), stream...)
	}}
	d := websocket.Dialer{NetDial: func(string, string) (net.Conn, error) { return mc, nil }, ReadBufferSize: 4096}
	ws, _, err := d.Dial("ws://relay.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ws.SetPingHandler(func(s string) error { out = append(out, show(OpPing, []byte(s), 0)); return nil })
	ws.SetPongHandler(func(s string) error { out = append(out, show(OpPong, []byte(s), 0)); return nil })
	ws.SetReadLimit(0)
	for {
		typ, b, err := ws.ReadMessage()
		var ce *websocket.CloseError
		switch {
		case errors.As(err, &ce) && ce.Code == websocket.CloseAbnormalClosure:
			return out // gorilla's name for the end of the stream
		case errors.As(err, &ce):
			return append(out, show(OpClose, []byte(ce.Text), ce.Code))
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return out
		case err != nil:
			return append(out, "error: "+err.Error())
		}
		out = append(out, show(Op(typ), b, 0))
	}
}

func show(op Op, data []byte, code int) string {
	if op == OpClose {
		return fmt.Sprintf("close %d %q", code, data)
	}
	if len(data) > 40 { // long payloads: length and a digest of the content
		return fmt.Sprintf("%s %d %x", op, len(data), sha1.Sum(data))
	}
	return fmt.Sprintf("%s %q", op, data)
}

// decodeEvents decodes stream pushed in pieces cut at the given offsets.
func decodeEvents(t testing.TB, d *Decoder, stream []byte, cuts []int) ([]string, error) {
	t.Helper()
	var out []string
	prev := 0
	cuts = append(cuts, len(stream))
	for _, cut := range cuts {
		if cut < prev || cut > len(stream) {
			continue
		}
		// A copy per push, overwritten after: events must not be kept.
		chunk := append([]byte(nil), stream[prev:cut]...)
		prev = cut
		d.Push(chunk)
		for {
			ev, ok, err := d.Next()
			if err != nil {
				return out, err
			}
			if !ok {
				break
			}
			out = append(out, show(ev.Op, ev.Data, ev.Code))
			if ev.Op == OpClose {
				return out, nil
			}
		}
		for i := range chunk {
			chunk[i] = 0xee
		}
	}
	return out, nil
}

func text(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte((i*7+seed)%26)
	}
	return b
}

// fragmented writes one message through NextWriter in the given pieces,
// with a ping between two of them when pingAt ≥ 0.
func fragmented(ws *websocket.Conn, typ int, pieces [][]byte, pingAt int) error {
	w, err := ws.NextWriter(typ)
	if err != nil {
		return err
	}
	for i, p := range pieces {
		if i == pingAt {
			if err := ws.WriteControl(websocket.PingMessage, []byte("mid"), time.Now().Add(time.Second)); err != nil {
				return err
			}
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return w.Close()
}

// theScript is the stream TestMatchesGorilla decodes: messages of many
// sizes (7-, 16- and 64-bit lengths), fragmented messages with pings and
// pongs between fragments, and a close with a code and reason.
func theScript(ws *websocket.Conn) error {
	for i, n := range []int{0, 1, 2, 125, 126, 127, 1000, 4095, 4096, 65535, 65536, 70000, 200000} {
		if err := ws.WriteMessage(websocket.TextMessage, text(n, i)); err != nil {
			return err
		}
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, []byte{0, 1, 2, 0xff}); err != nil {
		return err
	}
	if err := ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
		return err
	}
	if err := ws.WriteControl(websocket.PingMessage, text(125, 3), time.Now().Add(time.Second)); err != nil {
		return err
	}
	if err := ws.WriteControl(websocket.PongMessage, []byte("pong!"), time.Now().Add(time.Second)); err != nil {
		return err
	}
	if err := fragmented(ws, websocket.TextMessage, [][]byte{text(10, 1), text(300, 2), text(5, 3), text(1000, 4)}, 2); err != nil {
		return err
	}
	if err := fragmented(ws, websocket.TextMessage, [][]byte{text(100, 5), {}, text(100, 6)}, 1); err != nil {
		return err
	}
	if err := fragmented(ws, websocket.BinaryMessage, [][]byte{text(70000, 7), text(3, 8)}, 1); err != nil {
		return err
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`["EVENT","s",{}]`)); err != nil {
		return err
	}
	return ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "bye: going ✓"), time.Now().Add(time.Second))
}

func deadline() time.Time { return time.Now().Add(time.Second) }
