package vudialer

import (
	"net"
	"testing"
)

// Target maps every dial address a script can produce through the hosts
// and blockHostnames options a script can set: it never panics, and what
// it returns is a "host:port" a dialer can split.
func FuzzTarget(f *testing.F) {
	f.Add("ws.test:80", "ws.test", "127.0.0.1:8080", "*.test")
	f.Add("A.B.Test:443", "*.b.test", "[::1]", "*")
	f.Add("[::1]:80", "::1", "127.0.0.1", "")
	f.Add("x:1", "x:1", "[fd00::1]:9", "x")
	f.Fuzz(func(t *testing.T, addr, key, value, blocked string) {
		if CheckHostValue(value) != nil {
			return // refused when the options are read
		}
		r := &Rules{Hosts: map[string]string{key: value}}
		if CheckPattern(blocked) == nil {
			r.Blocked = []string{blocked}
		}
		to, err := r.Target(addr)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(to); err != nil {
			t.Fatalf("Target(%q) with hosts {%q: %q} = %q: %v", addr, key, value, to, err)
		}
	})
}
