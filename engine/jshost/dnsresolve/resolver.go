package dnsresolve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// LookupFunc returns every address of host (A and AAAA).
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// GoLookup is Go's resolver (the system's configuration, /etc/hosts first).
func GoLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// NoAddressError is a name whose lookup left no address the policy allows;
// its text is k6's.
type NoAddressError struct{ Host string }

func (e *NoAddressError) Error() string { return fmt.Sprintf("lookup %s: no such host", e.Host) }

// Resolver is one run's: every VU's dials share its cache and its
// round-robin counts, as k6 shares one resolver across VUs.
type Resolver struct {
	set    Settings
	lookup LookupFunc
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]record
	rr    map[string]uint64
	rnd   *rand.Rand
}

type record struct {
	addrs  []netip.Addr // after the policy
	looked time.Time
}

// NewResolver builds a resolver with settings s on lookup; now is the
// clock (nil: time.Now).
func NewResolver(s Settings, lookup LookupFunc, now func() time.Time) *Resolver {
	if now == nil {
		now = time.Now
	}
	return &Resolver{set: s, lookup: lookup, now: now, cache: map[string]record{}, rr: map[string]uint64{},
		rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))} //nolint:gosec // picks among addresses, not a secret
}

// Lookup is the address a dial to host connects to. A failed lookup is
// the LookupFunc's error; none left after the policy is NoAddressError.
func (r *Resolver) Lookup(ctx context.Context, host string) (netip.Addr, error) {
	r.mu.Lock()
	rec, ok := r.cache[host]
	r.mu.Unlock()
	if !ok || !Fresh(rec.looked, r.now(), r.set.TTL) {
		// The lookup runs unlocked: it may take a while, and other names
		// must not wait for it. Concurrent misses of one name each look up.
		addrs, err := r.lookup(ctx, host)
		if err != nil {
			return netip.Addr{}, err
		}
		rec = record{addrs: Filter(addrs, r.set.Policy), looked: r.now()}
		if r.set.TTL > 0 {
			r.mu.Lock()
			r.cache[host] = rec
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	a, next := Pick(rec.addrs, r.set.Select, r.rr[host], r.rnd.IntN)
	if r.set.Select == RoundRobin {
		r.rr[host] = next // only round robin keeps a count (the map would grow with every name)
	}
	r.mu.Unlock()
	if !a.IsValid() {
		return netip.Addr{}, &NoAddressError{Host: host}
	}
	return a, nil
}

// Shared hands out one run's resolvers: one per distinct Settings (every
// VU of a run has the same options, so in practice one), all on lookup.
type Shared struct {
	lookup LookupFunc
	now    func() time.Time
	mu     sync.Mutex
	by     map[Settings]*Resolver
}

// NewShared is a run's resolvers on lookup (nil: GoLookup) and clock now
// (nil: time.Now).
func NewShared(lookup LookupFunc, now func() time.Time) *Shared {
	if lookup == nil {
		lookup = GoLookup
	}
	return &Shared{lookup: lookup, now: now, by: map[Settings]*Resolver{}}
}

// For is the run's resolver with settings s.
func (sh *Shared) For(s Settings) *Resolver {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r, ok := sh.by[s]
	if !ok {
		r = NewResolver(s, sh.lookup, sh.now)
		sh.by[s] = r
	}
	return r
}
