//go:build !linux

package netpoll

import "syscall"

// Poller is unavailable here: New always fails.
type Poller struct{}

// Reg is a registration (never made here).
type Reg struct{}

// New returns ErrUnavailable: there is no epoll on this system.
func New(Options) (*Poller, error) { return nil, ErrUnavailable }

// Add is never reached (New fails).
func (p *Poller) Add(syscall.RawConn, Handler) (*Reg, error) { return nil, ErrUnavailable }

// Close does nothing.
func (p *Poller) Close() error { return nil }

// Remove does nothing.
func (r *Reg) Remove() {}
