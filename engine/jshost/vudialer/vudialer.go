// Package vudialer is the dialer of one VU: the k6 options that govern
// every connection a VU opens, whichever module opens it. k6 v1.x gives
// each VU one dialer (lib/netext's Dialer in lib.State) that k6/http,
// k6/ws and k6/experimental/websockets all dial through; k6/http and
// k6/experimental/websockets build theirs here from the same Rules, so a
// rule cannot hold for one and not the other.
//
// A dial, in k6's order: blockHostnames refuses a host name before
// anything is looked up (an IP literal is never matched), hosts replaces
// "name:port", then "name", by its address (a "*.domain" key matches
// subdomains), a name (not an IP literal; also a name hosts mapped to) is
// resolved to one address by the run's resolver (the dns option,
// dnsresolve), blacklistIPs refuses the address about to be connected,
// localIPs binds the source address; the bytes moved are counted
// (data_sent, data_received).
//
// blacklistIPs is checked in the socket's Control hook, before connect, so
// it holds for whatever address is connected (also without a resolver,
// where Go's dialer resolves and may try several).
package vudialer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/buzzload/buzzload/modules/localaddr"
)

// Rules are the options every dial of a VU obeys, validated once a run
// (k6http.ParseOptions).
type Rules struct {
	// Hosts is k6's hosts: "name", "name:port" or a "*"-led pattern →
	// "ip[:port]" (or a name, resolved as usual). Keys match case-insensitively.
	Hosts map[string]string
	// Blocked is blockHostnames (CheckPattern's patterns).
	Blocked []string
	// Blacklist is blacklistIPs.
	Blacklist []netip.Prefix
}

// BlacklistedIPError is a dial refused by blacklistIPs; its text is k6's.
type BlacklistedIPError struct {
	IP    netip.Addr
	Range netip.Prefix
}

func (e *BlacklistedIPError) Error() string {
	return fmt.Sprintf("IP (%s) is in a blacklisted range (%s)", e.IP, e.Range)
}

// BlockedHostError is a dial refused by blockHostnames; its text is k6's.
type BlockedHostError struct {
	Host, Pattern string
}

func (e *BlockedHostError) Error() string {
	return fmt.Sprintf("hostname (%s) is in a blocked pattern (%s)", e.Host, e.Pattern)
}

// Target is where a dial to addr ("host:port") goes: the blockHostnames
// check and the hosts mapping (blacklistIPs needs the resolved address:
// Dialer checks it).
func (r *Rules) Target(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if len(r.Blocked) > 0 {
		if _, ipErr := netip.ParseAddr(host); ipErr != nil {
			if p, ok := Match(r.Blocked, host); ok {
				return "", &BlockedHostError{Host: host, Pattern: p}
			}
		}
	}
	if len(r.Hosts) == 0 {
		return addr, nil
	}
	keys := make([]string, 0, len(r.Hosts))
	for k := range r.Hosts {
		keys = append(keys, k)
	}
	k, ok := Match(keys, addr)
	if !ok {
		if k, ok = Match(keys, host); !ok {
			return addr, nil
		}
	}
	to := r.value(k)
	if h, p, err := net.SplitHostPort(to); err == nil {
		return net.JoinHostPort(strings.Trim(h, "[]"), p), nil
	}
	return net.JoinHostPort(strings.Trim(to, "[]"), port), nil
}

// value is Hosts' value for the matched key (Match lowers case).
func (r *Rules) value(k string) string {
	if v, ok := r.Hosts[k]; ok {
		return v
	}
	for key, v := range r.Hosts {
		if strings.EqualFold(key, k) {
			return v
		}
	}
	return ""
}

// blacklisted is the blacklistIPs range holding the address "ip:port", if any.
func (r *Rules) blacklisted(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil // not an IP address: nothing to compare
	}
	ip := ap.Addr().Unmap()
	for _, p := range r.Blacklist {
		if p.Contains(ip) {
			return &BlacklistedIPError{IP: ip, Range: p}
		}
	}
	return nil
}

// Match finds the pattern that matches s, case-insensitively, as k6
// matches hosts and blockHostnames: an exact pattern wins, else the
// longest "*X" pattern whose X ends s ("*.test" matches "a.b.test", not
// "test"; "*" matches everything). It returns the pattern, lower case.
func Match(patterns []string, s string) (string, bool) {
	s = strings.ToLower(s)
	best, found := "", false
	for _, p := range patterns {
		p = strings.ToLower(p)
		if p == s {
			return p, true
		}
		if rest, ok := strings.CutPrefix(p, "*"); ok && strings.HasSuffix(s, rest) && (!found || len(p) > len(best)) {
			best, found = p, true
		}
	}
	return best, found
}

