//go:build linux

package netpoll

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket is a connected socket taken out of Go's own poller (Detach), so
// that only a loop's epoll wakes for its input: a socket left in Go's
// poller too would wake Go's netpoller for every frame as well, for
// nothing (measured: no gain over a goroutine per socket that way). It is a
// net.Conn for writing (gorilla writes through it): a write that finds the
// send buffer full waits in poll(2) until its deadline. Reads are the
// loop's; Read fails.
//
// The descriptor is closed only under the write lock, after it has left the
// epoll set, and every use of it holds the read lock: a reused descriptor
// number is never read, written or deregistered by mistake.
type Socket struct {
	fd      int
	local   net.Addr
	remote  net.Addr
	mu      sync.RWMutex // RLock: the fd is in use; Lock: closing it
	closed  atomic.Bool
	epfd    int // the epoll set it is in (-1: none); guarded by mu
	wdl     atomic.Int64
	closeMu sync.Once
}

// ErrClosed is a use of a closed Socket.
var ErrClosed = errors.New("netpoll: use of a closed socket")

// Detach takes tc's socket out of Go's poller: it duplicates the
// descriptor and closes tc (Go deregisters and closes the original
// number). tc must not be used afterwards.
func Detach(tc *net.TCPConn) (*Socket, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd, derr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("dup", derr)
	}
	s := &Socket{fd: nfd, local: tc.LocalAddr(), remote: tc.RemoteAddr(), epfd: -1}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	_ = tc.Close()
	return s, nil
}

// Read is not for callers: the loop reads a registered Socket.
func (s *Socket) Read([]byte) (int, error) {
	return 0, errors.New("netpoll: a detached socket is read by its loop")
}

// read is the loop's one read.
func (s *Socket) read(b []byte) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	n, err := rawRead(s.fd, b)
	if err == unix.EINTR {
		err = unix.EAGAIN
	}
	return n, err
}

// rawRead is read(2) without the runtime's entersyscall/exitsyscall: the
// socket is non-blocking, so the call never waits. Through unix.Read each
// read marked the loop's P as in a syscall; on this VM (slow syscalls) the
// runtime's monitor then found Ps in syscalls often enough to retake them
// (a thread hand-off and futex wake-ups) and to keep polling every 20 µs,
// whose sleeps and wake-ups were ~6 % of a 500-human fan-out run's CPU.
func rawRead(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Write writes all of b by its deadline. The read lock is held for each
// write syscall, not while waiting for room: a Close or Remove waiting for
// the write lock blocks new readers, so a writer parked in poll(2) under
// the read lock would stall the loop's reads of every socket it serves
// until the write deadline (seen as 10–15 s late OKs and deliveries when
// thousands of humans closed at once).
func (s *Socket) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := s.write(b[done:])
		if n > 0 {
			done += n
		}
		switch err {
		case nil, unix.EINTR:
			continue
		case unix.EAGAIN:
			if werr := s.waitWritable(); werr != nil {
				return done, s.opErr("write", werr)
			}
		case net.ErrClosed:
			return done, s.opErr("write", net.ErrClosed)
		default:
			return done, s.opErr("write", os.NewSyscallError("write", err))
		}
	}
	return done, nil
}

// write is one non-blocking write under the read lock.
func (s *Socket) write(b []byte) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return 0, net.ErrClosed
	}
	return unix.Write(s.fd, b)
}

// waitWritable waits for room in the send buffer until the write deadline
// (the thread blocks: only when the peer does not read). It holds no lock:
// Close shuts the socket down before closing it, which ends the wait, and
// the next write sees it closed.
func (s *Socket) waitWritable() error {
	for {
		if s.closed.Load() {
			return net.ErrClosed
		}
		ms := -1
		if d := s.wdl.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			ms = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return os.NewSyscallError("poll", err)
		}
		return nil // writable, or an error the next write reports
	}
}

func (s *Socket) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: s.local, Addr: s.remote, Err: err}
}

// Close deregisters the socket if it is still in an epoll set, then closes
// it; a write waiting for room is woken first (shutdown). Idempotent.
func (s *Socket) Close() error {
	s.closeMu.Do(func() {
		s.closed.Store(true)
		_ = unix.Shutdown(s.fd, unix.SHUT_RDWR) // still open: no lock held by us yet
		s.mu.Lock()
		if s.epfd >= 0 {
			_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
			s.epfd = -1
		}
		_ = unix.Close(s.fd)
		s.mu.Unlock()
	})
	return nil
}

// register adds the socket to epfd with ev (under the lock, so the
// descriptor is open).
func (s *Socket) register(epfd int, ev *unix.EpollEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, s.fd, ev); err != nil {
		return err
	}
	s.epfd = epfd
	return nil
}

// deregister takes the socket out of its epoll set (if still open and in it).
func (s *Socket) deregister() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epfd >= 0 && !s.closed.Load() {
		_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
	}
	s.epfd = -1
}

// Fd is the descriptor number (diagnostics and tests), -1 once closed.
func (s *Socket) Fd() int {
	if s.closed.Load() {
		return -1
	}
	return s.fd
}

// LocalAddr implements net.Conn.
func (s *Socket) LocalAddr() net.Addr { return s.local }

// RemoteAddr implements net.Conn.
func (s *Socket) RemoteAddr() net.Addr { return s.remote }

// SetDeadline sets the write deadline (reads have none: the loop's).
func (s *Socket) SetDeadline(t time.Time) error { return s.SetWriteDeadline(t) }

// SetReadDeadline does nothing: idle timeouts are the handler's (OnTick).
func (s *Socket) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline bounds every later write.
func (s *Socket) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		s.wdl.Store(0)
	} else {
		s.wdl.Store(t.UnixNano())
	}
	return nil
}
