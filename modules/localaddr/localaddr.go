// Package localaddr is the source addresses of a load generator's dials:
// k6's localIPs format (k6 docs, the --local-ips option) expanded into a
// List, how an address is handed out (per client, or per VU as k6 does),
// and the socket option that lets many connections share one address
// (BindNoPort). k6/http (engine/jshost/k6http), the scenario key
// target.local_ips (modules/scenario) and the relay client
// (modules/relayclient) share it; it imports nothing of either side.
package localaddr

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"
)

// List is a localIPs value, in order: the source addresses dials are made
// from, client i from At(i), VU n from ForVU(n). It is held as its ranges,
// not expanded, so a /8 or an IPv6 /64 costs a few bytes as in k6 (whose
// pool has no size limit); a list of 2^64 addresses or more is treated as
// 2^64 − 1 long, which no client or VU index reaches.
//
// Why: every connection from one source address to one relay address needs
// its own ephemeral port, and connect() searches the port range for a free
// one. At 19,000 connections to one loopback relay most of the 28,232 ports
// of Linux's default range are taken, each connect cost the runner ~0.3 ms
// in that search (docs/benchmarks.md, "The connect itself"), and reconnects
// make it worse. More source addresses give each its own range.
type List struct {
	blocks []block
	total  uint64 // sum of the blocks' n, saturating
}

// block is n consecutive addresses from first.
type block struct {
	first netip.Addr
	n     uint64
}

// Len is the number of addresses (saturating at 2^64 − 1).
func (l List) Len() uint64 { return l.total }

func (l *List) add(first netip.Addr, n uint64) {
	l.blocks = append(l.blocks, block{first, n})
	if l.total+n < l.total {
		l.total = math.MaxUint64
	} else {
		l.total += n
	}
}

// nth is the list's address k (k < Len()).
func (l List) nth(k uint64) netip.Addr {
	for _, b := range l.blocks {
		if k < b.n {
			return offset(b.first, k)
		}
		k -= b.n
	}
	return netip.Addr{}
}

// At is client i's source address ("" for an empty list: the kernel
// chooses): the addresses are handed out in order, round robin.
func (l List) At(i int) string {
	if l.total == 0 || i < 0 {
		return ""
	}
	return l.nth(uint64(i) % l.total).String()
}

// ForVU is the source address of VU id's dials as k6 v1.x hands localIPs
// out: round robin over the list by the instance-local VU id, VU 1 taking
// the first address, VU n address n-1 (mod the list's length); id 0 (the
// VU of setup, teardown and handleSummary) takes the first too. The zero
// Addr for an empty list (the kernel chooses).
func (l List) ForVU(id uint64) netip.Addr {
	if l.total == 0 {
		return netip.Addr{}
	}
	if id > 0 {
		id--
	}
	return l.nth(id % l.total)
}

// offset is a + k, within a's family (the callers stay inside a range).
func offset(a netip.Addr, k uint64) netip.Addr {
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	lo2 := lo + k
	if lo2 < lo {
		hi++
	}
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo2)
	r := netip.AddrFrom16(b)
	if a.Is4() {
		r = r.Unmap()
	}
	return r.WithZone(a.Zone())
}

// span is last − first + 1, saturating at 2^64 − 1 (first ≤ last, one family).
func span(first, last netip.Addr) uint64 {
	f, l := first.As16(), last.As16()
	fh, fl := binary.BigEndian.Uint64(f[:8]), binary.BigEndian.Uint64(f[8:])
	lh, ll := binary.BigEndian.Uint64(l[:8]), binary.BigEndian.Uint64(l[8:])
	dl := ll - fl
	dh := lh - fh
	if ll < fl {
		dh--
	}
	if dh != 0 || dl == math.MaxUint64 {
		return math.MaxUint64
	}
	return dl + 1
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
	var out List
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return List{}, fmt.Errorf("%q has an empty entry", s)
		}
		var err error
		switch {
		case strings.Contains(part, "/"):
			err = out.addCIDR(part)
		case strings.Contains(part, "-"):
			err = out.addRange(part)
		default:
			if a, perr := netip.ParseAddr(part); perr != nil {
				err = fmt.Errorf("%q is not an IP, a range or a CIDR", part)
			} else {
				out.add(a, 1)
			}
		}
		if err != nil {
			return List{}, err
		}
	}
	return out, nil
}

func (l *List) addRange(part string) error {
	lo, hi, _ := strings.Cut(part, "-")
	first, err1 := netip.ParseAddr(strings.TrimSpace(lo))
	last, err2 := netip.ParseAddr(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil {
		return fmt.Errorf("range %q: want first-last, two IPs", part)
	}
	if first.Is4() != last.Is4() || first.Zone() != last.Zone() || last.Less(first) {
		return fmt.Errorf("range %q: its last address is before its first or of another family", part)
	}
	l.add(first, span(first, last))
	return nil
}

func (l *List) addCIDR(part string) error {
	p, err := netip.ParsePrefix(part)
	if err != nil {
		return fmt.Errorf("CIDR %q: %v", part, err)
	}
	p = p.Masked()
	bits := p.Addr().BitLen() - p.Bits()
	n := uint64(math.MaxUint64)
	if bits < 64 {
		n = 1 << bits
	}
	first := p.Addr()
	// k6: an IPv4 network of more than 2 addresses leaves out its first
	// (the network) and its last (broadcast).
	if first.Is4() && n > 2 {
		first, n = first.Next(), n-2
	}
	l.add(first, n)
	return nil
}
