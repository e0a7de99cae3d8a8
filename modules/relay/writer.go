// The connection's writer: one goroutine per connection owns every write,
// draining a bounded send queue in batches of WebSocket frames (writev for
// large batches, one copy for small ones).

package relay

import (
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// outFrame is one queued frame: data, or for a live event the
// subscription's shared `["EVENT","<sub>",` prefix (data), the event's shared
// JSON (body) and a closing bracket, so a delivery copies nothing. op is 0
// for a text frame, else a control opcode (pong, close).
type outFrame struct {
	data      []byte
	body      []byte
	op        byte
	thenClose bool // close the socket once data is written
	raw       bool // data is a whole frame, header included (gorilla's: owned.go)
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
// (pings, pongs and close frames go through it too, gorilla's own close
// frames included: owned.go), so frames never interleave and nothing
// follows a close frame.
type frameWriter struct {
	hdrs []byte
	bufs net.Buffers
	size int
}

func (w *frameWriter) add(f outFrame) {
	if f.raw {
		w.bufs = append(w.bufs, f.data)
		w.size += len(f.data)
		return
	}
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

// smallBufs recycles the copy buffers of small writes: a wide channel's
// fan-out makes one per delivery.
var smallBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (k *conn) flush(w *frameWriter) error {
	if len(w.bufs) == 0 {
		return nil
	}
	nc := k.nc
	k.armWriteDeadline(nc)
	var err error
	if w.size < smallWrite {
		// Small batches are copied into one buffer and written plainly:
		// writev keeps a per-socket iovec array alive (~10 KB per idle
		// connection), which only large batches are worth.
		bp := smallBufs.Get().(*[]byte)
		out := (*bp)[:0]
		for _, b := range w.bufs {
			out = append(out, b...)
		}
		_, err = nc.Write(out)
		if cap(out) <= smallWrite+16<<10 {
			*bp = out[:0]
			smallBufs.Put(bp)
		}
	} else {
		bufs := w.bufs // WriteTo consumes its receiver
		_, err = bufs.WriteTo(nc)
	}
	w.reset(0)
	return err
}

// armWriteDeadline gives the next write WriteTimeout to complete. Moving a
// socket's deadline costs a timer update in the runtime (~3 % of the relay's
// CPU when every delivery moved it), so a deadline still WriteTimeout or
// more away is kept, and a new one is set WriteTimeout/8 further: a write
// then has between WriteTimeout and 1.125×WriteTimeout.
func (k *conn) armWriteDeadline(nc net.Conn) {
	now := time.Now()
	if !k.writeDeadline.IsZero() && k.writeDeadline.Sub(now) >= k.r.cfg.WriteTimeout {
		return
	}
	k.writeDeadline = now.Add(k.r.cfg.WriteTimeout + k.r.cfg.WriteTimeout/8)
	nc.SetWriteDeadline(k.writeDeadline)
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
			if d := k.r.stallLeft(); d > 0 { // the Stall drill: write nothing until it ends
				select {
				case <-time.After(d):
				case <-k.done:
					return
				}
			}
			batch = k.queue.take(batch[:0])
			w.reset(len(batch))
			for i, f := range batch {
				batch[i] = outFrame{} // let the frame be collected
				if f.op == opPong && !f.raw {
					if p := k.pong.Swap(nil); p != nil {
						f.data = *p
					}
				}
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
