package ledger

import (
	"encoding/hex"
	"slices"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Sub is one REQ in the ledger (relayclient.SubLedger).
type Sub struct {
	l         *Ledger
	id        string
	recipient string
	community string
	filters   []filt
	channels  []string // nil: a global subscription
	needP     bool     // a filter names #p
	jid       uint64   // its number in the journal

	// guarded by l.mu
	serial uint32 // given at EOSE; the lists and an event's pairs are in its order
	listed bool
	ended  bool

	// closed is when it ended (unix ns, 0 while open), byClient whether
	// the client ended it; seq numbers its expected deliveries. Written
	// under l.mu (closed, byClient) or a shard's lock (seq), read at
	// judgement under both.
	closed   int64
	byClient bool
	seq      uint32
}

func (s *Sub) setNeedP() {
	for _, f := range s.filters {
		if f.p != nil {
			s.needP = true
		}
	}
}

// authors is the union of the authors of a subscription whose every
// filter names some, nil otherwise.
func (s *Sub) authors() []string {
	var out []string
	for _, f := range s.filters {
		if len(f.authors) == 0 {
			return nil
		}
		for _, a := range f.authors {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// match: an event of the subscription's community and scope that one of
// its filters matches.
func (s *Sub) match(f *facts) bool {
	if (f.channel != "") != (s.channels != nil) {
		return false
	}
	for i := range s.filters {
		if s.filters[i].match(f) {
			return true
		}
	}
	return false
}

// breaks names the rule a delivery of an event with facts f to s breaks,
// "" for none.
func (s *Sub) breaks(f *facts, known bool) string {
	if known && f.community != s.community {
		return "an event of community " + quote(f.community) + " delivered in community " + quote(s.community)
	}
	if !s.match(f) {
		return "the subscription's filters do not match it"
	}
	return ""
}

func quote(c string) string {
	if c == "" {
		return `""`
	}
	return c
}

// Live implements relayclient.SubLedger: from now on the subscription is
// an expected recipient of what it matches.
func (s *Sub) Live(at time.Time) {
	l := s.l
	if l.j != nil {
		// Written when it matters, at its EOSE: a REQ that never went
		// live takes no part.
		l.j.open(s, at)
		l.j.live(s, at)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.ended || s.listed || l.finished {
		return
	}
	l.serial++
	s.serial, s.listed = l.serial, true
	if s.channels == nil {
		if as := s.authors(); as != nil {
			for _, a := range as {
				k := chanKey{s.community, a}
				l.byAuthor[k] = append(l.byAuthor[k], s.entry(""))
			}
			return
		}
		l.global[s.community] = append(l.global[s.community], s.entry(""))
		return
	}
	for _, ch := range s.channels {
		k := chanKey{s.community, ch}
		l.byChannel[k] = append(l.byChannel[k], s.entry(ch))
	}
}

// entry is s as listed for channel ch ("" for the global list): the kinds
// of its filters that take ch inline when they need nothing else.
func (s *Sub) entry(ch string) listed {
	c := listed{s: s, serial: s.serial, pOnly: true}
	for i := range s.filters {
		f := &s.filters[i]
		if ch != "" && !slices.Contains(f.h, ch) {
			continue
		}
		if f.p == nil {
			c.pOnly = false
		}
		if f.p != nil || f.authors != nil {
			c.cond = true
			continue
		}
		if f.kinds == nil {
			c.any = true
			continue
		}
		for _, k := range f.kinds {
			if int(c.nk) == len(c.kinds) {
				c.cond = true
				break
			}
			c.kinds[c.nk] = int32(k)
			c.nk++
		}
	}
	return c
}

// Ended implements relayclient.SubLedger.
func (s *Sub) Ended(at time.Time, byClient bool) {
	l := s.l
	if l.j != nil && s.jid != 0 {
		l.j.ended(s, at, byClient)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.ended {
		return
	}
	s.ended, s.closed, s.byClient = true, at.UnixNano(), byClient
	if !s.listed {
		return
	}
	if s.channels == nil {
		if as := s.authors(); as != nil {
			for _, a := range as {
				k := chanKey{s.community, a}
				if rest := without(l.byAuthor[k], s); len(rest) > 0 {
					l.byAuthor[k] = rest
				} else {
					delete(l.byAuthor, k)
				}
			}
			return
		}
		l.global[s.community] = without(l.global[s.community], s)
		if len(l.global[s.community]) == 0 {
			delete(l.global, s.community)
		}
		return
	}
	for _, ch := range s.channels {
		k := chanKey{s.community, ch}
		if rest := without(l.byChannel[k], s); len(rest) > 0 {
			l.byChannel[k] = rest
		} else {
			delete(l.byChannel, k)
		}
	}
}

// without removes s from list in place, keeping the order (the list is in
// serial order, which an event's pairs rely on; every reader holds l.mu).
func without(list []listed, s *Sub) []listed {
	for i := range list {
		if list[i].s == s {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = listed{}
			return list[:len(list)-1]
		}
	}
	return list
}

// Delivered implements relayclient.SubLedger.
func (s *Sub) Delivered(v *nostr.EventView, at time.Time) {
	var id [32]byte
	if _, err := hex.Decode(id[:], v.ID[:]); err != nil { // in place: no string per delivery
		return
	}
	if j := s.l.j; j != nil {
		f, ok := viewFacts(v, s.needP)
		j.delivered(s, id, at, &f, ok)
	}
	s.deliver(id, at, v.Kind, func() (facts, bool) { return viewFacts(v, s.needP) })
}

// deliver is a live delivery of event id (of kind) on s; the facts are
// read only for an event the ledger does not hold.
func (s *Sub) deliver(id [32]byte, at time.Time, kind int, factsOf func() (facts, bool)) {
	l := s.l
	sh := l.shard(&id)
	sh.mu.Lock()
	if e := sh.m[id]; e != nil {
		if i, ok := e.find(s); ok {
			p := &e.pairs[i]
			if p.seq != 0 {
				e.dups++
			} else {
				s.seq++
				p.seq = s.seq
				e.got++
				e.last = max(e.last, at.UnixNano())
			}
			sh.mu.Unlock()
			return
		}
		f := e.f
		sh.mu.Unlock()
		if rule := s.breaks(&f, true); rule != "" {
			l.leak(hex.EncodeToString(id[:]), f.channel, s, rule, at)
		}
		return
	}
	sh.mu.Unlock()
	if l.nMissed.Load() > 0 && l.Sampled(id) && l.late(id, s, at) {
		return
	}
	if !tracked(kind) {
		// Its scope is the relay's to decide (a reaction goes to its
		// target's channel, block/buzz handlers/ingest.rs
		// derive_reaction_channel): nothing to check it against.
		return
	}
	f, ok := factsOf()
	if !ok {
		return
	}
	if rule := s.breaks(&f, false); rule != "" {
		l.leak(hex.EncodeToString(id[:]), f.channel, s, rule, at)
	}
}

// find is s's pair in e (the pairs are in serial order).
func (e *entry) find(s *Sub) (int, bool) {
	lo, hi := 0, len(e.pairs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e.pairs[m].serial < s.serial {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(e.pairs) && e.pairs[lo].s == s
}
