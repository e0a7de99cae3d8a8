package relay

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/relay/store"
)

// subscription is one live REQ. Its filters are immutable after creation, so
// fan-out reads them without the connection's help.
type subscription struct {
	conn     *conn
	reader   string // the connection's pubkey: REQs are served only once authenticated
	id       string
	prefix   []byte // `["EVENT","<id>",`, shared by every delivery
	filters  []store.Filter
	live     []liveFilter // one per filter (live.go)
	channels []string     // the #h union when channel-scoped, nil when global
	authors  []string     // a global one's authors union when every filter names authors, else nil
}

// subList is a set of subscriptions kept as a slice of entries, each with
// the summaries of its subscription's first filters inline (live.go): a
// fan-out streams through contiguous memory and touches a subscription only
// when its summary cannot reject the event. In a 5,000-member channel the
// first touch of each subscription and of its summaries was ~7 % of the
// relay's CPU when both were behind pointers (and a map's buckets before
// that). at gives each entry's position for an O(1) swap-remove.
type subList struct {
	name string // the channel ("" for the global list); simple filters' h points at it
	ents []subEntry
	at   map[*subscription]int
}

// subEntry is one subscription of a subList. n is how many of its filters'
// summaries are inline in lf; -1 when it has more than fit (see s.live).
type subEntry struct {
	s  *subscription
	n  int8
	lf [2]liveFilter
}

func (l *subList) add(s *subscription) {
	if _, ok := l.at[s]; ok {
		return
	}
	if l.at == nil {
		l.at = map[*subscription]int{}
	}
	en := subEntry{s: s, n: -1}
	if len(s.live) <= len(en.lf) {
		en.n = int8(copy(en.lf[:], s.live))
		for i := range en.lf[:en.n] {
			if lf := &en.lf[i]; lf.simple && lf.h == l.name {
				lf.h = l.name // one shared string: comparing it reads memory already in cache
			}
		}
	}
	l.at[s] = len(l.ents)
	l.ents = append(l.ents, en)
}

func (l *subList) remove(s *subscription) {
	i, ok := l.at[s]
	if !ok {
		return
	}
	last := len(l.ents) - 1
	if i != last {
		l.ents[i] = l.ents[last]
		l.at[l.ents[i].s] = i
	}
	l.ents[last] = subEntry{}
	l.ents = l.ents[:last]
	delete(l.at, s)
}

// subIndex indexes live subscriptions by channel so a channel event touches
// only that channel's subscribers (docs/buzz-protocol.md §1.6: channel events go only to
// channel-scoped subscriptions, everything else only to global ones).
//
// Global subscriptions whose every filter names authors (the human model's
// presence REQ: ten co-members) are indexed by author too: each presence
// event otherwise went through every such subscription of the community, N
// connections × N/interval presence events a second (19,000 humans at a
// 30 s interval: 12 million filter checks a second).
type subIndex struct {
	active    atomic.Int64 // subscriptions in the index (buzz_subscriptions_active, metrics.go)
	mu        sync.RWMutex
	byChannel map[string]*subList
	byAuthor  map[string]*subList // global subscriptions with authors, by author
	global    subList             // the other global subscriptions
}

func newSubIndex() subIndex {
	return subIndex{byChannel: map[string]*subList{}, byAuthor: map[string]*subList{}}
}

func (x *subIndex) add(s *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.active.Add(1)
	if s.channels == nil && s.authors != nil {
		for _, a := range s.authors {
			l := x.byAuthor[a]
			if l == nil {
				l = &subList{}
				x.byAuthor[a] = l
			}
			l.add(s)
		}
		return
	}
	if s.channels == nil {
		x.global.add(s)
		return
	}
	for _, ch := range s.channels {
		l := x.byChannel[ch]
		if l == nil {
			l = &subList{name: ch}
			x.byChannel[ch] = l
		}
		l.add(s)
	}
}

