//go:build linux

package netpoll

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"golang.org/x/sys/unix"
)

// recorder is a Handler that keeps what it got and checks the contract:
// nothing after OnDetach, OnDetach once.
type recorder struct {
	t        *testing.T
	mu       sync.Mutex
	got      bytes.Buffer
	detached chan error
	done     atomic.Bool
	onRead   func(b []byte) error
	onTick   func(now time.Time) error
	reads    atomic.Int64
	inCall   atomic.Int32
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{t: t, detached: make(chan error, 2)}
}

func (h *recorder) enter() {
	if h.inCall.Add(1) != 1 {
		h.t.Error("handler methods overlap")
	}
	if h.done.Load() {
		h.t.Error("handler called after OnDetach")
	}
}

func (h *recorder) OnRead(b []byte, at time.Time) error {
	h.enter()
	defer h.inCall.Add(-1)
	if at.IsZero() || time.Since(at) < 0 {
		h.t.Error("bad arrival time")
	}
	h.reads.Add(1)
	h.mu.Lock()
	h.got.Write(b)
	h.mu.Unlock()
	if h.onRead != nil {
		return h.onRead(b)
	}
	return nil
}

func (h *recorder) OnTick(now time.Time) error {
	h.enter()
	defer h.inCall.Add(-1)
	if h.onTick != nil {
		return h.onTick(now)
	}
	return nil
}

func (h *recorder) OnDetach(err error) {
	h.enter()
	defer h.inCall.Add(-1)
	if !h.done.CompareAndSwap(false, true) {
		h.t.Error("second OnDetach")
	}
	h.detached <- err
}

func (h *recorder) bytes() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]byte(nil), h.got.Bytes()...)
}

func (h *recorder) waitDetach(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.detached:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no OnDetach")
		return nil
	}
}

