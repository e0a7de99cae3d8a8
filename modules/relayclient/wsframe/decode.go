// Package wsframe decodes the server→client half of a WebSocket stream
// (RFC 6455 §5): unmasked frames, fragmented messages reassembled, control
// frames (ping, pong, close) possibly between the fragments of a message.
//
// It is pure and incremental: the caller pushes whatever bytes it read and
// pulls whole events. A message that lies whole in the pushed bytes is
// handed out as a slice of them (no copy, no allocation); only a frame split
// across pushes, or a fragmented message, is copied into the decoder's carry
// buffer. The relay client's epoll loop (package netpoll) feeds it, so one
// read serves every frame it returned (docs/architecture.md, issue 16).
package wsframe

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// Op is a frame opcode (RFC 6455 §5.2).
type Op uint8

// The opcodes.
const (
	OpContinuation Op = 0
	OpText         Op = 1
	OpBinary       Op = 2
	OpClose        Op = 8
	OpPing         Op = 9
	OpPong         Op = 10
)

func (o Op) String() string {
	switch o {
	case OpContinuation:
		return "continuation"
	case OpText:
		return "text"
	case OpBinary:
		return "binary"
	case OpClose:
		return "close"
	case OpPing:
		return "ping"
	case OpPong:
		return "pong"
	}
	return fmt.Sprintf("opcode %d", uint8(o))
}

// CloseNoStatus is the code of a close frame without a body (RFC 6455 §7.1.5).
const CloseNoStatus = 1005

// KeepTooBig is how many leading bytes of a message over the limit are kept
// (to quote in an error); the rest is discarded as it arrives.
const KeepTooBig = 512

// Event is one whole message or control frame.
type Event struct {
	Op Op // OpText or OpBinary (a whole message), OpPing, OpPong or OpClose
	// Data is the payload (for OpClose the reason, without the code). It
	// refers to the pushed input or the carry buffer: valid until the next
	// Next or Push.
	Data []byte
	// Len is the whole payload length; larger than len(Data) when TooBig.
	Len int64
	// TooBig: the message's payload exceeded Limit; Data holds its first
	// KeepTooBig bytes at most, the rest was discarded.
	TooBig bool
	Code   int // OpClose: the status code (CloseNoStatus when absent)
}

// ProtocolError is a violation of RFC 6455 by the server: the stream cannot
// be decoded further.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "websocket protocol error: " + e.Msg }

func protoErr(format string, a ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, a...)}
}

// Decoder decodes one connection's server→client stream. The zero value
// (with Limit set, or 0 for no limit) is ready; it is not safe for
// concurrent use.
type Decoder struct {
	// Limit bounds a message's payload; a larger one is discarded and
	// handed out as TooBig (the stream stays usable). 0 = no limit.
	Limit int64

	in  []byte // pushed input not yet consumed
	err error  // sticky protocol error

	// A frame header split across pushes.
	hdr  [14]byte
	hdrN int

	// The frame whose payload is being read (inFrame).
	inFrame bool
	fin     bool
	op      Op
	remain  int64 // payload bytes of this frame still to come

	// The data message being assembled (inMsg: its first frame has come).
	inMsg   bool
	msgOp   Op
	msgLen  int64
	tooBig  bool
	msg     []byte // payload kept so far (carry)
	release bool   // msg was handed out: drop it at the next call

	ctl  [125]byte // a control frame's payload split across pushes
	ctlN int
}

// Push hands the decoder the next bytes of the stream. Every earlier input
// must have been consumed (Next returned false); p must stay unchanged until
// then, since events may refer to it.
func (d *Decoder) Push(p []byte) {
	d.in = p
}

// Buffered is how many bytes the decoder holds copied (carry), for tests
// and memory accounting.
func (d *Decoder) Buffered() int { return d.hdrN + len(d.msg) + d.ctlN }

// Next returns the next whole event. It returns false when the pushed input
// is used up (what was left of a partial frame is copied into the carry
// buffer), and a *ProtocolError when the stream is invalid; after an error
// every call returns it again.
func (d *Decoder) Next() (Event, bool, error) {
	if d.err != nil {
		return Event{}, false, d.err
	}
	if d.release {
		d.release = false
		d.msg = nil // sized for one message; don't keep it per connection
	}
	for {
		if !d.inFrame {
			ok, err := d.header()
			if err != nil {
				d.err, d.in = err, nil
				return Event{}, false, err
			}
			if !ok {
				return Event{}, false, nil
			}
		}
		ev, ok, err := d.payload()
		if err != nil {
			d.err, d.in = err, nil
			return Event{}, false, err
		}
		if ok {
			return ev, true, nil
		}
		if d.inFrame { // input used up inside the payload
			return Event{}, false, nil
		}
	}
}

// header parses the next frame header from hdr and in; false: incomplete
// (the bytes are kept in hdr).
func (d *Decoder) header() (bool, error) {
	var b []byte
	from := 0 // bytes of b that were already in hdr
	if d.hdrN == 0 {
		b = d.in
	} else {
		k := copy(d.hdr[d.hdrN:], d.in)
		b, from = d.hdr[:d.hdrN+k], d.hdrN
	}
	n, err := d.parseHeader(b)
	if err != nil {
		return false, err
	}
	if n == 0 {
		if d.hdrN == 0 {
			d.hdrN = copy(d.hdr[:], d.in)
		} else {
			d.hdrN = len(b)
		}
		d.in = nil
		return false, nil
	}
	d.in = d.in[n-from:]
	d.hdrN = 0
	return true, nil
}

