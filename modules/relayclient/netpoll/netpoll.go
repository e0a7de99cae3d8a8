// Package netpoll reads many sockets from a few epoll loops instead of a
// goroutine per socket.
//
// Hand-written because Go's netpoller costs, per frame that arrives alone,
// a wake-up, a goroutine park and unpark, the read and a second read that
// returns EAGAIN: BenchmarkDeliveryPath/spaced (modules/relayclient) spent
// ~8.5 of ~15 µs per delivered event in the kernel that way, and a 5,000-
// member channel delivers ~70,000 events a second (issue 16). Here each loop
// is one goroutine over its own level-triggered epoll set: it parks until
// the set is ready (Go's poller waits on the epoll descriptor, so a batch
// costs one wake-up and no thread hand-off), takes a batch with a
// non-blocking epoll_wait, and does one read per ready socket into the
// loop's shared buffer, handed to the socket's Handler. Sockets are taken
// out of Go's poller first (Detach, Socket): left in it, they would wake it
// for every frame as well.
//
// It is Linux-only (level-triggered epoll); elsewhere New returns
// ErrUnavailable and callers keep a reader goroutine per socket.
package netpoll

import (
	"errors"
	"runtime"
	"time"
)

// ErrUnavailable is New's error where there is no epoll.
var ErrUnavailable = errors.New("netpoll: epoll is not available on this system")

// Handler receives one socket's input. All its methods run on the socket's
// loop goroutine, one at a time, never after OnDetach; they are shared with
// every other socket of that loop, so they must not block.
type Handler interface {
	// OnRead gets the bytes one read returned, and when the read returned.
	// b is the loop's buffer: valid only during the call. A non-nil error
	// ends the registration (OnDetach gets it).
	OnRead(b []byte, at time.Time) error
	// OnTick is called about every Options.Tick; a non-nil error ends the
	// registration (for idle timeouts without a timer per socket).
	OnTick(now time.Time) error
	// OnDetach is called once, last: the socket has left the epoll set and
	// nothing of the poller refers to it any more, so the handler may now
	// close it. err says why: the read's error (io.EOF at the end of the
	// stream), OnRead's or OnTick's error, or nil after Remove.
	OnDetach(err error)
}

// TickChooser is a Handler that says, once when it is added, whether it
// wants OnTick at all. Handlers that do not implement it get ticks. A loop
// with no ticking socket skips its tick: visiting every registration every
// 100 ms for an OnTick that returns at once was 5 % of a 3,000-human run's
// CPU in its hold (humans set no read idle timeout).
type TickChooser interface {
	WantsTicks() bool
}

// Options size a Poller. Zero values take the defaults.
type Options struct {
	Loops   int           // epoll loops (goroutines while sockets are registered); default GOMAXPROCS
	BufSize int           // each loop's read buffer; default 128 KiB
	Tick    time.Duration // how often OnTick runs; default 100 ms
}

func (o *Options) withDefaults() {
	if o.Loops <= 0 {
		o.Loops = runtime.GOMAXPROCS(0)
	}
	if o.BufSize <= 0 {
		o.BufSize = 128 << 10
	}
	if o.Tick <= 0 {
		o.Tick = 100 * time.Millisecond
	}
}
