package store

import (
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Signer signs the relay's query-time overlays (39005, 39006, 39007).
// *nostr.Keys satisfies it.
type Signer interface {
	PubKey() string
	Sign(e *nostr.Event) error
}

var _ Signer = (*nostr.Keys)(nil)

// Config tunes a Store. The zero value is usable.
type Config struct {
	// MaxEvents caps retained events (deleted tombstones included); when an
	// Add goes over it the earliest-stored events are evicted. 0: no cap.
	MaxEvents int
	// MaxLimit caps a plain filter's limit and is the limit of a filter
	// without one. 0 means DefaultMaxLimit.
	MaxLimit int
}

// DefaultMaxLimit is buzz-db DEFAULT_MAX_PAGE_LIMIT, the clamp of historical REQs and /query (docs/buzz-protocol.md §8).
const DefaultMaxLimit = 1000

// MaxThreadDepth is the deepest reply Buzz accepts.
const MaxThreadDepth = 100

// Status says what Add did with an event.
type Status int

const (
	Stored            Status = iota // new event stored (Replaced says whether an older version went)
	Duplicate                       // an event with this id is already stored
	Deleted                         // this id, or this address up to created_at, was deleted: refused
	Superseded                      // replaceable/addressable: the stored version is newer (or ties with a lower id)
	Ephemeral                       // kind 20000–29999: never stored
	DuplicateReaction               // the author already reacted to the target with this content
)

var statusNames = [...]string{"stored", "duplicate", "deleted", "superseded", "ephemeral", "duplicate reaction"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// AddResult reports an Add.
type AddResult struct {
	Status   Status
	Channel  string       // the event's channel: its h tag, else (aux kinds) its target's channel; "" = global
	Replaced *nostr.Event // the older replaceable/addressable version this Add removed
}

// Store is the in-memory event store of one community. All methods are safe
// for concurrent use. Stored events are shared, not copied: callers must not
// modify an event after Add or one returned by a read.
type Store struct {
	cfg   Config
	ids   [idShards]idShard
	repl  [replShards]replShard
	seed  maphash.Seed
	parts sync.Map // channel → *partition; "" holds events outside channels

	live     atomic.Int64 // stored, not deleted
	retained atomic.Int64 // stored, deleted tombstones included (what MaxEvents caps)

	evictMu sync.Mutex
	evictQ  []*record // arrival order; only kept when MaxEvents > 0
}

const (
	idShards   = 64
	replShards = 64
)

type idShard struct {
	mu sync.RWMutex
	m  map[string]*record
}

type replShard struct {
	mu           sync.Mutex
	cur          map[string]*record // coordinate → current version (maybe a tombstone)
	deletedUntil map[string]int64   // coordinate → created_at an a-tag deletion covers
}

// record is a stored event with what the store derived at ingest.
// Immutable after Add except where noted.
type record struct {
	ev     *nostr.Event
	at     int64
	stored int64 // when it was stored (unix ns): a replica's lag is measured from it
	id     string
	part   *partition
	coord  string // replaceable coordinate "kind:pubkey:d", or ""
	aux    bool   // reaction, deletion or edit: never a row, indexed in refs

	depth     int32   // 0 top-level, n reply depth, -1 parent unknown (treated as top-level)
	parent    *record // same partition; nil for top-level
	root      *record // thread root; nil for top-level
	broadcast bool
	topLevel  bool

	// Guarded by part.mu.
	thread  *list // descendants, when this record roots a thread
	replies int32 // direct non-deleted replies
	desc    int32 // non-deleted descendants
	linked  bool  // counted in its ancestors' replies/desc and its root's thread
	removed bool  // evicted or replaced: gone from every index and the id map

	deleted atomic.Bool // tombstone: unindexed, still in the id map
}

type tagKey struct {
	name  byte
	value string
}

type reactionKey struct{ target, author, content string }

// partition holds one channel's events and indexes under one RWMutex.
// Why per channel: the hot reads (channel windows, per-channel REQ replay,
// thread windows) touch exactly one channel, and writers to other channels
// never block them; a global RWMutex would serialise every Add behind every
// window read on two cores. Cross-channel reads visit partitions one at a
// time, never holding two partition locks, so lock order cannot cycle.
type partition struct {
	channel string
	mu      sync.RWMutex
	all     list
	kinds   map[int]*list
	authors map[string]*list
	tags    map[tagKey]*list // single-letter tags except h (the partition is the h index)
	top     map[int]*list    // channel-window rows (top-level, non-aux) by kind
	refs    map[string][]*record
	react   map[reactionKey]*record

	cacheMu sync.Mutex
	cache   map[string]*nostr.Event // signed overlays by kind:d, reused while their content holds
}

// New returns an empty store.
func New(cfg Config) *Store {
	if cfg.MaxLimit <= 0 {
		cfg.MaxLimit = DefaultMaxLimit
	}
	s := &Store{cfg: cfg, seed: maphash.MakeSeed()}
	for i := range s.ids {
		s.ids[i].m = map[string]*record{}
	}
	for i := range s.repl {
		s.repl[i].cur = map[string]*record{}
		s.repl[i].deletedUntil = map[string]int64{}
	}
	return s
}

// Len is the number of stored, non-deleted events.
func (s *Store) Len() int { return int(s.live.Load()) }

func hexNibble(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return int(c)
}

func (s *Store) idShard(id string) *idShard {
	if len(id) < 2 {
		return &s.ids[0]
	}
	return &s.ids[(hexNibble(id[0])<<4|hexNibble(id[1]))%idShards]
}

func (s *Store) replShard(coord string) *replShard {
	return &s.repl[maphash.String(s.seed, coord)%replShards]
}

func (s *Store) lookup(id string) *record {
	sh := s.idShard(id)
	sh.mu.RLock()
	r := sh.m[id]
	sh.mu.RUnlock()
	return r
}

func (s *Store) partition(channel string, create bool) *partition {
	if p, ok := s.parts.Load(channel); ok {
		return p.(*partition)
	}
	if !create {
		return nil
	}
	p, _ := s.parts.LoadOrStore(channel, &partition{
		channel: channel,
		kinds:   map[int]*list{},
		authors: map[string]*list{},
		tags:    map[tagKey]*list{},
		top:     map[int]*list{},
		refs:    map[string][]*record{},
		react:   map[reactionKey]*record{},
	})
	return p.(*partition)
}

// Coordinate returns the replaceable address of ev ("kind:pubkey:d", the
// NIP-01 a-tag form; d is "" for kinds 0, 3 and 10000–19999), or "" for
// other kinds.
func Coordinate(ev *nostr.Event) string {
	k := ev.Kind
	switch {
	case k == 0 || k == 3 || (k >= 10000 && k < 20000):
		return strconv.Itoa(k) + ":" + ev.PubKey + ":"
	case nostr.IsAddressable(k):
		return strconv.Itoa(k) + ":" + ev.PubKey + ":" + ev.TagValue("d")
	}
	return ""
}

// isAux reports the kinds NIP-CW calls aux: reactions, deletions, edits.
func isAux(kind int) bool {
	return kind == nostr.KindReaction || kind == nostr.KindDeletion ||
		kind == nostr.KindDeleteEvent || kind == nostr.KindStreamMessageEdit
}

func isDeletion(kind int) bool {
	return kind == nostr.KindDeletion || kind == nostr.KindDeleteEvent
}

// lastE is the value of the last e tag (the NIP-25 reaction target).
func lastE(ev *nostr.Event) string {
	for i := len(ev.Tags) - 1; i >= 0; i-- {
		if t := ev.Tags[i]; len(t) >= 2 && t[0] == "e" {
			return strings.ToLower(t[1])
		}
	}
	return ""
}

// ThreadTags returns the NIP-10 marked parent ("reply") and root ("root")
// e-tag ids of ev. An event is a reply iff parent != "" (NIP-CW: unmarked
// or root-only e tags do not make a reply).
func ThreadTags(ev *nostr.Event) (parent, root string) {
	for _, t := range ev.Tags {
		if len(t) >= 4 && t[0] == "e" {
			switch t[3] {
			case "reply":
				if parent == "" {
					parent = strings.ToLower(t[1])
				}
			case "root":
				if root == "" {
					root = strings.ToLower(t[1])
				}
			}
		}
	}
	return parent, root
}

func isBroadcast(ev *nostr.Event) bool {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "broadcast" && t[1] == "1" {
			return true
		}
	}
	return false
}

// channelOf derives the channel an event belongs to: its first h tag, else
// for aux kinds the channel of the event its last e tag targets.
func (s *Store) channelOf(ev *nostr.Event, aux bool) string {
	if h := ev.TagValue("h"); h != "" {
		return h
	}
	if aux {
		if t := s.lookup(lastE(ev)); t != nil {
			return t.part.channel
		}
	}
	return ""
}

// Add stores ev (dedup by id; replaceable and addressable kinds keep the
// newest version per coordinate, ties to the lowest id; ephemeral kinds are
// never stored; a repeated reaction is refused). Add does not verify
// signatures or authorisation and does not reject bad replies: the server
// checks those first (CheckReply, CheckReaction).
func (s *Store) Add(ev *nostr.Event) AddResult {
	if nostr.IsEphemeral(ev.Kind) {
		return AddResult{Status: Ephemeral, Channel: ev.TagValue("h")}
	}
	r := &record{ev: ev, at: ev.CreatedAt, stored: time.Now().UnixNano(), id: ev.ID, aux: isAux(ev.Kind), coord: Coordinate(ev)}
	channel := s.channelOf(ev, r.aux)
	res := AddResult{Channel: channel}
	if !r.aux {
		if pid, _ := ThreadTags(ev); pid != "" {
			r.depth = -1
			if par := s.lookup(pid); par != nil && par.part.channel == channel {
				r.parent = par
				r.depth = max(par.depth, 0) + 1
				r.root = par.root
				if r.root == nil {
					r.root = par
				}
			}
		}
		r.broadcast = isBroadcast(ev)
		r.topLevel = r.depth <= 0 || (r.depth == 1 && r.broadcast)
	}
	r.part = s.partition(channel, true)
	res.Status, res.Replaced = s.insert(r)
	if res.Status == Stored && s.cfg.MaxEvents > 0 {
		s.evictMu.Lock()
		s.evictQ = append(s.evictQ, r)
		s.evictMu.Unlock()
		s.evict()
	}
	return res
}

// insert does the locked part of Add. Lock order everywhere: replaceable
// shard, then id shard, then one partition; the evictor's queue lock is
// never held while taking another.
func (s *Store) insert(r *record) (Status, *nostr.Event) {
	p, ev := r.part, r.ev
	var rs *replShard
	if r.coord != "" {
		rs = s.replShard(r.coord)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if until, ok := rs.deletedUntil[r.coord]; ok && r.at <= until {
			return Deleted, nil
		}
		if cur := rs.cur[r.coord]; cur != nil {
			if cur.id == r.id {
				if cur.deleted.Load() {
					return Deleted, nil
				}
				return Duplicate, nil
			}
			if !before(r, cur) {
				return Superseded, nil
			}
		}
	}

	sh := s.idShard(r.id)
	sh.mu.Lock()
	if ex := sh.m[r.id]; ex != nil {
		sh.mu.Unlock()
		if ex.deleted.Load() {
			return Deleted, nil
		}
		return Duplicate, nil
	}
	sh.m[r.id] = r
	sh.mu.Unlock()

	p.mu.Lock()
	if ev.Kind == nostr.KindReaction {
		if target := lastE(ev); target != "" {
			k := reactionKey{target, ev.PubKey, ev.Content}
			if p.react[k] != nil {
				p.mu.Unlock()
				sh.mu.Lock()
				delete(sh.m, r.id)
				sh.mu.Unlock()
				return DuplicateReaction, nil
			}
			p.react[k] = r
		}
	}
	p.index(r)
	p.mu.Unlock()
	s.live.Add(1)
	s.retained.Add(1)

	var replaced *nostr.Event
	if rs != nil {
		if old := rs.cur[r.coord]; old != nil {
			if !old.deleted.Load() {
				replaced = old.ev
			}
			s.drop(old)
		}
		rs.cur[r.coord] = r
	}
	return Stored, replaced
}

// Get returns the stored, non-deleted event with this id.
func (s *Store) Get(id string) (*nostr.Event, bool) {
	r := s.lookup(strings.ToLower(id))
	if r == nil || r.deleted.Load() {
		return nil, false
	}
	return r.ev, true
}

// Info is what the store knows about one stored event.
type Info struct {
	Event    *nostr.Event
	Channel  string // "" for events outside channels
	Deleted  bool   // a tombstone: kept so ancestry and re-submission checks still work
	Depth    int    // 0 top-level, n reply depth, -1 reply whose parent was not stored
	Parent   string // thread parent id ("" for top-level)
	Root     string // thread root id ("" for top-level)
	TopLevel bool   // a channel-window row in the default row mode
	StoredAt int64  // when it was stored (unix ns)
}

// Lookup returns what the store knows about id, tombstones included.
func (s *Store) Lookup(id string) (Info, bool) {
	r := s.lookup(strings.ToLower(id))
	if r == nil {
		return Info{}, false
	}
	in := Info{Event: r.ev, Channel: r.part.channel, Deleted: r.deleted.Load(), Depth: int(r.depth), TopLevel: r.topLevel && !r.aux, StoredAt: r.stored}
	if r.parent != nil {
		in.Parent, in.Root = r.parent.id, r.root.id
	}
	return in, true
}