// pair is a loopback TCP connection: the client end (to register) and the server end.
func pair(t *testing.T, ln net.Listener) (client *net.TCPConn, server net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// detach takes the client end out of Go's poller (closed at cleanup).
func detach(t *testing.T, c *net.TCPConn) *Socket {
	t.Helper()
	s, err := Detach(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newPoller(t *testing.T, opt Options) *Poller {
	t.Helper()
	p, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func TestBytesReachTheirSocketsHandlerAndEOFDetaches(t *testing.T) {
	p := newPoller(t, Options{Loops: 2, BufSize: 1000})
	ln := listen(t)
	const n = 40
	hs := make([]*recorder, n)
	srv := make([]net.Conn, n)
	for i := range hs {
		c, s := pair(t, ln)
		hs[i], srv[i] = newRecorder(t), s
		if _, err := p.Add(detach(t, c), hs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i, s := range srv {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 20; k++ {
				fmt.Fprintf(s, "conn %d line %d %s\n", i, k, bytes.Repeat([]byte{'x'}, k*37))
			}
			s.Close()
		}()
	}
	wg.Wait()
	for i, h := range hs {
		if err := h.waitDetach(t); !errors.Is(err, io.EOF) {
			t.Fatalf("conn %d: detach error %v, want EOF", i, err)
		}
		var want bytes.Buffer
		for k := 0; k < 20; k++ {
			fmt.Fprintf(&want, "conn %d line %d %s\n", i, k, bytes.Repeat([]byte{'x'}, k*37))
		}
		if !bytes.Equal(h.bytes(), want.Bytes()) {
			t.Fatalf("conn %d got %d bytes, want %d", i, len(h.bytes()), want.Len())
		}
	}
}

func TestRemoveFromInsideOnRead(t *testing.T) {
	p := newPoller(t, Options{Loops: 1})
	ln := listen(t)
	c, s := pair(t, ln)
	h := newRecorder(t)
	var reg *Reg
	h.onRead = func([]byte) error { reg.Remove(); reg.Remove(); return nil }
	h.mu.Lock() // reg is set before the first OnRead can run
	var err error
	sock := detach(t, c)
	if reg, err = p.Add(sock, h); err != nil {
		t.Fatal(err)
	}
	h.mu.Unlock()
	_, _ = s.Write([]byte("one"))
	if err := h.waitDetach(t); err != nil {
		t.Fatalf("detach error %v, want nil", err)
	}
	_, _ = s.Write([]byte("two"))
	// "two" arrives and stays unread: the loop is gone from the socket.
	// A second socket read on the same loop afterwards proves the loop
	// looked again since the bytes arrived.
	waitfor.Until(t, `"two" in the socket's receive queue`, 5*time.Second, func() bool { return inQueue(sock.fd) == 3 })
	loopLooked(t, p, ln)
	if h.reads.Load() != 1 || inQueue(sock.fd) != 3 {
		t.Fatalf("%d reads after Remove", h.reads.Load())
	}
	// The socket is still ours to close, and usable.
	if _, err := sock.Write([]byte("still writable")); err != nil {
		t.Fatal(err)
	}
	_ = sock.Close()
}

func TestOnTickErrorDetaches(t *testing.T) {
	p := newPoller(t, Options{Loops: 1, Tick: 10 * time.Millisecond})
	ln := listen(t)
	c, _ := pair(t, ln)
	h := newRecorder(t)
	idle := errors.New("idle")
	var ticks atomic.Int32
	h.onTick = func(time.Time) error {
		if ticks.Add(1) == 3 {
			return idle
		}
		return nil
	}
	if _, err := p.Add(detach(t, c), h); err != nil {
		t.Fatal(err)
	}
	if err := h.waitDetach(t); err != idle {
		t.Fatalf("detach error %v", err)
	}
}

// A socket removed and closed while its peer writes, then a new socket that
// gets the same descriptor number: the new one's bytes reach only the new
// handler, the old handler sees nothing after OnDetach.
func TestReusedDescriptorNumberReachesOnlyTheNewSocket(t *testing.T) {
	p := newPoller(t, Options{Loops: 1})
	ln := listen(t)
	reused := 0
	closedFDs := map[int]bool{} // numbers of sockets already closed
	for round := 0; round < 50; round++ {
		c1, s1 := pair(t, ln)
		h1 := newRecorder(t)
		so1 := detach(t, c1)
		fd1 := so1.fd
		r1, err := p.Add(so1, h1)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() { // the old peer keeps writing
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s1.Write([]byte("old!")); err != nil {
					return
				}
			}
		}()
		waitfor.Until(t, "the old socket's first bytes", 5*time.Second, func() bool { return len(h1.bytes()) > 0 })
		r1.Remove()
		_ = h1.waitDetach(t)
		got1 := len(h1.bytes())
		_ = so1.Close()

		c2, s2 := pair(t, ln)
		so2 := detach(t, c2)
		closedFDs[fd1] = true
		if closedFDs[so2.fd] {
			reused++
		}
		h2 := newRecorder(t)
		r2, err := p.Add(so2, h2)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s2.Write([]byte("new"))
		waitfor.Until(t, "the new socket's bytes", 5*time.Second, func() bool { return len(h2.bytes()) >= 3 })
		if string(h2.bytes()) != "new" {
			t.Fatalf("round %d: new socket got %q", round, h2.bytes())
		}
		close(stop)
		if len(h1.bytes()) != got1 {
			t.Fatalf("round %d: the old handler got bytes after OnDetach", round)
		}
		r2.Remove()
		_ = h2.waitDetach(t)
		closedFDs[so2.fd] = true
		_ = so2.Close()
		_ = s1.Close()
		_ = s2.Close()
	}
	if reused == 0 {
		t.Fatal("no descriptor number was reused: the test did not test reuse")
	}
}

// Many sockets removed from other goroutines while their peers write:
// every handler detaches exactly once, never called after (run with -race).
func TestConcurrentRemovesWhileReading(t *testing.T) {
	g0 := runtime.NumGoroutine()
	p := newPoller(t, Options{Loops: 2, BufSize: 4096})
	ln := listen(t)
	const n = 60
	var regs []*Reg
	var hs []*recorder
	var srv []net.Conn
	var cl []*Socket
	for i := 0; i < n; i++ {
		c, s := pair(t, ln)
		h := newRecorder(t)
		so := detach(t, c)
		r, err := p.Add(so, h)
		if err != nil {
			t.Fatal(err)
		}
		regs, hs, srv, cl = append(regs, r), append(hs, h), append(srv, s), append(cl, so)
	}
	var wg sync.WaitGroup
	for _, s := range srv {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := bytes.Repeat([]byte("y"), 700)
			for k := 0; k < 200; k++ {
				if _, err := s.Write(msg); err != nil {
					return
				}
			}
		}()
	}
	for i, r := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Removed once some of its peer's bytes were read: mid-stream.
			waitfor.Until(t, "bytes before the remove", 5*time.Second, func() bool { return len(hs[i].bytes()) >= 700*(1+i%7) })
			r.Remove()
			if err := hs[i].waitDetach(t); err != nil {
				t.Errorf("conn %d: %v", i, err)
			}
			_ = cl[i].Close() // after OnDetach, as a handler does
			_ = srv[i].Close()
		}()
	}
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "the loops to exit", 5*time.Second, func() bool { return runtime.NumGoroutine() <= g0 })
}

