package store

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Reader describes who reads and what the server decided for them. The
// store does no authentication; it applies these.
type Reader struct {
	// CanRead reports whether the reader may see events of a channel. It is
	// applied before limits (NIP-CW: probe after access). Events outside
	// channels ("") are always readable; nil allows every channel.
	CanRead func(channel string) bool

	// Visible, when set, is asked about every candidate event of a readable
	// channel (rows, aux, plain matches) before limits apply: p-gated and
	// author-only kinds. It runs under the store's partition lock and must
	// not call the Store.
	Visible func(ev *nostr.Event, channel string) bool

	Pubkey string // authenticated reader, lower-case hex (thread-window binding)
	Host   string // normalised community authority, e.g. "acme.localhost:3000" (thread-window binding)

	// ThreadRepliesInChannel is the community's NIP-CW row mode: when true
	// every non-deleted channel event of the requested kinds is a row.
	ThreadRepliesInChannel bool

	Signer Signer    // relay key for 39005/39006/39007; required by windows
	Now    time.Time // overlay created_at; zero means time.Now()
}

func (rd *Reader) readable(channel string) bool {
	return channel == "" || rd.CanRead == nil || rd.CanRead(channel)
}

func (rd *Reader) visible(r *record) bool {
	return rd.Visible == nil || rd.Visible(r.ev, r.part.channel)
}

// keep returns rd.visible as a record predicate, or nil when every event is visible.
func (rd *Reader) keep() func(*record) bool {
	if rd.Visible == nil {
		return nil
	}
	return rd.visible
}

func (rd *Reader) now() int64 {
	if rd.Now.IsZero() {
		return time.Now().Unix()
	}
	return rd.Now.Unix()
}

// ErrCountTooBroad is Buzz's refusal of a COUNT without an indexed
// constraint. Here a count filter must carry ids, authors, kinds or a tag
// filter.
var ErrCountTooBroad = errors.New("restricted: count filter requires narrower constraints")

// Query answers filters with NIP-01 semantics (REQ replay, plain /query
// filters): each filter yields its newest `limit` matches (MaxLimit when it
// has none, nothing for limit 0), the union is de-duplicated and returned
// newest first (created_at DESC, id ASC). Window, thread and search-paging
// fields are ignored here (BridgeQuery honours them); before_id is applied.
func (s *Store) Query(filters []Filter, rd Reader) []*nostr.Event {
	return s.QueryN(filters, rd, s.cfg.MaxLimit)
}

// QueryN is Query with maxLimit in place of Config.MaxLimit, for server
// reads with their own bound (the read-state snapshot's 4096 events).
func (s *Store) QueryN(filters []Filter, rd Reader, maxLimit int) []*nostr.Event {
	var recs []*record
	for i := range filters {
		f := filters[i]
		f.prepare()
		recs = append(recs, s.queryOne(&f, &rd, s.limitFor(&f, 0, maxLimit))...)
	}
	if len(filters) > 1 {
		recs = uniqueSorted(recs)
	}
	return events(recs)
}

func events(recs []*record) []*nostr.Event {
	out := make([]*nostr.Event, len(recs))
	for i, r := range recs {
		out[i] = r.ev
	}
	return out
}

func uniqueSorted(recs []*record) []*record {
	slices.SortFunc(recs, func(a, b *record) int {
		if before(a, b) {
			return -1
		}
		if before(b, a) {
			return 1
		}
		return 0
	})
	return slices.Compact(recs)
}

// limitFor: the filter's limit clamped to max, def when absent (0: max).
func (s *Store) limitFor(f *Filter, def, max int) int {
	if def == 0 {
		def = max
	}
	if f.Limit == nil {
		return def
	}
	return min(*f.Limit, max)
}

// topK keeps the best k records in rank order: a heap whose root is the
// worst kept, so a scan stops at the first candidate that cannot enter.
type topK struct {
	k int
	h []*record
}

func (t *topK) full() bool          { return len(t.h) >= t.k }
func (t *topK) worse(i, j int) bool { return before(t.h[j], t.h[i]) }

