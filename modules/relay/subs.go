package relay

import (
	"sync"

	"github.com/buzzload/buzzload/modules/relay/store"
)

// subscription is one live REQ. Its filters are immutable after creation, so
// fan-out reads them without the connection's help.
type subscription struct {
	conn     *conn
	id       string
	prefix   []byte // `["EVENT","<id>",`, shared by every delivery
	filters  []store.Filter
	channels []string // the #h union when channel-scoped, nil when global
}

// subIndex indexes live subscriptions by channel so a channel event touches
// only that channel's subscribers (docs/buzz-protocol.md §1.6: channel events go only to
// channel-scoped subscriptions, everything else only to global ones).
type subIndex struct {
	mu        sync.RWMutex
	byChannel map[string]map[*subscription]struct{}
	global    map[*subscription]struct{}
}

func newSubIndex() subIndex {
	return subIndex{byChannel: map[string]map[*subscription]struct{}{}, global: map[*subscription]struct{}{}}
}

func (x *subIndex) add(s *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s.channels == nil {
		x.global[s] = struct{}{}
		return
	}
	for _, ch := range s.channels {
		m := x.byChannel[ch]
		if m == nil {
			m = map[*subscription]struct{}{}
			x.byChannel[ch] = m
		}
		m[s] = struct{}{}
	}
}

func (x *subIndex) remove(s *subscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s.channels == nil {
		delete(x.global, s)
		return
	}
	for _, ch := range s.channels {
		if m := x.byChannel[ch]; m != nil {
			delete(m, s)
			if len(m) == 0 {
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
		c.deliverTo(c.subs.byChannel[e.Channel], e)
		return
	}
	c.deliverTo(c.subs.global, e)
	if e.noticeChannel != "" {
		c.deliverTo(c.subs.byChannel[e.noticeChannel], e)
	}
}

func (c *community) deliverTo(set map[*subscription]struct{}, e *entry) {
	if len(set) == 0 {
		return
	}
	readable := map[string]bool{} // private-channel membership, once per reader
	for s := range set {
		reader := s.conn.pubkey
		if !eventVisible(e.Event, reader) {
			continue
		}
		if e.Channel != "" {
			ok, seen := readable[reader]
			if !seen {
				ok = c.canRead(e.Channel, reader)
				readable[reader] = ok
			}
			if !ok {
				continue
			}
		}
		for i := range s.filters {
			if s.filters[i].MatchesInChannel(e.Event, e.Channel) {
				s.conn.deliver(s, e)
				break
			}
		}
	}
}