// quietRecorder is a recorder that declines ticks (TickChooser).
type quietRecorder struct{ *recorder }

func (quietRecorder) WantsTicks() bool { return false }

// A handler that declines ticks gets no OnTick, also on a loop where
// another socket ticks, and again once that socket is gone; the ticking
// one keeps getting them.
func TestTickChooserDeclinedGetsNoTicks(t *testing.T) {
	p := newPoller(t, Options{Loops: 1, Tick: 5 * time.Millisecond})
	ln := listen(t)
	c1, _ := pair(t, ln)
	c2, _ := pair(t, ln)
	quiet := quietRecorder{newRecorder(t)}
	var quietTicks, ticks atomic.Int32
	quiet.onTick = func(time.Time) error { quietTicks.Add(1); return nil }
	h := newRecorder(t)
	h.onTick = func(time.Time) error { ticks.Add(1); return nil }
	rq, err := p.Add(detach(t, c1), quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Add(detach(t, c2), h)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "5 ticks of the ticking handler", 5*time.Second, func() bool { return ticks.Load() >= 5 })
	r.Remove()
	_ = h.waitDetach(t)
	// A few more ticks of the loop, seen by a third handler that ticks.
	c3, _ := pair(t, ln)
	h3 := newRecorder(t)
	var ticks3 atomic.Int32
	h3.onTick = func(time.Time) error { ticks3.Add(1); return nil }
	r3, err := p.Add(detach(t, c3), h3)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "3 ticks of the loop after the remove", 5*time.Second, func() bool { return ticks3.Load() >= 3 })
	r3.Remove()
	_ = h3.waitDetach(t)
	if n := quietTicks.Load(); n != 0 {
		t.Fatalf("the handler that declined ticks got %d", n)
	}
	rq.Remove()
	_ = quiet.waitDetach(t)
}

