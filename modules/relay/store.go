package relay

import "github.com/buzzload/buzzload/modules/nostr"

// entry is an event on its way to live subscribers: serialised once, then
// shared by every delivery.
type entry struct {
	Event   *nostr.Event
	JSON    []byte
	Channel string // the store's channel for the event ("" = global)

	// noticeChannel is the h of a relay membership notice (44100/44101).
	// Notices are p-gated and read with #p:[self] and no #h, so they go to
	// global subscriptions, and also to that channel's subscriptions.
	noticeChannel string
}

func newEntry(e *nostr.Event, channel string) *entry {
	return &entry{Event: e, JSON: e.AppendJSON(make([]byte, 0, 256+len(e.Content))), Channel: channel}
}
