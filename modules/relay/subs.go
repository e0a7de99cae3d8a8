package relay

import (
	"sync"

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
}

// subList is a set of subscriptions kept as a slice, so a fan-out walks
// contiguous pointers instead of a map's buckets (a wide channel's fan-out
// spent ~10 % of the relay's CPU in map iteration); at gives each its
// position for an O(1) swap-remove.
type subList struct {
	subs []*subscription
	at   map[*subscription]int
}

func (l *subList) add(s *subscription) {
	if _, ok := l.at[s]; ok {
		return
	}
	if l.at == nil {
		l.at = map[*subscription]int{}
	}
	l.at[s] = len(l.subs)
	l.subs = append(l.subs, s)
}

func (l *subList) remove(s *subscription) {
	i, ok := l.at[s]
	if !ok {
		return
	}
	last := len(l.subs) - 1
	if i != last {
		l.subs[i] = l.subs[last]
		l.at[l.subs[i]] = i
	}
	l.subs[last] = nil
	l.subs = l.subs[:last]
	delete(l.at, s)
}

// subIndex indexes live subscriptions by channel so a channel event touches
// only that channel's subscribers (docs/buzz-protocol.md §1.6: channel events go only to
// channel-scoped subscriptions, everything else only to global ones).
type subIndex struct {
	mu        sync.RWMutex
	byChannel map[string]*subList
	global    subList
}

func newSubIndex() subIndex {
	return subIndex{byChannel: map[string]*subList{}}
}

func (x *subIndex) add(s *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s.channels == nil {
		x.global.add(s)
		return
	}
	for _, ch := range s.channels {
		l := x.byChannel[ch]
		if l == nil {
			l = &subList{}
			x.byChannel[ch] = l
		}
		l.add(s)
	}
}

func (x *subIndex) remove(s *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s.channels == nil {
		x.global.remove(s)
		return
	}
	for _, ch := range s.channels {
		if l := x.byChannel[ch]; l != nil {
			l.remove(s)
			if len(l.subs) == 0 {
				delete(x.byChannel, ch)
			}
		}
	}
}

// fanout delivers e to every live subscription that may see it. It holds
// the index read lock (which never blocks other fan-outs) and re-checks
// private-channel membership on each delivery (docs/buzz-protocol.md §1.6).
func (c *community) fanout(e *entry) {
	c.subs.mu.RLock()
	defer c.subs.mu.RUnlock()
	if e.Channel != "" {
		if l := c.subs.byChannel[e.Channel]; l != nil {
			c.deliverTo(l.subs, e)
		}
		return
	}
	c.deliverTo(c.subs.global.subs, e)
	if e.noticeChannel != "" {
		if l := c.subs.byChannel[e.noticeChannel]; l != nil {
			c.deliverTo(l.subs, e)
		}
	}
}

func (c *community) deliverTo(subs []*subscription, e *entry) {
	if len(subs) == 0 {
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
	for _, s := range subs {
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
		for i := range s.live {
			if s.live[i].matches(&s.filters[i], e, tags) {
				if s.conn.deliver(s, e) {
					delivered++
				} else {
					dropped++
				}
				break
			}
		}
	}
	// One add per fan-out rather than per delivery: the counters are shared
	// by every connection.
	c.relay.stats.deliveries.Add(int64(delivered))
	c.relay.stats.dropped.Add(int64(dropped))
}