func (t *topK) push(r *record) {
	if !t.full() {
		t.h = append(t.h, r)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.worse(i, p) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !before(r, t.h[0]) {
		return
	}
	t.h[0] = r
	for i := 0; ; {
		l, w := 2*i+1, i
		if l < len(t.h) && t.worse(l, w) {
			w = l
		}
		if l+1 < len(t.h) && t.worse(l+1, w) {
			w = l + 1
		}
		if w == i {
			break
		}
		t.h[i], t.h[w] = t.h[w], t.h[i]
		i = w
	}
}

// admits reports whether r could still enter (scans stop when it cannot).
func (t *topK) admits(r *record) bool { return !t.full() || before(r, t.h[0]) }

func (t *topK) sorted() []*record {
	return uniqueSorted(t.h)
}

// partsFor lists the partitions a filter can match: its #h channels, or all.
func (s *Store) partsFor(f *Filter) []*partition {
	var out []*partition
	if hs, ok := f.Tags["h"]; ok {
		for i, h := range hs {
			if slices.Contains(hs[:i], h) {
				continue
			}
			if p := s.partition(h, false); p != nil {
				out = append(out, p)
			}
		}
		return out
	}
	s.parts.Range(func(_, v any) bool {
		out = append(out, v.(*partition))
		return true
	})
	return out
}

func (s *Store) queryOne(f *Filter, rd *Reader, limit int) []*record {
	if limit <= 0 {
		return nil
	}
	t := topK{k: limit}
	if f.IDs != nil {
		for _, id := range f.IDs {
			r := s.lookup(id)
			if r == nil || r.deleted.Load() || !rd.readable(r.part.channel) || !f.matches(r.ev, r.part.channel) || !rd.visible(r) {
				continue
			}
			t.push(r)
		}
		return t.sorted()
	}
	for _, p := range s.partsFor(f) {
		if !rd.readable(p.channel) {
			continue
		}
		p.mu.RLock()
		p.scan(f, func(r *record) bool {
			if !t.admits(r) {
				return false
			}
			if f.matches(r.ev, p.channel) && rd.visible(r) {
				t.push(r)
			}
			return true
		})
		p.mu.RUnlock()
	}
	return t.sorted()
}

// pick chooses the smallest index that covers f within p: the lists of its
// authors, its kinds or one of its single-letter tags, else everything.
// shared reports that a record may sit in more than one returned list.
func (p *partition) pick(f *Filter) (lists []*list, shared bool) {
	best, bestN := []*list{&p.all}, p.all.len()
	consider := func(ls []*list, n int, sh bool) {
		if n < bestN {
			best, bestN, shared = ls, n, sh
		}
	}
	gather := func(get func(i int) *list, count int) ([]*list, int) {
		var ls []*list
		n := 0
		for i := 0; i < count; i++ {
			if l := get(i); l != nil && !slices.Contains(ls, l) {
				ls = append(ls, l)
				n += l.len()
			}
		}
		return ls, n
	}
	if f.Authors != nil {
		ls, n := gather(func(i int) *list { return p.authors[f.Authors[i]] }, len(f.Authors))
		consider(ls, n, false)
	}
	if f.Kinds != nil {
		ls, n := gather(func(i int) *list { return p.kinds[f.Kinds[i]] }, len(f.Kinds))
		consider(ls, n, false)
	}
	for name, vals := range f.Tags {
		if len(name) != 1 || name == "h" {
			continue
		}
		ls, n := gather(func(i int) *list { return p.tags[tagKey{name[0], vals[i]}] }, len(vals))
		consider(ls, n, len(ls) > 1)
	}
	return best, shared
}

// scan walks p's best index for f newest first, from f's until/before_id
// cursor down to since, calling visit with each candidate (a superset of the
// matches) until visit returns false for a list. p.mu must be held.
func (p *partition) scan(f *Filter, visit func(*record) bool) {
	lists, shared := p.pick(f)
	var seen map[*record]bool
	if shared {
		seen = map[*record]bool{}
	}
	var from func(*record) bool
	if f.Until != nil {
		if f.BeforeID != "" {
			from = afterCursor(*f.Until, strings.ToLower(f.BeforeID))
		} else {
			from = upTo(*f.Until)
		}
	}
	for _, l := range lists {
		var at pos
		if from != nil {
			at = l.seek(from)
		}
		for r := l.next(&at); r != nil; r = l.next(&at) {
			if f.Since != nil && r.at < *f.Since {
				break
			}
			if seen != nil {
				if seen[r] {
					continue
				}
				seen[r] = true
			}
			if !visit(r) {
				break
			}
		}
	}
}

// Count answers COUNT and POST /count: the number of distinct stored events
// matching any filter, ignoring limits. Filters with no ids, authors, kinds
// or tag constraint are refused with ErrCountTooBroad.
func (s *Store) Count(filters []Filter, rd Reader) (int, error) {
	for i := range filters {
		f := &filters[i]
		if f.IDs == nil && f.Authors == nil && f.Kinds == nil && len(f.Tags) == 0 {
			return 0, ErrCountTooBroad
		}
	}
	var seen map[*record]bool
	if len(filters) > 1 {
		seen = map[*record]bool{}
	}
	n := 0
	for i := range filters {
		f := filters[i]
		f.prepare()
		if seen == nil && rd.Visible == nil {
			if c, ok := s.fastCount(&f, &rd); ok {
				n += c
				continue
			}
		}
		count := func(r *record, channel string) {
			if !f.matches(r.ev, channel) || !rd.visible(r) {
				return
			}
			if seen != nil {
				if seen[r] {
					return
				}
				seen[r] = true
			}
			n++
		}
		if f.IDs != nil {
			for _, id := range f.IDs {
				if r := s.lookup(id); r != nil && !r.deleted.Load() && rd.readable(r.part.channel) {
					count(r, r.part.channel)
				}
			}
			continue
		}
		for _, p := range s.partsFor(&f) {
			if !rd.readable(p.channel) {
				continue
			}
			p.mu.RLock()
			p.scan(&f, func(r *record) bool { count(r, p.channel); return true })
			p.mu.RUnlock()
		}
	}
	return n, nil
}

// fastCount answers {"kinds":[…]} with an optional "#h" from list lengths.
func (s *Store) fastCount(f *Filter, rd *Reader) (int, bool) {
	if f.Kinds == nil || f.IDs != nil || f.Authors != nil || f.Since != nil || f.Until != nil || f.Search != "" {
		return 0, false
	}
	for name := range f.Tags {
		if name != "h" {
			return 0, false
		}
	}
	n := 0
	for _, p := range s.partsFor(f) {
		if p.channel == "" && f.Tags["h"] != nil || !rd.readable(p.channel) {
			continue
		}
		p.mu.RLock()
		var done []int
		for _, k := range f.Kinds {
			if !slices.Contains(done, k) {
				done = append(done, k)
				if l := p.kinds[k]; l != nil {
					n += l.len()
				}
			}
		}
		p.mu.RUnlock()
	}
	return n, true
}