func (x *subIndex) remove(s *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.active.Add(-1)
	if s.channels == nil && s.authors != nil {
		for _, a := range s.authors {
			if l := x.byAuthor[a]; l != nil {
				l.remove(s)
				if len(l.ents) == 0 {
					delete(x.byAuthor, a)
				}
			}
		}
		return
	}
	if s.channels == nil {
		x.global.remove(s)
		return
	}
	for _, ch := range s.channels {
		if l := x.byChannel[ch]; l != nil {
			l.remove(s)
			if len(l.ents) == 0 {
				delete(x.byChannel, ch)
			}
		}
	}
}

// fanout delivers e to every live subscription that may see it. It holds
// the index read lock (which never blocks other fan-outs) and re-checks
// private-channel membership on each delivery (docs/buzz-protocol.md §1.6).
func (c *community) fanout(e *entry) {
	if d := c.relay.faults.kneeDelay(c.relay.conns.Load()); d > 0 {
		time.AfterFunc(d, func() { c.fanoutNow(e) }) // test fault: a synthetic capacity knee
		return
	}
	c.fanoutNow(e)
}

func (c *community) fanoutNow(e *entry) {
	if c.relay.faults.leakArmed(e.Event.Kind) {
		defer c.relay.leakAcross(c, e) // test fault: another community's subscriber gets it
	}
	c.subs.mu.RLock()
	defer c.subs.mu.RUnlock()
	if e.Channel != "" {
		if l := c.subs.byChannel[e.Channel]; l != nil {
			c.deliverTo(l.ents, e)
		}
		return
	}
	c.deliverTo(c.subs.global.ents, e)
	if l := c.subs.byAuthor[e.Event.PubKey]; l != nil {
		c.deliverTo(l.ents, e) // disjoint from global: no subscription gets it twice
	}
	if e.noticeChannel != "" {
		if l := c.subs.byChannel[e.noticeChannel]; l != nil {
			c.deliverTo(l.ents, e)
		}
	}
}

func (c *community) deliverTo(ents []subEntry, e *entry) {
	if len(ents) == 0 {
		return
	}
	// What does not depend on the reader is decided once per fan-out: most
	// kinds are visible to everyone, and only a private channel's readers
	// need their membership checked (once per reader).
	gated := readerGated(e.Event)
	var readable map[string]bool
	if e.Channel != "" && c.isPrivate(e.Channel) {
		readable = map[string]bool{}
	}
	tags := eventTagBits(e.Event, e.Channel)
	delivered, dropped := 0, 0
	for i := range ents {
		en := &ents[i]
		if !en.matches(e, tags) {
			continue
		}
		s := en.s
		if gated && !eventVisible(e.Event, s.reader) {
			continue
		}
		if readable != nil {
			ok, seen := readable[s.reader]
			if !seen {
				ok = c.canRead(e.Channel, s.reader)
				readable[s.reader] = ok
			}
			if !ok {
				continue
			}
		}
		if c.relay.faults.takeDrop(e.Event.Kind, e.Event.ID, s.reader, s.id) {
			continue // test fault: a lost live delivery
		}
		if s.conn.deliver(s, e) {
			delivered++
		} else {
			dropped++
		}
	}
	// One add per fan-out rather than per delivery: the counters are shared
	// by every connection.
	c.relay.stats.deliveries.Add(int64(delivered))
	c.relay.stats.dropped.Add(int64(dropped))
}

// matches reports whether any of the entry's filters matches e, from the
// inline summaries where they decide.
func (en *subEntry) matches(e *entry, tags uint64) bool {
	if en.n < 0 {
		s := en.s
		for i := range s.live {
			if s.live[i].matches(&s.filters[i], e, tags) {
				return true
			}
		}
		return false
	}
	for i := range en.lf[:en.n] {
		m, sure := en.lf[i].decide(e, tags)
		if !sure {
			m = en.s.filters[i].MatchesInChannel(e.Event, e.Channel)
		}
		if m {
			return true
		}
	}
	return false
}
