// A partition's indexes: every stored record is listed under its kind, its
// author and each single-letter tag, top-level rows under their kind and
// replies under their thread root; aux events (reactions, deletions, edits)
// under the events they reference.

package store

import (
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
)

func listFor[K comparable](m map[K]*list, k K) *list {
	l := m[k]
	if l == nil {
		l = &list{}
		m[k] = l
	}
	return l
}

// indexKeys calls fn once per distinct indexable tag of r.
func indexKeys(ev *nostr.Event, fn func(tagKey)) {
	var seen []tagKey
	for _, t := range ev.Tags {
		if len(t) < 2 || len(t[0]) != 1 || t[0] == "h" {
			continue
		}
		k := tagKey{t[0][0], t[1]}
		dup := false
		for _, x := range seen {
			if x == k {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, k)
			fn(k)
		}
	}
}

// index adds r to every index of p. p.mu must be held for writing.
func (p *partition) index(r *record) {
	ev := r.ev
	p.all.insert(r)
	listFor(p.kinds, ev.Kind).insert(r)
	listFor(p.authors, ev.PubKey).insert(r)
	indexKeys(ev, func(k tagKey) { listFor(p.tags, k).insert(r) })
	if r.aux {
		var seen []string
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "e" {
				if id := strings.ToLower(t[1]); !contains(seen, id) {
					seen = append(seen, id)
					p.refs[id] = append(p.refs[id], r)
				}
			}
		}
		return
	}
	if r.topLevel {
		listFor(p.top, ev.Kind).insert(r)
	}
	if r.parent != nil && !r.parent.removed && !r.root.removed {
		if r.root.thread == nil {
			r.root.thread = &list{}
		}
		r.root.thread.insert(r)
		r.parent.replies++
		for a := r.parent; a != nil; a = a.parent {
			a.desc++
		}
		r.linked = true
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func removeFrom[K comparable](m map[K]*list, k K, r *record) {
	if l := m[k]; l != nil {
		l.remove(r)
		if l.len() == 0 {
			delete(m, k)
		}
	}
}

// unindex removes r from the query indexes (not refs, not the id map).
// p.mu must be held for writing.
func (p *partition) unindex(r *record) {
	ev := r.ev
	p.all.remove(r)
	removeFrom(p.kinds, ev.Kind, r)
	removeFrom(p.authors, ev.PubKey, r)
	indexKeys(ev, func(k tagKey) { removeFrom(p.tags, k, r) })
	if r.topLevel && !r.aux {
		removeFrom(p.top, ev.Kind, r)
	}
	if ev.Kind == nostr.KindReaction {
		k := reactionKey{lastE(ev), ev.PubKey, ev.Content}
		if p.react[k] == r {
			delete(p.react, k)
		}
	}
	if r.linked {
		r.root.thread.remove(r)
		r.parent.replies--
		for a := r.parent; a != nil; a = a.parent {
			a.desc--
		}
		r.linked = false
	}
}
