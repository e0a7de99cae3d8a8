package localrelay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/buzzload/buzzload/modules/nostr"
)

// defaultRowKinds are the top-level row kinds when a window filter names none.
var defaultRowKinds = []int{9, 40002, 40008, 40100, 45001, 45003}

var auxKinds = map[int]bool{kindReaction: true, kindDeletion: true, kindModDelete: true, kindEdit: true}

// windowCursor validates the shared (until, before_id) cursor rule.
func windowCursor(f *Filter, prefix string) (hasCursor bool, msg string) {
	if f.HasBeforeID != (f.Until != nil) {
		return false, prefix + " cursor requires both until and before_id, or neither"
	}
	if f.HasBeforeID && !isHexLen(f.BeforeID, 64) {
		return false, prefix + ": before_id must be a 64-hex event id"
	}
	return f.HasBeforeID, ""
}

func windowLimit(f *Filter, prefix string) (int, string) {
	limit := 50
	if f.Limit != nil {
		limit = *f.Limit
	}
	if limit < 1 || limit > 200 {
		return 0, prefix + ": limit must be between 1 and 200"
	}
	return limit, ""
}

// channelWindow is NIP-CW's top_level page (digest §3.5): rows, then aux,
// then 39005 summaries, then exactly one 39006; [] without 39006 when the
// reader cannot access the channel.
func (r *Relay) channelWindow(c *community, f *Filter, reader string) ([]byte, int, string) {
	if len(f.channels()) != 1 {
		return nil, http.StatusBadRequest, "top_level requires exactly one #h channel"
	}
	hasCursor, msg := windowCursor(f, "top_level")
	if msg != "" {
		return nil, http.StatusBadRequest, msg
	}
	limit, msg := windowLimit(f, "top_level")
	if msg != "" {
		return nil, http.StatusBadRequest, msg
	}
	chID := f.channels()[0]
	kinds := f.Kinds
	if len(kinds) == 0 {
		kinds = defaultRowKinds
	}
	projection := r.cfg.ThreadRepliesInChannel

	c.mu.RLock()
	if !c.canRead(chID, reader) {
		c.mu.RUnlock()
		return []byte("[]"), http.StatusOK, ""
	}
	scan := &Filter{Tags: map[string][]string{"h": {chID}}, Until: f.Until}
	rowFilter := &Filter{Kinds: kinds, Authors: f.Authors, Since: f.Since}
	var rows []*Entry
	c.store.Scan(scan, func(e *Entry) bool {
		if hasCursor && !afterCursor(e, *f.Until, f.BeforeID) {
			return true
		}
		if e.Deleted || e.Channel != chID || !rowFilter.matches(e) || !c.visible(e, reader) {
			return true
		}
		if !(e.Depth == 0 || e.Depth == 1 && e.Broadcast || projection) {
			return true
		}
		rows = append(rows, e)
		return len(rows) <= limit // probe limit+1
	})
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	var aux []*Entry
	if f.IncludeAux {
		aux = c.auxFor(rows, reader)
	}
	type summary struct {
		root string
		st   threadStats
	}
	var sums []summary
	if f.IncludeSummaries {
		for _, e := range rows {
			if st := c.threads[e.Event.ID]; st != nil && st.descendants > 0 {
				sums = append(sums, summary{e.Event.ID, *st})
			}
		}
	}
	c.mu.RUnlock()

	out := appendEntries([]byte{'['}, rows)
	out = appendEntries(out, aux)
	for _, s := range sums {
		content, _ := json.Marshal(map[string]any{
			"reply_count": s.st.replies, "descendant_count": s.st.descendants,
			"last_reply_at": nullableTS(s.st.lastReplyAt), "participants": nonNil(s.st.participants),
		})
		if e := r.signRelay(39005, [][]string{{"e", s.root}, {"d", s.root}, {"h", chID}}, string(content)); e != nil {
			out = appendEvent(out, e)
		}
	}
	d := chID + ":head"
	if hasCursor {
		d = chID + ":" + strconv.FormatInt(*f.Until, 10) + ":" + f.BeforeID
	}
	bounds := map[string]any{"has_more": hasMore, "next_cursor": nil, "thread_replies_in_channel": projection}
	if hasMore {
		last := rows[len(rows)-1].Event
		bounds["next_cursor"] = map[string]any{"created_at": last.CreatedAt, "id": last.ID}
	}
	content, _ := json.Marshal(bounds)
	if e := r.signRelay(39006, [][]string{{"d", d}, {"h", chID}}, string(content)); e != nil {
		out = appendEvent(out, e)
	}
	return append(out, ']'), http.StatusOK, ""
}

// auxFor returns the reactions, deletions and edits targeting rows, then the
// deletions targeting those (the second hop), each hop capped at 1000.
// Caller holds c.mu (read).
func (c *community) auxFor(rows []*Entry, reader string) []*Entry {
	const hopCap = 1000
	var hop1 []*Entry
	for _, row := range rows {
		for _, a := range c.auxByTarget[row.Event.ID] {
			if len(hop1) < hopCap && auxKinds[a.Event.Kind] && c.visible(a, reader) {
				hop1 = append(hop1, a)
			}
		}
	}
	var hop2 []*Entry
	for _, a := range hop1 {
		for _, d := range c.auxByTarget[a.Event.ID] {
			k := d.Event.Kind
			if len(hop2) < hopCap && (k == kindDeletion || k == kindModDelete) && c.visible(d, reader) {
				hop2 = append(hop2, d)
			}
		}
	}
	// A deleted reaction is gone from hop 1, but its deletion still matters
	// to a client that saw the reaction: add deletions of deleted aux too.
	for _, row := range rows {
		for _, a := range c.auxByTarget[row.Event.ID] {
			if !a.Deleted {
				continue
			}
			for _, d := range c.auxByTarget[a.Event.ID] {
				if len(hop2) < hopCap && (d.Event.Kind == kindDeletion || d.Event.Kind == kindModDelete) && c.visible(d, reader) {
					hop2 = append(hop2, d)
				}
			}
		}
	}
	return append(hop1, hop2...)
}