// CheckPattern validates a blockHostnames pattern by k6's rule: an
// optional leading "*" or "*.", then dot-separated labels of letters,
// digits and inner hyphens.
func CheckPattern(p string) error {
	s := p
	if rest, ok := strings.CutPrefix(s, "*"); ok {
		s = strings.TrimPrefix(rest, ".")
	}
	if s != "" && !labels(s, func(l string) bool { return l[0] != '-' && l[len(l)-1] != '-' }, "") {
		return fmt.Errorf("invalid hostname pattern '%s'", p)
	}
	return nil
}

// CheckHostValue validates a hosts value: an IP or a host name (labels of
// letters, digits, hyphens and underscores), either with an optional
// ":port" (an IPv6 address with a port in brackets). A value Target could
// not turn into a dial address fails here, when the options are read, not
// at every dial.
func CheckHostValue(v string) error {
	h, p, err := net.SplitHostPort(v)
	if err != nil {
		h = v
	} else if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("bad port %q", p)
	}
	if in, ok := strings.CutPrefix(h, "["); ok {
		h, ok = strings.CutSuffix(in, "]")
		if _, err := netip.ParseAddr(h); !ok || err != nil {
			return errBadHostValue
		}
		return nil
	}
	if _, err := netip.ParseAddr(h); err == nil || labels(h, nil, "_") {
		return nil
	}
	return errBadHostValue
}

var errBadHostValue = errors.New("want an IP or host name with an optional :port")

// labels says whether s is dot-separated non-empty labels of letters,
// digits, hyphens and the characters in extra, each also passing ok (if
// given).
func labels(s string, ok func(label string) bool, extra string) bool {
	for _, l := range strings.Split(s, ".") {
		if l == "" || ok != nil && !ok(l) {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || strings.ContainsRune(extra, c)) {
				return false
			}
		}
	}
	return true
}

// ParseBlacklist reads blacklistIPs: CIDRs ("10.0.0.0/8", "fd00::/8");
// host bits are dropped, as k6 does ("127.0.0.1/8" is 127.0.0.0/8).
func ParseBlacklist(cidrs []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("invalid CIDR address: %s", c)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Resolver gives the one address a dial to a host name connects to
// (dnsresolve.Resolver, the run's).
type Resolver interface {
	Lookup(ctx context.Context, host string) (netip.Addr, error)
}

// Dialer dials for one VU by its Rules, from its localIPs address.
type Dialer struct {
	rules *Rules
	res   Resolver
	nd    net.Dialer
	count func(sent, recv int64)
}

// New builds VU's dialer: rules (nil: none), the run's resolver res (nil:
// Go's dialer resolves), the source address local (the zero Addr: the
// kernel's choice) and count, told the bytes each connection moves.
func New(rules *Rules, res Resolver, local netip.Addr, count func(sent, recv int64)) *Dialer {
	if rules == nil {
		rules = &Rules{}
	}
	d := &Dialer{rules: rules, res: res, count: count, nd: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
	localaddr.Bind(&d.nd, local)
	if len(rules.Blacklist) > 0 {
		// The address about to be connected, after resolution, whichever of
		// a name's addresses the dial tries.
		bind := d.nd.Control
		d.nd.Control = func(network, address string, c syscall.RawConn) error {
			if err := rules.blacklisted(address); err != nil {
				return err
			}
			if bind != nil {
				return bind(network, address, c)
			}
			return nil
		}
	}
	return d
}

// DialContext dials addr through the rules. A refusal is the bare
// BlockedHostError or BlacklistedIPError, and a failed lookup the
// resolver's error, as k6's dialer returns them.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	to, err := d.rules.Target(addr)
	if err != nil {
		return nil, err
	}
	if d.res != nil {
		if to, err = resolve(ctx, d.res, to); err != nil {
			return nil, err
		}
	}
	c, err := d.nd.DialContext(ctx, network, to)
	if err != nil {
		var be *BlacklistedIPError
		if errors.As(err, &be) {
			return nil, be
		}
		return nil, err
	}
	if d.count == nil {
		return c, nil
	}
	return CountingConn(c, d.count), nil
}

// resolve turns "name:port" into "ip:port" by res; an IP literal stays.
func resolve(ctx context.Context, res Resolver, hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return hostport, nil
	}
	ip, err := res.Lookup(ctx, host)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// CountingConn wraps c so that it reports the bytes it moves to count
// (data_sent, data_received), TLS records included, as k6's dialer counts.
func CountingConn(c net.Conn, count func(sent, recv int64)) net.Conn {
	return &countingConn{Conn: c, count: count}
}

type countingConn struct {
	net.Conn
	count func(sent, recv int64)
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.count(0, int64(n))
	}
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.count(int64(n), 0)
	}
	return n, err
}
