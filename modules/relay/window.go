package relay

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// readStateSnapshot answers {"kinds":[30078],"authors":[V],"read_state_snapshot":1}
// with the reader's current 30078 events, one per d coordinate (at most
// 4096), as the object the desktop app expects (docs/desktop-requests.md §5.8).
func (r *Relay) readStateSnapshot(c *community, reader string) map[string]any {
	limit := 4096
	f := store.Filter{Kinds: []int{nostr.KindReadState}, Authors: []string{reader}, Limit: &limit}
	es := c.store().QueryN([]store.Filter{f}, c.reader(reader), limit)
	h := sha256.New()
	events := make([]json.RawMessage, 0, len(es))
	for _, e := range es {
		h.Write([]byte(e.ID))
		events = append(events, json.RawMessage(e.AppendJSON(nil)))
	}
	return map[string]any{
		"read_state_snapshot": 1, "complete": true, "pubkey": reader, "community_id": c.id,
		"snapshot_id": fmt.Sprintf("%x", h.Sum(nil)), "events": events,
	}
}

// appendEvents appends events as a JSON array.
func appendEvents(out []byte, es []*nostr.Event) []byte {
	out = append(out, '[')
	for i, e := range es {
		if i > 0 {
			out = append(out, ',')
		}
		out = e.AppendJSON(out)
	}
	return append(out, ']')
}
