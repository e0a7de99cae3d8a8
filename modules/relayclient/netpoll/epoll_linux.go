//go:build linux

package netpoll

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// wakeSlot marks the loop's eventfd in epoll data.
const wakeSlot = ^uint32(0)

// Poller is a set of epoll loops; sockets are spread over them round-robin.
type Poller struct {
	loops []*loop
	next  atomic.Uint32
}

// New creates the loops' epoll and event descriptors. A loop's goroutine
// runs only while sockets are registered with it.
func New(opt Options) (*Poller, error) {
	opt.withDefaults()
	p := &Poller{}
	for i := 0; i < opt.Loops; i++ {
		l, err := newLoop(opt)
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		p.loops = append(p.loops, l)
	}
	return p, nil
}

// Close releases the loops' descriptors. Every registration must have
// been detached; it fails otherwise.
func (p *Poller) Close() error {
	for _, l := range p.loops {
		if err := l.close(); err != nil {
			return err
		}
	}
	return nil
}

// Reg is one socket's registration.
type Reg struct {
	l       *loop
	rc      syscall.RawConn
	h       Handler
	slot    uint32
	gen     uint32
	removed atomic.Bool // set once, by whoever takes it out of the epoll set
	err     error       // why, for OnDetach (written before removed is visible to the loop's detach list)
}

// Add registers rc's socket (level-triggered, for input). From now on
// h's methods run on a loop goroutine; rc must not be read otherwise, and
// must not be closed before h.OnDetach.
func (p *Poller) Add(rc syscall.RawConn, h Handler) (*Reg, error) {
	l := p.loops[int(p.next.Add(1)-1)%len(p.loops)]
	r := &Reg{l: l, rc: rc, h: h}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("netpoll: poller closed")
	}
	if n := len(l.free); n > 0 {
		r.slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		r.slot = uint32(len(l.slots))
		l.slots = append(l.slots, slot{})
	}
	s := &l.slots[r.slot]
	s.gen++
	s.reg, r.gen = r, s.gen
	l.n++
	start := !l.running
	l.running = true
	l.mu.Unlock()

	var cerr error
	err := rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(r.slot), Pad: int32(r.gen)}
		cerr = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err == nil {
		err = cerr
	}
	if start {
		go l.run()
	}
	if err != nil {
		r.removed.Store(true)
		l.mu.Lock()
		l.freeLocked(r)
		l.mu.Unlock()
		l.wake()
		return nil, fmt.Errorf("netpoll: epoll_ctl add: %w", err)
	}
	return r, nil
}

// Remove takes the socket out of its loop; OnDetach(nil) follows on the
// loop goroutine (unless the registration had already ended). It does not
// wait, may be called from any goroutine or from the handler, and is
// idempotent.
func (r *Reg) Remove() {
	if r.detach(nil) {
		r.l.wake()
	}
}

// detach takes r out of the epoll set, then out of its slot, and queues its
// OnDetach; false if it was already detached. The EPOLL_CTL_DEL runs inside
// Control, before the socket can be closed (the handler closes it only
// after OnDetach): a reused descriptor number never reaches r, and a stale
// event for r's slot fails the generation check.
func (r *Reg) detach(err error) bool {
	if !r.removed.CompareAndSwap(false, true) {
		return false
	}
	_ = r.rc.Control(func(fd uintptr) {
		_ = unix.EpollCtl(r.l.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
	l := r.l
	l.mu.Lock()
	r.err = err
	l.freeLocked(r)
	l.detached = append(l.detached, r)
	l.mu.Unlock()
	return true
}

type slot struct {
	reg *Reg
	gen uint32
}

type loop struct {
	epfd, evfd int
	tick       time.Duration
	buf        []byte
	events     []unix.EpollEvent

	mu       sync.Mutex
	slots    []slot
	free     []uint32
	n        int    // registered
	detached []*Reg // awaiting OnDetach
	running  bool   // the goroutine runs (while n > 0 or detached is not empty)
	closed   bool

	// loop goroutine only
	ticks   []*Reg
	pending []*Reg
	readFn  func(fd uintptr) bool
	rn      int
	rerr    error
}

func newLoop(opt Options) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("netpoll: epoll_create1: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("netpoll: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1, Pad: 0} // wakeSlot
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, fmt.Errorf("netpoll: epoll_ctl add eventfd: %w", err)
	}
	l := &loop{epfd: epfd, evfd: evfd, tick: opt.Tick, buf: make([]byte, opt.BufSize), events: make([]unix.EpollEvent, 256)}
	// One read per readiness, and never a park: the func always returns
	// true, so Go's poller is never asked to wait for this descriptor
	// (RawConn.Read's prepareRead resets its readiness; harmless).
	l.readFn = func(fd uintptr) bool {
		l.rn, l.rerr = syscall.Read(int(fd), l.buf)
		return true
	}
	return l, nil
}

func (l *loop) close() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil
		}
		if l.n == 0 && len(l.detached) == 0 && !l.running {
			l.closed = true
			l.mu.Unlock()
			unix.Close(l.epfd)
			unix.Close(l.evfd)
			return nil
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			return errors.New("netpoll: close with sockets still registered")
		}
		time.Sleep(time.Millisecond)
	}
}

