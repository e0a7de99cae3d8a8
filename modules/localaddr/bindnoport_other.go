//go:build !linux

package localaddr

import "syscall"

// BindNoPort is a no-op off Linux (see bindnoport_linux.go).
func BindNoPort(_, _ string, _ syscall.RawConn) error { return nil }
