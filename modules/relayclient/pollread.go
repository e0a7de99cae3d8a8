package relayclient

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/modules/relayclient/netpoll"
	"github.com/buzzload/buzzload/modules/relayclient/wsframe"
)

// The poller path: plain ws:// connections on Linux are read by a few
// shared epoll loops (package netpoll) and decoded by package wsframe,
// instead of a goroutine per connection blocked in gorilla's NextReader
// (issue 16: that cost a netpoller wake-up, a park/unpark and an EAGAIN
// read per frame). Gorilla still does the upgrade and every write.

// EnvNetpoll turns the poller off when set to "0" (as Config.NoPoller does):
// every connection then has its own reader goroutine, as wss:// always has.
const EnvNetpoll = "BUZZLOAD_NETPOLL"

// pollReadBufferSize is gorilla's read buffer on the poller path: it only
// ever reads the upgrade response (gorilla's floor is 125 bytes).
const pollReadBufferSize = 256

// The process's poller, made on first use. Its loops run only while
// connections are registered, so it holds two descriptors per loop and no
// goroutine when idle.
var procPoller struct {
	once sync.Once
	p    *netpoll.Poller
	err  error
}

func defaultPoller() (*netpoll.Poller, error) {
	procPoller.once.Do(func() { procPoller.p, procPoller.err = netpoll.New(netpoll.Options{}) })
	return procPoller.p, procPoller.err
}

// usePoller: plain WebSocket, and not turned off.
func usePoller(cfg *Config, dialURL string) bool {
	if cfg.NoPoller || os.Getenv(EnvNetpoll) == "0" || !strings.HasPrefix(dialURL, "ws://") {
		return false
	}
	_, err := defaultPoller()
	return err == nil
}

// handshakeConn wraps the dialled socket while gorilla reads the upgrade
// response: gorilla reads it through its own bufio.Reader, which would
// also swallow the frames the relay sends right after it (its AUTH
// challenge comes at once). Read never returns a byte past the end of the
// response headers; what came after them is kept for the poller (rest).
type handshakeConn struct {
	net.Conn
	done  bool // the headers' end was seen
	match int  // bytes of "\r\n\r\n" matched so far
	rest  []byte
}

func (h *handshakeConn) Read(p []byte) (int, error) {
	if h.done {
		// A refused upgrade's body (gorilla reads it); never reached after
		// a 101: the poller reads the socket itself.
		if len(h.rest) > 0 {
			n := copy(p, h.rest)
			h.rest = h.rest[n:]
			return n, nil
		}
		return h.Conn.Read(p)
	}
	n, err := h.Conn.Read(p)
	for i := 0; i < n; i++ {
		switch {
		case p[i] == "\r\n\r\n"[h.match]:
			h.match++
		case p[i] == '\r':
			h.match = 1
		default:
			h.match = 0
		}
		if h.match == 4 {
			h.done = true
			h.rest = append([]byte(nil), p[i+1:n]...)
			return i + 1, nil // an error comes back on the next read
		}
	}
	return n, err
}

// takeRest hands over the bytes read past the upgrade response.
func (h *handshakeConn) takeRest() []byte {
	r := h.rest
	h.rest = nil
	return r
}

// startPoller registers c with the poller after the upgrade; false (nothing
// consumed yet) leaves it to the goroutine reader, which then reads the
// bytes past the response through hs first. The bytes read past the
// response are decoded here, before any loop can read the socket, so
// nothing is lost or reordered.
func (c *Conn) startPoller(hs *handshakeConn) bool {
	p, err := defaultPoller()
	if err != nil {
		return false
	}
	tc, ok := hs.Conn.(*net.TCPConn)
	if !ok {
		return false
	}
	// Out of Go's poller, or it would wake for every frame too. It needs a
	// spare descriptor for a moment: at the descriptor limit this fails,
	// and the connection keeps its goroutine reader.
	sock, err := netpoll.Detach(tc)
	if err != nil {
		return false
	}
	hs.Conn = sock // gorilla writes and closes through it from now on
	c.dec.Limit = int64(c.cfg.MaxFrameBytes)
	c.idleFrom = int64(time.Since(c.born))
	fail := func(err error) { go c.pollFinish(err) } // c.reg stays nil: Close closes the socket
	if rest := hs.takeRest(); len(rest) > 0 {
		if err := (*pollHandler)(c).OnRead(rest, time.Now()); err != nil {
			fail(err)
			return true
		}
	}
	// c.mu is held over Add so that a callback on the loop (Close) sees c.reg.
	c.mu.Lock()
	c.reg, err = p.Add(sock, (*pollHandler)(c))
	c.mu.Unlock()
	if err != nil {
		fail(err)
	}
	return true
}

