//go:build !linux

package relayclient

import "syscall"

// bindNoPort is a no-op off Linux (see bindnoport_linux.go).
func bindNoPort(_, _ string, _ syscall.RawConn) error { return nil }
