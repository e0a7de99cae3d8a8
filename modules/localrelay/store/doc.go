// Package store is the in-memory event store of the embedded Buzz-compatible
// relay: one Store per community, no networking, no authentication. The
// server authenticates, authorises and verifies; the store indexes, answers
// reads and builds the relay-signed read overlays.
//
// # API
//
//	New(Config) *Store
//	(*Store).Add(*nostr.Event) AddResult          store (dedup, replaceable, ephemeral, reaction dedup)
//	(*Store).Get(id) (*nostr.Event, bool)         non-deleted event by id
//	(*Store).Lookup(id) (Info, bool)              channel, thread depth/parent/root, tombstone flag
//	(*Store).CheckReply(ev) (depth, error)        parent exists, same channel, root agrees, depth <= 100
//	(*Store).CheckReaction(ev) (*nostr.Event, error)  target exists, not a duplicate
//	(*Store).Delete(id), DeleteAddress(coord, until), ApplyDeletion(del, admin)
//	(*Store).Query([]Filter, Reader) []*nostr.Event   REQ replay and plain filters (NIP-01)
//	(*Store).Count([]Filter, Reader) (int, error)     COUNT, POST /count
//	(*Store).BridgeQuery([]Filter, Reader) ([]*nostr.Event, error)  POST /query, every mode
//	(*Store).ChannelWindow(Filter, Reader) (Window, error)   NIP-CW top_level
//	(*Store).ThreadWindow(Filter, Reader) (Window, error)    NIP-CW thread_window
//	ParseFilters(body) / ParseFilter(raw, index)  JSON decoding with *FilterError
//	ValidateBridge([]Filter) error                /query 400s as *RequestError
//
// Decisions the digest leaves open are documented where they are made and
// summarised in the package tests' names.
package store