func nullableTS(ts int64) any {
	if ts == 0 {
		return nil
	}
	return ts
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func appendEntries(out []byte, es []*Entry) []byte {
	for _, e := range es {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, e.JSON...)
	}
	return out
}

func appendEvent(out []byte, e *nostr.Event) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	return e.AppendJSON(out)
}

var threadWindowKinds = map[int]bool{9: true, 40002: true, 45001: true, 45003: true}

// threadWindow answers thread_window filters (digest §3.6): per filter the
// thread's replies newest first ("older" direction), optional aux, and one
// relay-signed 39007 bounds event.
func (r *Relay) threadWindow(c *community, filters []*Filter, reader string) ([]byte, int, string) {
	out := []byte{'['}
	for _, f := range filters {
		if len(f.channels()) != 1 {
			return nil, http.StatusBadRequest, "thread_window requires exactly one #h channel"
		}
		if len(f.Tags["e"]) != 1 || !isHexLen(f.Tags["e"][0], 64) {
			return nil, http.StatusBadRequest, "thread_window requires exactly one #e root id"
		}
		if len(f.Kinds) < 1 || len(f.Kinds) > 4 {
			return nil, http.StatusBadRequest, "thread_window: kinds must hold 1-4 of 9, 40002, 45001, 45003"
		}
		for _, k := range f.Kinds {
			if !threadWindowKinds[k] {
				return nil, http.StatusBadRequest, "thread_window: kinds must hold 1-4 of 9, 40002, 45001, 45003"
			}
		}
		depth := 100
		if f.DepthLimit != nil {
			depth = *f.DepthLimit
		}
		if depth < 1 || depth > 100 {
			return nil, http.StatusBadRequest, "thread_window: depth_limit must be between 1 and 100"
		}
		hasCursor, msg := windowCursor(f, "thread_window")
		if msg != "" {
			return nil, http.StatusBadRequest, msg
		}
		limit, msg := windowLimit(f, "thread_window")
		if msg != "" {
			return nil, http.StatusBadRequest, msg
		}
		chID, root := f.channels()[0], f.Tags["e"][0]

		c.mu.RLock()
		if !c.canRead(chID, reader) {
			c.mu.RUnlock()
			continue
		}
		list := c.replies[root]
		var rows []*Entry
		kindSet := &Filter{Kinds: f.Kinds}
		for i := len(list) - 1; i >= 0 && len(rows) <= limit; i-- {
			e := list[i]
			if hasCursor && !afterCursor(e, *f.Until, f.BeforeID) {
				continue
			}
			if e.Deleted || e.Channel != chID || e.Depth > depth || !kindSet.matches(e) || !c.visible(e, reader) {
				continue
			}
			rows = append(rows, e)
		}
		hasMore := len(rows) > limit
		if hasMore {
			rows = rows[:limit]
		}
		var aux []*Entry
		if f.IncludeAux {
			aux = c.auxFor(rows, reader)
		}
		c.mu.RUnlock()

		out = appendEntries(out, rows)
		out = appendEntries(out, aux)
		kinds := append([]int(nil), f.Kinds...)
		sort.Ints(kinds)
		var cursor any
		if hasCursor {
			cursor = map[string]any{"created_at": *f.Until, "id": f.BeforeID}
		}
		canon, _ := json.Marshal([]any{1, "older", c.host, reader, chID, root, limit, depth, kinds, cursor, f.IncludeAux})
		sum := sha256.Sum256(canon)
		bounds := map[string]any{"version": 1, "direction": "older", "has_more": hasMore, "next_cursor": nil}
		if hasMore {
			last := rows[len(rows)-1].Event
			bounds["next_cursor"] = map[string]any{"created_at": last.CreatedAt, "id": last.ID}
		}
		content, _ := json.Marshal(bounds)
		if e := r.signRelay(39007, [][]string{{"d", "tw:1:" + hex.EncodeToString(sum[:])}, {"h", chID}, {"e", root}}, string(content)); e != nil {
			out = appendEvent(out, e)
		}
	}
	return append(out, ']'), http.StatusOK, ""
}

// readStateSnapshot answers {"kinds":[30078],"authors":[V],"read_state_snapshot":1}
// with the reader's current 30078 events, one per d (desktop-requests §5.8).
func (r *Relay) readStateSnapshot(c *community, reader string) map[string]any {
	c.mu.RLock()
	var es []*Entry
	c.store.Scan(&Filter{Authors: []string{reader}}, func(e *Entry) bool {
		if !e.Deleted && e.Event.Kind == 30078 && e.Event.PubKey == reader && len(es) < 4096 {
			es = append(es, e)
		}
		return true
	})
	c.mu.RUnlock()
	h := sha256.New()
	events := make([]json.RawMessage, 0, len(es))
	for _, e := range es {
		h.Write([]byte(e.Event.ID))
		events = append(events, json.RawMessage(e.JSON))
	}
	return map[string]any{
		"read_state_snapshot": 1, "complete": true, "pubkey": reader, "community_id": c.id,
		"snapshot_id": fmt.Sprintf("%x", h.Sum(nil)), "events": events,
	}
}
