//go:build !linux

package netpoll

import (
	"errors"
	"net"
)

// Poller is unavailable here: New always fails.
type Poller struct{}

// Reg is a registration (never made here).
type Reg struct{}

// New returns ErrUnavailable: there is no epoll on this system.
func New(Options) (*Poller, error) { return nil, ErrUnavailable }

// Socket is a socket outside Go's poller (never made here).
type Socket struct{ net.Conn }

// ErrClosed is a use of a closed Socket.
var ErrClosed = errors.New("netpoll: use of a closed socket")

// Detach returns ErrUnavailable.
func Detach(*net.TCPConn) (*Socket, error) { return nil, ErrUnavailable }

// Add is never reached (New fails).
func (p *Poller) Add(*Socket, Handler) (*Reg, error) { return nil, ErrUnavailable }

// Close does nothing.
func (p *Poller) Close() error { return nil }

// Remove does nothing.
func (r *Reg) Remove() {}

// Behind is false: there is no loop.
func (r *Reg) Behind() bool { return false }

// Fd is -1: there are no detached sockets here.
func (s *Socket) Fd() int { return -1 }
