package localaddr

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// BindNoPort lets a dial with a local address leave the port to connect():
// bind(ip, 0) alone takes a port no other socket of that address may
// share, whatever the destination; with IP_BIND_ADDRESS_NO_PORT the kernel
// picks it at connect time by the whole 4-tuple (ip(7)), so a source
// address serves a port range per destination. Best effort: without it the
// dial still works.
func BindNoPort(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	})
}