// parseHeader parses a frame header at the start of b and starts the frame;
// it returns the header's length, 0 when b does not hold a whole header.
func (d *Decoder) parseHeader(b []byte) (int, error) {
	if len(b) < 2 {
		return 0, nil
	}
	b0, b1 := b[0], b[1]
	n := 2
	length := int64(b1 & 0x7f)
	switch length {
	case 126:
		if len(b) < 4 {
			return 0, nil
		}
		length, n = int64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return 0, nil
		}
		u := binary.BigEndian.Uint64(b[2:])
		if u>>63 != 0 {
			return 0, protoErr("64-bit payload length with the most significant bit set")
		}
		length, n = int64(u), 10
	}
	fin, op := b0&0x80 != 0, Op(b0&0x0f)
	if b0&0x70 != 0 {
		return 0, protoErr("reserved bits set (0x%02x) but no extension was negotiated", b0&0x70)
	}
	if b1&0x80 != 0 {
		return 0, protoErr("masked %s frame from the server", op)
	}
	switch op {
	case OpContinuation:
		if !d.inMsg {
			return 0, protoErr("continuation frame without a message in progress")
		}
	case OpText, OpBinary:
		if d.inMsg {
			return 0, protoErr("new %s message before the fragmented %s message ended", op, d.msgOp)
		}
		d.inMsg, d.msgOp, d.msgLen, d.tooBig = true, op, 0, false
	case OpClose, OpPing, OpPong:
		if !fin {
			return 0, protoErr("fragmented %s frame", op)
		}
		if length > 125 {
			return 0, protoErr("%s frame of %d bytes (control frames carry at most 125)", op, length)
		}
	default:
		return 0, protoErr("bad opcode %d", uint8(op))
	}
	if op < OpClose {
		d.msgLen += length
		if d.msgLen < 0 {
			return 0, protoErr("message length overflows")
		}
		if d.Limit > 0 && d.msgLen > d.Limit {
			d.tooBig = true
		}
	}
	d.inFrame, d.fin, d.op, d.remain = true, fin, op, length
	return n, nil
}

// payload consumes the current frame's payload from in; true with an event
// when a message or control frame is complete.
func (d *Decoder) payload() (Event, bool, error) {
	if d.op >= OpClose {
		return d.control()
	}
	// The hot path: a whole unfragmented message in the input.
	if d.fin && d.msg == nil && d.msgLen == d.remain && int64(len(d.in)) >= d.remain {
		data := d.in[:d.remain]
		d.in = d.in[d.remain:]
		d.inFrame, d.inMsg = false, false
		ev := Event{Op: d.msgOp, Data: data, Len: d.msgLen, TooBig: d.tooBig}
		if d.tooBig && len(data) > KeepTooBig {
			ev.Data = data[:KeepTooBig]
		}
		return ev, true, nil
	}
	k := min(d.remain, int64(len(d.in)))
	chunk := d.in[:k]
	d.in = d.in[k:]
	d.remain -= k
	if d.tooBig {
		if len(d.msg) > KeepTooBig { // it was kept whole until this fragment
			d.msg = d.msg[:KeepTooBig]
		}
		if room := KeepTooBig - len(d.msg); room < len(chunk) {
			chunk = chunk[:max(room, 0)]
		}
	}
	if len(chunk) > 0 {
		if d.msg == nil {
			// Sized once for this frame (or the kept prefix).
			// (capped: the header's length is the server's claim).
			want := min(d.remain+int64(len(chunk)), 1<<20)
			if d.tooBig {
				want = KeepTooBig
			}
			d.msg = make([]byte, 0, want)
		}
		d.msg = append(d.msg, chunk...)
	}
	if d.remain > 0 {
		return Event{}, false, nil
	}
	d.inFrame = false
	if !d.fin {
		return Event{}, false, nil
	}
	d.inMsg = false
	d.release = d.msg != nil
	data := d.msg
	if data == nil {
		data = []byte{}
	}
	return Event{Op: d.msgOp, Data: data, Len: d.msgLen, TooBig: d.tooBig}, true, nil
}

// control consumes a control frame's payload (at most 125 bytes).
func (d *Decoder) control() (Event, bool, error) {
	var p []byte
	if d.ctlN == 0 && int64(len(d.in)) >= d.remain {
		p = d.in[:d.remain]
		d.in = d.in[d.remain:]
	} else {
		k := copy(d.ctl[d.ctlN:d.ctlN+int(d.remain)], d.in)
		d.ctlN += k
		d.in = d.in[k:]
		d.remain -= int64(k)
		if d.remain > 0 {
			return Event{}, false, nil
		}
		p = d.ctl[:d.ctlN]
		d.ctlN = 0
	}
	d.inFrame = false
	ev := Event{Op: d.op, Data: p, Len: int64(len(p))}
	if d.op == OpClose {
		switch {
		case len(p) == 0:
			ev.Code = CloseNoStatus
		case len(p) == 1:
			return Event{}, false, protoErr("close frame with a 1-byte body (a status code takes 2)")
		default:
			ev.Code = int(binary.BigEndian.Uint16(p))
			if !validCloseCode(ev.Code) {
				return Event{}, false, protoErr("bad close code %d", ev.Code)
			}
			ev.Data = p[2:]
			if !utf8.Valid(ev.Data) {
				return Event{}, false, protoErr("close reason is not valid UTF-8")
			}
		}
	}
	return ev, true, nil
}

// validCloseCode: the codes an endpoint may send (RFC 6455 §7.4.1, and the
// registered 1012–1014; 3000–4999 for libraries and applications).
func validCloseCode(c int) bool {
	switch c {
	case 1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013:
		return true
	}
	return c >= 3000 && c <= 4999
}