// freeLocked releases r's slot (l.mu held).
func (l *loop) freeLocked(r *Reg) {
	if s := &l.slots[r.slot]; s.reg == r {
		s.reg = nil
		l.free = append(l.free, r.slot)
		l.n--
	}
}

// wake interrupts the loop's epoll_wait (to run OnDetach soon).
func (l *loop) wake() {
	var one = [8]byte{1}
	_, _ = unix.Write(l.evfd, one[:])
}

func (l *loop) lookup(slotID, gen uint32) *Reg {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int(slotID) >= len(l.slots) {
		return nil
	}
	if s := l.slots[slotID]; s.gen == gen && s.reg != nil {
		return s.reg
	}
	return nil
}

// run is the loop goroutine: it exits when no socket is left.
func (l *loop) run() {
	lastTick := time.Now()
	for {
		n, err := unix.EpollWait(l.epfd, l.events, int(l.tick/time.Millisecond))
		if err != nil && err != unix.EINTR {
			l.failAll(fmt.Errorf("netpoll: epoll_wait: %w", err))
		}
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			if uint32(ev.Fd) == wakeSlot {
				var b [8]byte
				_, _ = unix.Read(l.evfd, b[:])
				continue
			}
			if r := l.lookup(uint32(ev.Fd), uint32(ev.Pad)); r != nil && !r.removed.Load() {
				l.read(r)
			}
		}
		l.runDetached()
		if now := time.Now(); now.Sub(lastTick) >= l.tick {
			lastTick = now
			l.runTicks(now)
			l.runDetached()
		}
		l.mu.Lock()
		if l.n == 0 && len(l.detached) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
}

// read does the one read of a ready socket and hands the bytes over.
func (l *loop) read(r *Reg) {
	l.rn, l.rerr = 0, nil
	if err := r.rc.Read(l.readFn); err != nil { // closed under us
		r.detach(err)
		return
	}
	switch {
	case l.rerr == unix.EAGAIN || l.rerr == unix.EINTR:
		return // level-triggered: it comes back if there is data
	case l.rerr != nil:
		r.detach(os.NewSyscallError("read", l.rerr))
		return
	case l.rn == 0:
		r.detach(io.EOF)
		return
	}
	if err := r.h.OnRead(l.buf[:l.rn], time.Now()); err != nil {
		r.detach(err)
	}
}

func (l *loop) runTicks(now time.Time) {
	l.mu.Lock()
	l.ticks = l.ticks[:0]
	for _, s := range l.slots {
		if s.reg != nil {
			l.ticks = append(l.ticks, s.reg)
		}
	}
	l.mu.Unlock()
	for i, r := range l.ticks {
		if !r.removed.Load() {
			if err := r.h.OnTick(now); err != nil {
				r.detach(err)
			}
		}
		l.ticks[i] = nil
	}
}

func (l *loop) runDetached() {
	l.mu.Lock()
	if len(l.detached) == 0 {
		l.mu.Unlock()
		return
	}
	l.pending, l.detached = l.detached, l.pending[:0]
	l.mu.Unlock()
	for i, r := range l.pending {
		r.h.OnDetach(r.err)
		l.pending[i] = nil
	}
}

// failAll ends every registration: the loop cannot wait any more.
func (l *loop) failAll(err error) {
	l.mu.Lock()
	var all []*Reg
	for _, s := range l.slots {
		if s.reg != nil {
			all = append(all, s.reg)
		}
	}
	l.mu.Unlock()
	for _, r := range all {
		r.detach(err)
	}
}
