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
	"unsafe"

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
	s       *Socket
	h       Handler
	slot    uint32
	gen     uint32
	tick    bool        // OnTick wanted (TickChooser)
	removed atomic.Bool // set once, by whoever takes it out of the epoll set
	err     error       // why, for OnDetach (written before removed is visible to the loop's detach list)
}

// Add registers a detached socket (level-triggered, for input). From now
// on h's methods run on a loop goroutine; the handler closes the socket
// after OnDetach (closing it earlier is safe too: it leaves the epoll set
// first, and OnDetach follows with ErrClosed).
func (p *Poller) Add(sock *Socket, h Handler) (*Reg, error) {
	l := p.loops[int(p.next.Add(1)-1)%len(p.loops)]
	r := &Reg{l: l, s: sock, h: h, tick: true}
	if tc, ok := h.(TickChooser); ok {
		r.tick = tc.WantsTicks()
	}
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
	if r.tick {
		l.nTick++
	}
	start := !l.running
	l.running = true
	l.mu.Unlock()

	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(r.slot), Pad: int32(r.gen)}
	err := sock.register(l.epfd, &ev)
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

// Behind reports whether r's loop is busy handing over reads: data that
// arrived for r may then still be unread. False while the loop waits.
func (r *Reg) Behind() bool { return r.l.busy.Load() }

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
// OnDetach; false if it was already detached. The EPOLL_CTL_DEL runs under
// the socket's lock, while its descriptor is open (Socket.Close does the
// same if it comes first): a reused descriptor number is never touched, and
// a stale event for r's slot fails the generation check.
func (r *Reg) detach(err error) bool {
	if !r.removed.CompareAndSwap(false, true) {
		return false
	}
	r.s.deregister()
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
	// epf is epfd as a file Go's own poller waits on: the loop parks on
	// it rather than blocking a thread in epoll_wait (a blocking syscall
	// hands the P off and costs futex wake-ups per return; measured:
	// worse than a goroutine per socket at one frame per wake-up).
	epf    *os.File
	eprc   syscall.RawConn
	waitN  int
	waitE  error
	waitFn func(fd uintptr) bool
	tick   time.Duration
	buf    []byte
	events []unix.EpollEvent

	mu       sync.Mutex
	slots    []slot
	free     []uint32
	n        int    // registered
	nTick    int    // registered with tick set
	detached []*Reg // awaiting OnDetach
	running  bool   // the goroutine runs (while n > 0 or detached is not empty)
	closed   bool

	// busy is false while the loop waits on epoll: then every socket of
	// the loop has been read up to what the kernel reported ready.
	busy atomic.Bool

	// loop goroutine only
	ticks   []*Reg
	pending []*Reg
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
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, fmt.Errorf("netpoll: epoll fd non-blocking: %w", err)
	}
	l := &loop{epfd: epfd, evfd: evfd, tick: opt.Tick, buf: make([]byte, opt.BufSize), events: make([]unix.EpollEvent, 256)}
	l.epf = os.NewFile(uintptr(epfd), "netpoll-epoll") // owns epfd from here
	if l.eprc, err = l.epf.SyscallConn(); err != nil {
		l.epf.Close()
		unix.Close(evfd)
		return nil, fmt.Errorf("netpoll: epoll fd: %w", err)
	}
	// Non-blocking epoll_wait; false (nothing ready) parks the goroutine
	// in Go's poller until the epoll fd is readable.
	l.waitFn = func(uintptr) bool {
		l.waitN, l.waitE = epollPoll(l.epfd, l.events)
		return l.waitN != 0 || (l.waitE != nil && l.waitE != unix.EINTR && l.waitE != unix.EAGAIN)
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
			l.epf.Close()
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
		if r.tick {
			l.nTick--
		}
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
	var deadline time.Time
	for {
		// The next tick bounds the wait (set only when it moves: a
		// deadline change is a timer update).
		if next := lastTick.Add(l.tick); !next.Equal(deadline) {
			deadline = next
			_ = l.epf.SetReadDeadline(deadline)
		}
		l.waitN, l.waitE = 0, nil
		l.busy.Store(false)
		err := l.eprc.Read(l.waitFn)
		l.busy.Store(true)
		n := l.waitN
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			n = 0
		case err != nil:
			l.failAll(fmt.Errorf("netpoll: waiting on epoll: %w", err))
		case l.waitE != nil && n <= 0:
			l.failAll(fmt.Errorf("netpoll: epoll_wait: %w", l.waitE))
			n = 0
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
	n, err := r.s.read(l.buf)
	switch {
	case err == unix.EAGAIN:
		return // level-triggered: it comes back if there is data
	case err == ErrClosed:
		r.detach(err)
		return
	case err != nil:
		r.detach(os.NewSyscallError("read", err))
		return
	case n == 0:
		r.detach(io.EOF)
		return
	}
	if err := r.h.OnRead(l.buf[:n], time.Now()); err != nil {
		r.detach(err)
	}
}

func (l *loop) runTicks(now time.Time) {
	l.mu.Lock()
	if l.nTick == 0 {
		l.mu.Unlock()
		return
	}
	l.ticks = l.ticks[:0]
	for _, s := range l.slots {
		if s.reg != nil && s.reg.tick {
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

// epollPoll is epoll_wait(2) with a zero timeout, without the runtime's
// entersyscall/exitsyscall (it never waits; see rawRead). epoll_pwait
// with no signal mask is epoll_wait, and exists on every architecture.
func epollPoll(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
