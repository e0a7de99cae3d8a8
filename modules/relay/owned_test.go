package relay

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// rawFrame is one server frame as read off the socket.
type rawFrame struct {
	op      byte
	payload []byte
}

// rawUpgrade opens a socket to r and upgrades it by hand, so the test
// writes and reads frames as bytes.
func rawUpgrade(t *testing.T, r *Relay) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	fmt.Fprintf(nc, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", r.URLs().Host)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", err, resp)
	}
	return nc, br
}

// readFrames reads server frames until the socket ends (or the deadline).
func readFrames(t *testing.T, nc net.Conn, br *bufio.Reader) []rawFrame {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out []rawFrame
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return out
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(br, b[:]); err != nil {
				return out
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(br, b[:]); err != nil {
				return out
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			t.Fatalf("a frame cut short after %d frames: %v", len(out), err)
		}
		out = append(out, rawFrame{op: h[0] & 0x0f, payload: p})
	}
}

// D1: a frame past the read limit is answered by gorilla's close frame
// (1009) through the relay's writer: exactly one close frame reaches the
// peer and nothing after it. Before the fix gorilla wrote its 1009 to the
// socket underneath the writer, and the writer then sent the relay's own
// close (1000) after it: two close frames.
func TestOneWriterOneCloseFrame(t *testing.T) {
	r := startRelay(t, nil)
	nc, br := rawUpgrade(t, r)
	// A masked text frame announcing 2^40 bytes: gorilla refuses it on
	// its header (the read limit), before any payload.
	hdr := []byte{0x81, 0x80 | 127, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2, 3, 4}
	if _, err := nc.Write(hdr); err != nil {
		t.Fatal(err)
	}
	frames := readFrames(t, nc, br)
	var closes []int
	for i, f := range frames {
		if f.op == 0x8 {
			code := 0
			if len(f.payload) >= 2 {
				code = int(binary.BigEndian.Uint16(f.payload))
			}
			closes = append(closes, code)
			if i != len(frames)-1 {
				t.Errorf("%d frames follow the close frame", len(frames)-1-i)
			}
		}
	}
	if len(closes) != 1 || closes[0] != websocket.CloseMessageTooBig {
		t.Fatalf("close frames %v, want exactly one, 1009", closes)
	}
}

// D2: however often a peer pings, at most one pong waits in the send
// queue, carrying the latest ping's payload (the queue was unbounded for
// pongs: a peer that pings and never reads grew it).
func TestPongsAreBounded(t *testing.T) {
	k := &conn{queue: newSendQueue()}
	for i := 0; i < 1000; i++ {
		if err := k.onPing(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(k.queue.items); n != 1 {
		t.Fatalf("%d pongs queued for 1000 pings, want 1", n)
	}
	if p := k.pong.Load(); p == nil || string(*p) != "999" {
		t.Errorf("the pong answers %v, want the latest ping", p)
	}
}

// D5: a queued delivery ends the run of drops it saw, never a drop that
// a concurrent fan-out counted after (a Store(0) lost it).
func TestADeliveryEndsOnlyTheDropsItSaw(t *testing.T) {
	var drops atomic.Int32
	drops.Add(1)
	seen := drops.Load() // the delivery reads the run…
	drops.Add(1)         // …a concurrent fan-out drops…
	endDropRun(&drops, seen)
	if got := drops.Load(); got != 2 {
		t.Fatalf("drops %d after the interleaving, want 2 (the later drop kept)", got)
	}
	endDropRun(&drops, drops.Load())
	if got := drops.Load(); got != 0 {
		t.Fatalf("drops %d, want 0 once nothing raced", got)
	}
}

// D6: the timer that drops a peer slow to take the close frame is stopped
// when the connection ends (one was left armed per closed connection).
func TestTheCloseTimerStopsWithTheConnection(t *testing.T) {
	r := startRelay(t, nil)
	c := dial(t, r)
	com := r.lookup(r.URLs().Host)
	var k *conn
	com.connMu.Lock()
	for kk := range com.conns {
		k = kk
	}
	com.connMu.Unlock()
	if k == nil {
		t.Fatal("no connection registered")
	}
	c.close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		com.connMu.Lock()
		n := len(com.conns)
		com.connMu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection did not end")
		}
		time.Sleep(5 * time.Millisecond) // polling the condition, bounded by the deadline
	}
	tm := k.closeTimer.Load()
	if tm == nil {
		t.Fatal("the connection ended without a close timer")
	}
	if tm.Stop() {
		t.Error("the close timer was still armed after the connection ended")
	}
}

// D7: check, store, then apply. A kind 9000 the relay acknowledges but
// does not store (the LoseAcked fault: a store that failed) changes no
// membership; before the fix the member was added before the store.
func TestAMembershipChangeIsAppliedOnlyOnceStored(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	c := authed(t, r, alice)
	chID := c.createChannel("ops", "private")
	r.Faults().LoseAcked(9000, 1)
	add := ev(t, alice, 9000, "", []string{"h", chID}, []string{"p", bob.PubKey()})
	if ok, msg := c.publish(add); !ok {
		t.Fatalf("the 9000 was refused: %s", msg)
	}
	if lost := r.Faults().Lost(); len(lost) != 1 || lost[0] != add.ID {
		t.Fatalf("lost %v, want the 9000", lost)
	}
	ch := r.lookup(r.URLs().Host).channel(chID)
	ch.mu.RLock()
	_, member := ch.members[bob.PubKey()]
	ch.mu.RUnlock()
	if member {
		t.Error("bob became a member through an event that was never stored")
	}
	// The same event again is stored this time, and applied once.
	if ok, msg := c.publish(add); !ok || msg != "" {
		t.Fatalf("the 9000 again: %v %q", ok, msg)
	}
	if ok, msg := c.publish(add); !ok || msg != "duplicate:" {
		t.Fatalf("the stored 9000 again: %v %q, want a duplicate", ok, msg)
	}
	ch.mu.RLock()
	role := ch.members[bob.PubKey()]
	ch.mu.RUnlock()
	if role != "member" {
		t.Errorf("bob's role %q after the stored 9000", role)
	}
}
