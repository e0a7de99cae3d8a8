// Package store is the in-memory event store of the embedded Buzz-compatible
// relay: one Store per community, no networking, no authentication. The
// server authenticates, authorises and verifies signatures; the store
// indexes, answers reads and builds the relay-signed read overlays (39005,
// 39006, 39007) through the Signer the server passes in a Reader.
//
// # API
//
//	New(Config) *Store
//	(*Store).Add(*nostr.Event) AddResult                 store: dedup, replaceable, ephemeral, reaction dedup
//	(*Store).Get(id) (*nostr.Event, bool)                non-deleted event by id
//	(*Store).Lookup(id) (Info, bool)                     channel, thread depth/parent/root, tombstone flag
//	(*Store).Len() int                                   stored, non-deleted events
//	(*Store).CheckReply(*nostr.Event) (int, error)       reply validation before Add (depth <= 100)
//	(*Store).CheckReaction(*nostr.Event) (*nostr.Event, error)  reaction validation before Add
//	(*Store).Delete(id) (*nostr.Event, bool)             tombstone one event
//	(*Store).DeleteAddress(coordinate, until) (*nostr.Event, bool)
//	(*Store).ApplyDeletion(del *nostr.Event, admin bool) []string  NIP-09 / 9005 targets
//	(*Store).Query([]Filter, Reader) []*nostr.Event      REQ replay, plain filters
//	(*Store).QueryN([]Filter, Reader, maxLimit) []*nostr.Event
//	(*Store).Count([]Filter, Reader) (int, error)        COUNT, POST /count
//	(*Store).BridgeQuery([]Filter, Reader) ([]*nostr.Event, error)  POST /query, every mode
//	(*Store).ChannelWindow(Filter, Reader) (Window, error)   top_level
//	(*Store).ThreadWindow(Filter, Reader) (Window, error)    thread_window
//	ParseFilters([]byte) ([]Filter, error), ParseFilter([]byte, index) (Filter, error)
//	(*Filter).Matches(ev), (*Filter).MatchesInChannel(ev, channel)   live fan-out
//	ValidateBridge([]Filter) error                       /query 400s (*RequestError)
//	Coordinate(ev) string, ThreadTags(ev) (parent, root string)
//
// Errors: *FilterError (bad JSON: filter index, key, reason), *RequestError
// (a /query 400 whose Msg is Buzz's wording), ErrCountTooBroad and the
// Err* reply/reaction refusals whose text is Buzz's OK reason.
//
// # Decisions
//
// Where docs/buzz-protocol.md is silent or unsure, the
// store decides as follows, consistently.
//
// Order and cursors. Every read orders by created_at DESC, id ASC. The cursor
// (until, before_id) keeps created_at < until, or created_at == until and id
// > before_id, on every path including plain filters and REQ (Matches applies
// it whenever both are set). A nil filter list is no constraint; an empty
// JSON list ([]) matches nothing.
//
// Channels. An event belongs to one channel: its first h tag, else, for aux
// kinds (7, 5, 9005, 40003), the channel of the event its last e tag
// targets (a reaction without h lands in its target's channel and matches
// "#h" there, as AddResult.Channel reports for fan-out), else none ("").
//
// Replaceable kinds 0, 3, 10000–19999 key on (kind, pubkey), addressable
// 30000–39999 on (kind, pubkey, d) with a missing d tag meaning "". The
// newest created_at wins; a tie keeps the lowest id. The replaced version
// leaves the store entirely (Add reports it).
//
// Deletion leaves a tombstone: the event disappears from every read but
// stays in the id map, so re-submitting it is refused (Deleted), replies
// keep their ancestry, a thread window on a deleted root still serves its
// replies, and a deleted reaction's id still pulls its deletion into the aux
// closure. Deleting a reaction frees (author, target, content) again. An
// a-tag deletion also refuses later versions with created_at <= the
// deletion's. ApplyDeletion never deletes deletions.
//
// Threads follow NIP-CW: an event is a reply iff it has an e tag marked
// "reply" (its parent); unmarked or root-only e tags do not make replies.
// Depth is the parent's depth + 1 (root 0); the thread root is the parent's
// root. A reply whose parent is not stored gets depth -1 and is treated as
// top-level (NIP-CW's fail-open rule). Aux kinds are never thread members.
// CheckReply accepts a deleted (tombstoned) parent.
//
// Channel window rows (default mode): depth 0 or -1, or depth 1 with
// ["broadcast","1"]; with Reader.ThreadRepliesInChannel every event of the
// channel. Without "kinds" the aux kinds are never rows. limit is clamped to
// 1–200 (default 50). The aux closure is hop 1 (7, 5, 9005, 40003 whose e tag
// targets a row) and hop 2 (5, 9005 targeting hop-1 events), each capped at
// 1000, deleted aux omitted. A 39005 goes with every row that has
// non-deleted descendants: reply_count = direct replies, descendant_count =
// the subtree, last_reply_at = its newest member, participants = up to 10
// distinct reply authors newest first (the row's author only if they
// replied). Inaccessible channels serve nothing (no 39006); an accessible
// channel with no events serves a 39006 with has_more false.
//
// Overlays are signed at read time with created_at = Reader.Now, and the
// last one per (kind, d) is reused while its content, tags and signer are
// unchanged, so a steady page costs no Schnorr signature; a re-signed
// overlay never gets an older created_at than the one it supersedes.
//
// Thread window: validation and messages follow upstream thread_window.rs
// (strict field set, limit 1–200, depth_limit 1–100, kinds from 9, 40002,
// 45001, 45003). The root itself is not returned; the aux closure covers the
// root and the rows. The 39007 d tag binds Reader.Host and Reader.Pubkey,
// which the server must fill in.
//
// The legacy thread read (depth_limit without thread_window) returns the
// root's replies oldest first, the exact reverse of window order, after the
// (thread_cursor, thread_cursor_id) cursor; limit default 100, max 500.
//
// Search (NIP-50): every whitespace-separated term must occur in the content
// ignoring case ("search_mode":"prefix": must start a word); results are by
// recency, not relevance; limit default 100, max 500; "page" is an offset of
// page*limit. feed_types is not implemented: ValidateBridge refuses it.
//
// Limits: a plain filter's limit is clamped to Config.MaxLimit (default
// 1000, buzz-db DEFAULT_MAX_PAGE_LIMIT, the newest Buzz clamp); a filter without limit gets MaxLimit;
// limit 0 returns nothing. Count ignores limits and refuses a filter with
// none of ids, authors, kinds or a tag filter (ErrCountTooBroad).
//
// Eviction (Config.MaxEvents): the earliest-stored events go first
// (arrival order, which is what bounds memory in a soak); tombstones count
// towards the cap until evicted.
//
// # Concurrency
//
// Each channel is a partition with its own RWMutex over its indexes (all
// events, by kind, by author, by single-letter tag, window rows by kind,
// aux refs by target, reactions, per-root thread lists). The hot reads — a
// channel window, a thread window, a per-channel REQ replay — lock exactly
// one partition for reading, so they never wait for writers to other
// channels; a global RWMutex would serialise every Add behind every read.
// The id map and the replaceable registry are sharded 64 ways, partitions
// live in a sync.Map. Lock order is replaceable shard → id shard → one
// partition; no code holds two partitions at once (cross-channel reads take
// them one after another and merge), so the order cannot cycle. Overlays are
// signed after the partition lock is released. The eviction queue's mutex
// exists only with MaxEvents > 0 and is held for a slice append or pop.
//
// Access: Reader.CanRead is checked once per channel, Reader.Visible once
// per candidate event (p-gated and author-only kinds); both apply before
// limits and probes, so pages stay full and has_more stays true to the
// reader. Visible runs under a partition lock and must not call the Store.
//
// Events are shared, not copied: the server must not modify an event after
// Add, nor any event a read returns.
package store
