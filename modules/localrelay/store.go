package localrelay

import (
	"sort"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Entry is one stored event with what the relay derived at ingest. The JSON
// form is serialised once and reused for every delivery. Mutable fields
// (Deleted) are written under the community lock.
type Entry struct {
	Event   *nostr.Event
	JSON    []byte
	Channel string // "" for events outside any channel

	// Thread metadata (NIP-10 marked e tags), for replies only.
	Root      string
	Parent    string
	Depth     int
	Broadcast bool

	Deleted bool // removed by a deletion or replaced by a newer version

	// noticeChannel is the h of a global relay notice (44100/44101), which
	// is also delivered to that channel's live subscriptions.
	noticeChannel string
}

// Store is the community's event store. It is deliberately small so the
// indexed store under modules/localrelay/store can replace memStore.
// Implementations are not safe for concurrent use: the community lock
// serialises writers and lets readers share.
type Store interface {
	// Add stores e; false when an event with the same id exists.
	Add(e *Entry) bool
	// Get returns the event with this id (deleted ones included), or nil.
	Get(id string) *Entry
	// Scan calls fn with candidates for f newest first (created_at DESC, id
	// ASC) until fn returns false. It may return a superset: callers re-match.
	Scan(f *Filter, fn func(*Entry) bool)
	// Len is the number of stored events.
	Len() int
}

// memStore keeps sorted slices per channel and per author plus one for all
// events; the generator's access patterns (one channel, newest first) walk a
// slice backwards from the cursor.
type memStore struct {
	byID      map[string]*Entry
	all       []*Entry
	byChannel map[string][]*Entry
	byAuthor  map[string][]*Entry
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{byID: map[string]*Entry{}, byChannel: map[string][]*Entry{}, byAuthor: map[string][]*Entry{}}
}

func (s *memStore) Len() int { return len(s.byID) }

func (s *memStore) Get(id string) *Entry { return s.byID[id] }

func (s *memStore) Add(e *Entry) bool {
	if _, ok := s.byID[e.Event.ID]; ok {
		return false
	}
	s.byID[e.Event.ID] = e
	s.all = insertSorted(s.all, e)
	if e.Channel != "" {
		s.byChannel[e.Channel] = insertSorted(s.byChannel[e.Channel], e)
	}
	s.byAuthor[e.Event.PubKey] = insertSorted(s.byAuthor[e.Event.PubKey], e)
	return true
}

// insertSorted keeps list in oldest-first order (the reverse of before), so
// appends are the common case and scans walk backwards.
func insertSorted(list []*Entry, e *Entry) []*Entry {
	i := len(list)
	for i > 0 && before(list[i-1], e) {
		i--
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = e
	return list
}

func (s *memStore) Scan(f *Filter, fn func(*Entry) bool) {
	switch {
	case len(f.IDs) > 0:
		var es []*Entry
		for _, id := range f.IDs {
			if e := s.byID[id]; e != nil {
				es = append(es, e)
			}
		}
		sortNewestFirst(es)
		for _, e := range es {
			if !fn(e) {
				return
			}
		}
	case len(f.channels()) == 1:
		scanBackwards(s.byChannel[f.channels()[0]], f.Until, fn)
	case len(f.channels()) > 1:
		scanMerged(s.byChannel, f.channels(), f.Until, fn)
	case len(f.Authors) == 1:
		scanBackwards(s.byAuthor[f.Authors[0]], f.Until, fn)
	case len(f.Authors) > 1:
		scanMerged(s.byAuthor, f.Authors, f.Until, fn)
	default:
		scanBackwards(s.all, f.Until, fn)
	}
}

// scanBackwards walks list newest first, starting at the last entry whose
// created_at is <= until.
func scanBackwards(list []*Entry, until *int64, fn func(*Entry) bool) {
	end := len(list)
	if until != nil {
		u := *until
		end = sort.Search(len(list), func(i int) bool { return list[i].Event.CreatedAt > u })
	}
	for i := end - 1; i >= 0; i-- {
		if !fn(list[i]) {
			return
		}
	}
}

// scanMerged merges several newest-first walks (a k-way merge, k small).
func scanMerged(index map[string][]*Entry, keys []string, until *int64, fn func(*Entry) bool) {
	type cursor struct {
		list []*Entry
		i    int
	}
	seen := map[string]bool{}
	var cs []*cursor
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		list := index[k]
		end := len(list)
		if until != nil {
			u := *until
			end = sort.Search(len(list), func(i int) bool { return list[i].Event.CreatedAt > u })
		}
		if end > 0 {
			cs = append(cs, &cursor{list, end - 1})
		}
	}
	for len(cs) > 0 {
		best := 0
		for j := 1; j < len(cs); j++ {
			if before(cs[j].list[cs[j].i], cs[best].list[cs[best].i]) {
				best = j
			}
		}
		c := cs[best]
		if !fn(c.list[c.i]) {
			return
		}
		c.i--
		if c.i < 0 {
			cs = append(cs[:best], cs[best+1:]...)
		}
	}
}