// pollHandler is the Conn as the poller's Handler (methods on the loop
// goroutine, not part of Conn's API).
type pollHandler Conn

func (h *pollHandler) OnRead(b []byte, at time.Time) error {
	c := (*Conn)(h)
	c.dec.Push(b)
	for {
		ev, ok, err := c.dec.Next()
		if err != nil || !ok {
			return err
		}
		switch ev.Op {
		case wsframe.OpText, wsframe.OpBinary:
			c.lastFrame.Store(int64(at.Sub(c.born)))
			c.idleFrom = int64(at.Sub(c.born))
			c.stats.framesIn.Add(1)
			c.stats.bytesIn.Add(ev.Len)
			if ev.TooBig {
				c.badFrame(at, ev.Len, fmt.Errorf("frame too large (%d bytes, limit %d)", ev.Len, c.cfg.MaxFrameBytes), ev.Data)
				continue
			}
			c.dispatch(ev.Data, at)
		case wsframe.OpPing:
			c.idleFrom = int64(at.Sub(c.born))
			c.onPing(string(ev.Data))
		case wsframe.OpClose:
			return &websocket.CloseError{Code: ev.Code, Text: string(ev.Data)}
		}
	}
}

// onPing answers a ping off the loop (a write may wait on the write lock),
// with one goroutine however many pings arrive meanwhile: it answers the
// latest (RFC 6455 §5.5.3) and ends when none is left (code review D4: a
// goroutine per ping was unbounded under a ping flood). A goroutine runs
// exactly while c.pongData is set.
func (c *Conn) onPing(data string) {
	if c.pongData.Swap(&data) == nil {
		go c.pongs()
	}
}

func (c *Conn) pongs() {
	for {
		p := c.pongData.Load()
		_ = c.ws.WriteControl(websocket.PongMessage, []byte(*p), time.Now().Add(c.cfg.WriteTimeout))
		if c.pongData.CompareAndSwap(p, nil) {
			return
		}
	}
}

// WantsTicks: only a connection with a read idle timeout needs OnTick
// (netpoll.TickChooser); its config does not change once connected.
func (h *pollHandler) WantsTicks() bool { return h.cfg.ReadIdleTimeout > 0 }

// OnTick ends a connection silent for ReadIdleTimeout, as gorilla's read
// deadline does on the goroutine path (same error).
func (h *pollHandler) OnTick(now time.Time) error {
	c := (*Conn)(h)
	idle := c.cfg.ReadIdleTimeout
	if idle <= 0 || now.Sub(c.born)-time.Duration(c.idleFrom) < idle {
		return nil
	}
	return &net.OpError{Op: "read", Net: "tcp", Source: c.ws.LocalAddr(), Addr: c.ws.RemoteAddr(), Err: os.ErrDeadlineExceeded}
}

// OnDetach: the socket has left the poller; settle off the loop goroutine
// (finish runs every callback still owed and closes the socket).
func (h *pollHandler) OnDetach(err error) {
	go (*Conn)(h).pollFinish(err)
}

// pollFinish ends a polled connection the way gorilla's reader would have:
// the same errors for finish, and the same close frames.
func (c *Conn) pollFinish(err error) {
	var ce *websocket.CloseError
	var pe *wsframe.ProtocolError
	var se *os.SyscallError
	switch {
	case err == nil: // our Close or abort: lostErr is set, or byUs
	case errors.Is(err, io.EOF):
		// gorilla's name for a stream that ended without a close frame
		err = &websocket.CloseError{Code: websocket.CloseAbnormalClosure, Text: io.ErrUnexpectedEOF.Error()}
	case errors.As(err, &ce):
		// Echo the relay's close, as gorilla's default close handler does.
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(ce.Code, ""), time.Now().Add(time.Second))
	case errors.As(err, &pe):
		msg := pe.Msg
		if len(msg) > 100 {
			msg = msg[:100]
		}
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseProtocolError, msg), time.Now().Add(time.Second))
	case errors.As(err, &se):
		err = &net.OpError{Op: "read", Net: "tcp", Source: c.ws.LocalAddr(), Addr: c.ws.RemoteAddr(), Err: se}
	}
	c.finish(err)
}
