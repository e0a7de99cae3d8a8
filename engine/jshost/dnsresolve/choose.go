package dnsresolve

import (
	"net/netip"
	"time"
)

// Filter keeps the addresses policy allows, in their order: preferIPv4
// keeps the IPv4 ones if there are any, else the IPv6 ones (preferIPv6 the
// other way round), onlyIPv4 / onlyIPv6 only that family (possibly none),
// any all of them. An IPv4-mapped IPv6 address counts as IPv4, as in k6.
func Filter(addrs []netip.Addr, p Policy) []netip.Addr {
	if p == Any {
		return addrs
	}
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		if a.Unmap().Is4() {
			v4 = append(v4, a.Unmap())
		} else {
			v6 = append(v6, a)
		}
	}
	switch p {
	case PreferIPv4:
		if len(v4) > 0 {
			return v4
		}
		return v6
	case PreferIPv6:
		if len(v6) > 0 {
			return v6
		}
		return v4
	case OnlyIPv4:
		return v4
	case OnlyIPv6:
		return v6
	}
	return addrs
}

// Pick is the address a dial gets among addrs (Filter's result), and the
// name's next round-robin count: first takes addrs[0], roundRobin
// addrs[rr mod n] and counts on, random addrs[rnd(n)] (rnd returns a
// number in [0, n)). No addresses: the zero Addr, the count unchanged.
//
// k6 keeps its round-robin count in a byte, so past 255 dials of a name
// whose address count does not divide 256 it skips or repeats one; this
// count does not wrap.
func Pick(addrs []netip.Addr, sel Select, rr uint64, rnd func(n int) int) (netip.Addr, uint64) {
	n := len(addrs)
	if n == 0 {
		return netip.Addr{}, rr
	}
	switch sel {
	case RoundRobin:
		return addrs[rr%uint64(n)], rr + 1
	case Random:
		return addrs[rnd(n)], rr
	}
	return addrs[0], rr
}

// Fresh says whether addresses looked up at looked are still used at now
// with ttl: strictly before looked+ttl. A ttl of 0 is never fresh.
func Fresh(looked, now time.Time, ttl time.Duration) bool {
	return ttl > 0 && now.Before(looked.Add(ttl))
}