// A write waiting for room in a full send buffer must not hold the socket's
// lock: a Remove of that socket then waits for the write lock, and a waiting
// writer of an RWMutex blocks new readers, so the loop's next read of the
// socket would stall every socket on the loop until the write's deadline
// (a 6,000-human stop saw OKs and deliveries 10–15 s late).
func TestBlockedWriteDoesNotStallTheLoop(t *testing.T) {
	p := newPoller(t, Options{Loops: 1})
	ln := listen(t)
	ca, sa := pair(t, ln)
	cb, sb := pair(t, ln)
	a, b := detach(t, ca), detach(t, cb)
	ha, hb := newRecorder(t), newRecorder(t)
	ra, err := p.Add(a, ha)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := p.Add(b, hb)
	if err != nil {
		t.Fatal(err)
	}
	// sa never reads: a's send buffer fills and the write waits.
	const deadline = 4 * time.Second
	_ = a.SetWriteDeadline(time.Now().Add(deadline))
	wrote := make(chan error, 1)
	go func() {
		_, err := a.Write(make([]byte, 64<<20))
		wrote <- err
	}()
	// The write is waiting for room: a's send buffer is full and the
	// write has not returned.
	waitfor.Until(t, "a's write to wait for room", deadline/2, func() bool {
		select {
		case err := <-wrote:
			t.Fatalf("the write ended: %v", err)
		default:
		}
		return !writable(a.fd)
	})
	removed := make(chan struct{})
	go func() { ra.Remove(); close(removed) }()
	// a becomes readable (the loop reads it unless it has left the set), then b.
	if _, err := sa.Write([]byte("for a")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, `"for a" in a's receive queue or read`, deadline/2, func() bool {
		return inQueue(a.fd) > 0 || len(ha.bytes()) > 0
	})
	if _, err := sb.Write([]byte("for b")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "b's bytes while a's write waits", deadline/2, func() bool { return bytes.Equal(hb.bytes(), []byte("for b")) })
	select {
	case <-removed:
	case <-time.After(deadline / 2):
		t.Fatal("Remove waited for the blocked write")
	}
	_ = ha.waitDetach(t)
	a.Close() // ends the write
	if err := <-wrote; err == nil {
		t.Error("the 64 MiB write to a peer that never reads succeeded")
	}
	rb.Remove()
	_ = hb.waitDetach(t)
}

// countHandler signals each read and keeps nothing (no allocation of its own).
type countHandler struct{ got chan int }

func (h *countHandler) OnRead(b []byte, _ time.Time) error { h.got <- len(b); return nil }
func (h *countHandler) OnTick(time.Time) error             { return nil }
func (h *countHandler) OnDetach(error)                     {}
func (h *countHandler) WantsTicks() bool                   { return false }

// The loop's read path (wake-up, epoll_wait, the read, the handler call)
// allocates nothing per frame (issue 16: no allocation per frame on the
// hot path). testing.AllocsPerRun counts every goroutine's allocations, the
// loop's included: each run writes one frame from the peer and waits for
// the handler to get it.
func TestReadPathAllocatesNothing(t *testing.T) {
	p := newPoller(t, Options{Loops: 1})
	c, s := pair(t, listen(t))
	h := &countHandler{got: make(chan int, 1)}
	reg, err := p.Add(detach(t, c), h)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Remove()
	frame := bytes.Repeat([]byte{'x'}, 600)
	deadline := time.NewTimer(30 * time.Second) // one for the test: time.After allocates
	defer deadline.Stop()
	one := func() {
		if _, err := s.Write(frame); err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(frame); {
			select {
			case k := <-h.got:
				n += k
			case <-deadline.C:
				t.Fatal("frames not read within 30 s")
			}
		}
	}
	for range 50 { // warm: the loop goroutine and timers exist
		one()
	}
	if n := testing.AllocsPerRun(200, one); n != 0 {
		t.Fatalf("%v allocations per frame read", n)
	}
}

// inQueue is how many bytes wait unread in socket fd's receive queue.
func inQueue(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
	if err != nil {
		return -1
	}
	return n
}

// writable reports whether socket fd's send buffer has room.
func writable(fd int) bool {
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 0)
	return err == nil && n > 0
}

// loopLooked adds a socket to p, writes to it and waits until it is read:
// the loop has waited on its events since the test's earlier writes.
func loopLooked(t *testing.T, p *Poller, ln net.Listener) {
	t.Helper()
	c, s := pair(t, ln)
	h := newRecorder(t)
	r, err := p.Add(detach(t, c), h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("look")); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "the loop to read a fresh socket", 5*time.Second, func() bool { return string(h.bytes()) == "look" })
	r.Remove()
	_ = h.waitDetach(t)
}
