// How events leave the store: NIP-09 deletions and tombstones, replaceable
// addresses deleted up to a time, and eviction when the store is full.

package store

import (
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
)

// drop removes r entirely (eviction, replacement). The caller holds r's
// replaceable shard when r has a coordinate.
func (s *Store) drop(r *record) {
	sh := s.idShard(r.id)
	sh.mu.Lock()
	if sh.m[r.id] == r {
		delete(sh.m, r.id)
	}
	sh.mu.Unlock()
	p := r.part
	p.mu.Lock()
	if r.removed {
		p.mu.Unlock()
		return
	}
	if !r.deleted.Load() {
		p.unindex(r)
		s.live.Add(-1)
	}
	r.removed = true
	if r.aux {
		for _, t := range r.ev.Tags {
			if len(t) >= 2 && t[0] == "e" {
				id := strings.ToLower(t[1])
				refs := p.refs[id]
				for i, x := range refs {
					if x == r {
						refs = append(refs[:i], refs[i+1:]...)
						break
					}
				}
				if len(refs) == 0 {
					delete(p.refs, id)
				} else {
					p.refs[id] = refs
				}
			}
		}
	}
	p.mu.Unlock()
	s.retained.Add(-1)
}

// evict drops earliest-stored events while more than MaxEvents are retained.
// "Oldest" is arrival order, which is what bounds memory in a soak.
func (s *Store) evict() {
	s.evictMu.Lock()
	// Replaced versions leave dead entries behind; compact when they
	// dominate, whether or not the cap is reached (amortised O(1): the
	// queue must double again before the next pass).
	if n := len(s.evictQ); n > 1024 && int64(n) > 2*s.retained.Load() {
		q := make([]*record, 0, s.retained.Load()+1024)
		for _, c := range s.evictQ {
			if !s.isRemoved(c) {
				q = append(q, c)
			}
		}
		s.evictQ = q
	}
	s.evictMu.Unlock()
	for s.retained.Load() > int64(s.cfg.MaxEvents) {
		var r *record
		s.evictMu.Lock()
		for len(s.evictQ) > 0 {
			c := s.evictQ[0]
			s.evictQ[0] = nil
			s.evictQ = s.evictQ[1:]
			if !s.isRemoved(c) {
				r = c
				break
			}
		}
		s.evictMu.Unlock()
		if r == nil {
			return
		}
		if r.coord != "" {
			rs := s.replShard(r.coord)
			rs.mu.Lock()
			if rs.cur[r.coord] == r {
				delete(rs.cur, r.coord)
			}
			s.drop(r)
			rs.mu.Unlock()
		} else {
			s.drop(r)
		}
	}
}

func (s *Store) isRemoved(r *record) bool {
	r.part.mu.RLock()
	defer r.part.mu.RUnlock()
	return r.removed
}

// Delete tombstones the event with this id: it leaves every query, count
// and window, its replies stay in their thread, and re-submitting it is
// refused (Deleted). The server checks who may delete (the author for kind
// 5, admins for 9005) before calling. Returns the deleted event.
func (s *Store) Delete(id string) (*nostr.Event, bool) {
	r := s.lookup(strings.ToLower(id))
	if r == nil {
		return nil, false
	}
	return s.tombstone(r)
}

func (s *Store) tombstone(r *record) (*nostr.Event, bool) {
	p := r.part
	p.mu.Lock()
	if r.removed || r.deleted.Load() {
		p.mu.Unlock()
		return nil, false
	}
	r.deleted.Store(true)
	p.unindex(r)
	p.mu.Unlock()
	s.live.Add(-1)
	return r.ev, true
}

// DeleteAddress applies an a-tag deletion: the version at coordinate
// ("kind:pubkey:d") is tombstoned when its created_at <= until, and later
// submissions at or before until are refused. Returns the deleted event.
func (s *Store) DeleteAddress(coordinate string, until int64) (*nostr.Event, bool) {
	rs := s.replShard(coordinate)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if until > rs.deletedUntil[coordinate] {
		rs.deletedUntil[coordinate] = until
	}
	if cur := rs.cur[coordinate]; cur != nil && cur.at <= until {
		return s.tombstone(cur)
	}
	return nil, false
}

// ApplyDeletion performs the NIP-09 deletion del (kind 5, or 9005) that the
// server has accepted and stored: every e-tag target and a-tag coordinate
// authored by del's author (any author when admin) is deleted. Deletions
// themselves are never deleted. Returns the ids deleted.
func (s *Store) ApplyDeletion(del *nostr.Event, admin bool) []string {
	var out []string
	for _, t := range del.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "e":
			r := s.lookup(strings.ToLower(t[1]))
			if r == nil || isDeletion(r.ev.Kind) || (!admin && r.ev.PubKey != del.PubKey) {
				continue
			}
			if ev, ok := s.tombstone(r); ok {
				out = append(out, ev.ID)
			}
		case "a":
			parts := strings.SplitN(t[1], ":", 3)
			if len(parts) != 3 || (!admin && parts[1] != del.PubKey) {
				continue
			}
			if ev, ok := s.DeleteAddress(t[1], del.CreatedAt); ok {
				out = append(out, ev.ID)
			}
		}
	}
	return out
}
