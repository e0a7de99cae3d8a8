package scenario

import (
	"fmt"
	"net/netip"
	"strings"
)

// MaxLocalIPs bounds target.local_ips once expanded: the list is held in
// memory, and more source addresses than clients spread nothing further.
const MaxLocalIPs = 1 << 16

// LocalIPs is target.local_ips expanded: the source addresses the clients'
// WebSocket connections are made from, client i from At(i).
//
// Why: every connection from one source address to one relay address needs
// its own ephemeral port, and connect() searches the port range for a free
// one. At 19,000 connections to one loopback relay most of the 28,232 ports
// of Linux's default range are taken, each connect cost the runner ~0.3 ms
// in that search (docs/benchmarks.md, "The connect itself"), and reconnects
// make it worse. More source addresses give each its own range.
type LocalIPs []netip.Addr

// At is client i's source address ("" without local_ips): the addresses
// are handed out in order, as k6 gives its localIPs out to VUs.
func (l LocalIPs) At(i int) string {
	if len(l) == 0 || i < 0 {
		return ""
	}
	return l[i%len(l)].String()
}

// ParseLocalIPs reads k6's localIPs format (docs: the --local-ips option):
// comma-separated IPs, inclusive ranges "first-last" and CIDRs; an IPv4
// CIDR of more than 2 addresses leaves out its network and broadcast
// addresses. The addresses must exist on the machine; this does not check.
func ParseLocalIPs(s string) (LocalIPs, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out LocalIPs
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%q has an empty entry", s)
		}
		var err error
		switch {
		case strings.Contains(part, "/"):
			out, err = appendCIDR(out, part)
		case strings.Contains(part, "-"):
			out, err = appendRange(out, part)
		default:
			var a netip.Addr
			if a, err = netip.ParseAddr(part); err != nil {
				err = fmt.Errorf("%q is not an IP, a range or a CIDR", part)
			} else {
				out = append(out, a)
			}
		}
		if err != nil {
			return nil, err
		}
		if len(out) > MaxLocalIPs {
			return nil, fmt.Errorf("has more than %d addresses", MaxLocalIPs)
		}
	}
	return out, nil
}

func appendRange(out LocalIPs, part string) (LocalIPs, error) {
	lo, hi, _ := strings.Cut(part, "-")
	first, err1 := netip.ParseAddr(strings.TrimSpace(lo))
	last, err2 := netip.ParseAddr(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("range %q: want first-last, two IPs", part)
	}
	if first.Is4() != last.Is4() || last.Less(first) {
		return nil, fmt.Errorf("range %q: its last address is before its first or of another family", part)
	}
	for a := first; ; a = a.Next() {
		out = append(out, a)
		if a == last || len(out) > MaxLocalIPs {
			return out, nil
		}
	}
}

func appendCIDR(out LocalIPs, part string) (LocalIPs, error) {
	p, err := netip.ParsePrefix(part)
	if err != nil {
		return nil, fmt.Errorf("CIDR %q: %v", part, err)
	}
	p = p.Masked()
	bits := p.Addr().BitLen() - p.Bits()
	if bits > 16 {
		return nil, fmt.Errorf("CIDR %q has more than %d addresses", part, MaxLocalIPs)
	}
	n := 1 << bits
	a := p.Addr()
	// k6: an IPv4 network of more than 2 addresses leaves out its first
	// (the network) and its last (broadcast).
	skipEnds := p.Addr().Is4() && n > 2
	for i := 0; i < n; i, a = i+1, a.Next() {
		if skipEnds && (i == 0 || i == n-1) {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}
