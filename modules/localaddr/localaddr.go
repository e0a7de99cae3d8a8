// Package localaddr is the source addresses of a load generator's dials:
// k6's localIPs format (k6 docs, the --local-ips option) expanded into a
// List, how an address is handed out (per client, or per VU as k6 does),
// and the socket option that lets many connections share one address
// (BindNoPort). k6/http (engine/jshost/k6http), the scenario key
// target.local_ips (modules/scenario) and the relay client
// (modules/relayclient) share it; it imports nothing of either side.
package localaddr

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// MaxAddrs bounds a list once expanded: it is held in memory, and more
// source addresses than clients or VUs spread nothing further.
const MaxAddrs = 1 << 16

// List is a localIPs value expanded, in order: the source addresses dials
// are made from, client i from At(i), VU n from ForVU(n).
//
// Why: every connection from one source address to one relay address needs
// its own ephemeral port, and connect() searches the port range for a free
// one. At 19,000 connections to one loopback relay most of the 28,232 ports
// of Linux's default range are taken, each connect cost the runner ~0.3 ms
// in that search (docs/benchmarks.md, "The connect itself"), and reconnects
// make it worse. More source addresses give each its own range.
type List []netip.Addr

// At is client i's source address ("" for an empty list: the kernel
// chooses): the addresses are handed out in order, round robin.
func (l List) At(i int) string {
	if len(l) == 0 || i < 0 {
		return ""
	}
	return l[i%len(l)].String()
}

// ForVU is the source address of VU id's dials as k6 v1.x hands localIPs
// out: round robin over the list by the instance-local VU id, VU 1 taking
// the first address, VU n address n-1 (mod the list's length); id 0 (the
// VU of setup, teardown and handleSummary) takes the first too. The zero
// Addr for an empty list (the kernel chooses).
func (l List) ForVU(id uint64) netip.Addr {
	if len(l) == 0 {
		return netip.Addr{}
	}
	if id > 0 {
		id--
	}
	return l[id%uint64(len(l))]
}

// Bind makes d dial from a, the port left to connect() (BindNoPort); the
// zero Addr leaves d as it is.
func Bind(d *net.Dialer, a netip.Addr) {
	if !a.IsValid() {
		return
	}
	d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0))
	d.Control = BindNoPort
}

// Parse reads k6's localIPs format (docs: the --local-ips option):
// comma-separated IPs, inclusive ranges "first-last" and CIDRs; an IPv4
// CIDR of more than 2 addresses leaves out its network and broadcast
// addresses. The addresses must exist on the machine; this does not check.
func Parse(s string) (List, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out List
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
		if len(out) > MaxAddrs {
			return nil, fmt.Errorf("has more than %d addresses", MaxAddrs)
		}
	}
	return out, nil
}

func appendRange(out List, part string) (List, error) {
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
		if a == last || len(out) > MaxAddrs {
			return out, nil
		}
	}
}

func appendCIDR(out List, part string) (List, error) {
	p, err := netip.ParsePrefix(part)
	if err != nil {
		return nil, fmt.Errorf("CIDR %q: %v", part, err)
	}
	p = p.Masked()
	bits := p.Addr().BitLen() - p.Bits()
	if bits > 16 {
		return nil, fmt.Errorf("CIDR %q has more than %d addresses", part, MaxAddrs)
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
