package vudialer

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestMatchAsK6(t *testing.T) {
	pats := []string{"exact.test", "*.test", "*.deep.test", "*suffix.io"}
	for _, c := range []struct {
		s, want string
		ok      bool
	}{
		{"exact.test", "exact.test", true}, // exact wins over *.test
		{"EXACT.Test", "exact.test", true}, // case-insensitive
		{"a.test", "*.test", true},
		{"a.b.test", "*.test", true},
		{"x.deep.test", "*.deep.test", true}, // the longest wildcard
		{"test", "", false},                  // *.test needs a subdomain
		{"suffix.io", "*suffix.io", true},    // "*X" is a plain suffix
		{"mysuffix.io", "*suffix.io", true},
		{"other.io", "", false},
		{"a.test:80", "", false}, // a port is part of the string
	} {
		got, ok := Match(pats, c.s)
		if got != c.want || ok != c.ok {
			t.Errorf("Match(%q) = %q, %v; want %q, %v", c.s, got, ok, c.want, c.ok)
		}
	}
	if p, ok := Match([]string{"*"}, "anything.at.all"); !ok || p != "*" {
		t.Errorf(`"*" should match everything, got %q %v`, p, ok)
	}
}

func TestTargetBlocksThenMapsHosts(t *testing.T) {
	r := &Rules{
		Hosts: map[string]string{
			"ws.test":       "127.0.0.1:9001",
			"api.test:8443": "127.0.0.2:1443",
			"*.wild.test":   "127.0.0.3",
			"Name.Test":     "other.local",
			"v6.test":       "::1",
		},
		Blocked: []string{"*.blocked.test", "ws.test"},
	}
	for _, c := range []struct{ in, want, err string }{
		{"ws.test:80", "", "hostname (ws.test) is in a blocked pattern (ws.test)"}, // blocked before hosts
		{"a.blocked.test:443", "", "hostname (a.blocked.test) is in a blocked pattern (*.blocked.test)"},
		{"api.test:8443", "127.0.0.2:1443", ""}, // name:port first
		{"api.test:80", "api.test:80", ""},      // only that port is mapped
		{"x.wild.test:8080", "127.0.0.3:8080", ""},
		{"name.test:1", "other.local:1", ""},
		{"v6.test:5", "[::1]:5", ""},
		{"127.0.0.1:80", "127.0.0.1:80", ""}, // an IP is never a blocked name
		{"free.test:80", "free.test:80", ""},
	} {
		got, err := r.Target(c.in)
		if c.err != "" {
			var be *BlockedHostError
			if err == nil || err.Error() != c.err || !errors.As(err, &be) {
				t.Errorf("Target(%q) err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Target(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestCheckPatternAndParseBlacklist(t *testing.T) {
	for _, ok := range []string{"*", "*.test", "*test", "a-b.example.com", "localhost"} {
		if err := CheckPattern(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"a.*.test", "-a.test", "a..test", "a.test:80", "a_b.test"} {
		if err := CheckPattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	got, err := ParseBlacklist([]string{"127.0.0.1/8", "fd00::/8"})
	if err != nil || got[0].String() != "127.0.0.0/8" || got[1].String() != "fd00::/8" {
		t.Fatalf("ParseBlacklist = %v, %v", got, err)
	}
	if _, err := ParseBlacklist([]string{"10.0.0.0"}); err == nil || err.Error() != "invalid CIDR address: 10.0.0.0" {
		t.Fatalf("a bare IP: %v", err)
	}
}

// The blacklist is checked on the address about to be connected, after
// the hosts mapping.
func TestDialerRefusesBlacklistedAddress(t *testing.T) {
	port := closingListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	bl, _ := ParseBlacklist([]string{"127.0.0.0/8", "::1/128"})
	r := &Rules{Hosts: map[string]string{"srv.test": "127.0.0.1"}, Blacklist: bl}
	d := New(r, nil, netip.Addr{}, nil)
	// No name here goes to a resolver (tests stay on loopback): a hosts
	// mapping and a literal.
	for _, addr := range []string{"srv.test:" + port, "127.0.0.1:" + port} {
		_, err := d.DialContext(ctx, "tcp", addr)
		var be *BlacklistedIPError
		if !errors.As(err, &be) {
			t.Fatalf("%s: err %v, want a BlacklistedIPError", addr, err)
		}
		if addr == "srv.test:"+port && err.Error() != "IP (127.0.0.1) is in a blacklisted range (127.0.0.0/8)" {
			t.Fatalf("%s: %q is not k6's text", addr, err)
		}
	}
	var sent, recv int64
	ok := New(&Rules{Hosts: map[string]string{"srv.test": "127.0.0.1"}}, nil, netip.Addr{}, func(s, r int64) { sent += s; recv += r })
	c, err := ok.DialContext(ctx, "tcp", "srv.test:"+port)
	if err != nil {
		t.Fatalf("without a blacklist: %v", err)
	}
	_, _ = c.Write([]byte("hi"))
	c.Close()
	if sent != 2 {
		t.Fatalf("counted %d bytes sent, want 2", sent)
	}
}

func TestCheckHostValue(t *testing.T) {
	for _, ok := range []string{"127.0.0.1", "127.0.0.1:8080", "::1", "[::1]:80", "relay.internal", "relay-1.example.com:443", "svc_a.local"} {
		if err := CheckHostValue(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0[0", "two words", "x..y", ".x", "x.", "a.test:0", "a.test:65536", "a.test:http", "[::1"} {
		if err := CheckHostValue(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// recordingResolver answers every name with addr and records the names asked.
type recordingResolver struct {
	addr  netip.Addr
	asked []string
}

func (r *recordingResolver) Lookup(_ context.Context, host string) (netip.Addr, error) {
	r.asked = append(r.asked, host)
	if !r.addr.IsValid() {
		return netip.Addr{}, errors.New("lookup " + host + ": no such host")
	}
	return r.addr, nil
}

// k6's order with a resolver: blockHostnames before any lookup, hosts
// before the resolver (a name hosts maps to is resolved; an IP it maps to
// is not), IP literals never looked up, blacklistIPs on the resolved address.
func TestDialResolvesNamesAfterHosts(t *testing.T) {
	// Should the resolver not be used, Go's must not query anyone.
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	defer func() { net.DefaultResolver = old }()
	port := closingListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := &recordingResolver{addr: netip.MustParseAddr("127.0.0.1")}
	rules := &Rules{Hosts: map[string]string{"alias.test": "real.test", "ip.test": "127.0.0.1"}, Blocked: []string{"blocked.test"}}
	d := New(rules, res, netip.Addr{}, nil)
	for _, addr := range []string{"name.test:" + port, "alias.test:" + port, "ip.test:" + port, "127.0.0.1:" + port} {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		c.Close()
	}
	if _, err := d.DialContext(ctx, "tcp", "blocked.test:"+port); err == nil {
		t.Fatal("blocked.test dialled")
	}
	if got := strings.Join(res.asked, ","); got != "name.test,real.test" {
		t.Fatalf("looked up %q, want name.test,real.test (hosts first, no IP, nothing blocked)", got)
	}
	bl, _ := ParseBlacklist([]string{"127.0.0.0/8"})
	d = New(&Rules{Blacklist: bl}, res, netip.Addr{}, nil)
	var be *BlacklistedIPError
	if _, err := d.DialContext(ctx, "tcp", "name.test:"+port); !errors.As(err, &be) {
		t.Fatalf("the resolved address is checked against blacklistIPs: %v", err)
	}
	d = New(nil, &recordingResolver{}, netip.Addr{}, nil)
	if _, err := d.DialContext(ctx, "tcp", "none.test:"+port); err == nil || err.Error() != "lookup none.test: no such host" {
		t.Fatalf("a failed lookup is the resolver's bare error: %v", err)
	}
}

// closingListener listens on loopback, accepting and closing every
// connection until the test ends; it returns the port.
func closingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
