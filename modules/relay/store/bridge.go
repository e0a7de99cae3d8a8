package store

import (
	"slices"
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
)

// MaxThreadWindows is how many thread_window filters one /query may carry.
const MaxThreadWindows = 4

// ValidateBridge applies the request-level /query rules (HTTP 400,
// *RequestError) that do not depend on stored data: thread windows (at
// most four, not mixed with other filters, strict fields), search not mixed
// with non-search filters, the before_id cursor rules, channel-window rules
// and the legacy thread read's single root. BridgeQuery calls it.
func ValidateBridge(filters []Filter) error {
	threads, searches := 0, 0
	for i := range filters {
		f := &filters[i]
		if f.ThreadWindow { // absent or false keeps the legacy paths
			threads++
			if threads > MaxThreadWindows {
				return badRequest("at most four thread windows per query")
			}
		}
		if f.Search != "" {
			searches++
		}
	}
	if threads > 0 && threads < len(filters) {
		return badRequest("thread_window filters cannot be mixed with other filters")
	}
	if searches > 0 && searches < len(filters) {
		return badRequest("mixed search and non-search filters not supported")
	}
	for i := range filters {
		f := &filters[i]
		switch {
		case threads > 0:
			if _, err := parseThreadWindow(f); err != nil {
				return err
			}
		case f.TopLevel:
			if err := validateChannelWindow(f); err != nil {
				return err
			}
		default:
			if f.BeforeID != "" && f.Until == nil {
				return badRequest("before_id requires until to be set")
			}
			if f.BeforeID != "" && !isHex64(f.BeforeID) {
				return badRequest("before_id must be a 64-char hex event id")
			}
			if f.DepthLimit != nil {
				if len(f.Tags["e"]) != 1 {
					return badRequest("depth_limit requires exactly one #e root")
				}
				if *f.DepthLimit < 1 || *f.DepthLimit > MaxThreadDepth {
					return badRequest("depth_limit must be an integer in 1..=%d", MaxThreadDepth)
				}
			}
			if len(f.FeedTypes) > 0 {
				return badRequest("feed_types is not supported by this relay")
			}
		}
	}
	return nil
}

// BridgeQuery answers POST /query after the server has authenticated the
// request and handled what is not stored data (presence synthesis,
// read_state_snapshot). It validates (ValidateBridge) and then serves each
// filter by its mode:
//   - top_level: ChannelWindow (rows, aux, 39005s, one 39006; nothing for an
//     inaccessible channel);
//   - thread_window: ThreadWindow (all filters must be thread windows);
//   - depth_limit without thread_window: the legacy thread read;
//   - search: NIP-50 newest first, limit default 100 (max 500), page offset;
//   - anything else: Query semantics (limit capped at MaxLimit), plus the
//     aux closure of the matched events when include_aux is set.
//
// The answer is the flat event array, windows in filter order after the
// union of the plain filters.
func (s *Store) BridgeQuery(filters []Filter, rd Reader) ([]*nostr.Event, error) {
	if err := ValidateBridge(filters); err != nil {
		return nil, err
	}
	var plain []*record
	var aux, tail []*nostr.Event
	auxWanted := false
	for i := range filters {
		f := filters[i]
		f.prepare()
		switch {
		case f.ThreadWindow:
			w, err := s.ThreadWindow(f, rd)
			if err != nil {
				return nil, err
			}
			tail = append(tail, w.Events()...)
		case f.TopLevel:
			w, err := s.ChannelWindow(f, rd)
			if err != nil {
				return nil, err
			}
			tail = append(tail, w.Events()...)
		case f.DepthLimit != nil:
			tail = append(tail, s.legacyThread(&f, &rd)...)
		case f.Search != "":
			limit := s.limitFor(&f, SearchDefaultLimit, SearchMaxLimit)
			skip := 0
			if f.Page != nil {
				skip = *f.Page * limit
			}
			recs := s.queryOne(&f, &rd, skip+limit)
			if skip < len(recs) {
				plain = append(plain, recs[skip:]...)
			}
		default:
			plain = append(plain, s.queryOne(&f, &rd, s.limitFor(&f, 0, s.cfg.MaxLimit))...)
			auxWanted = auxWanted || f.IncludeAux
		}
	}
	if len(filters) > 1 {
		plain = uniqueSorted(plain)
	}
	if auxWanted {
		aux = events(s.auxFor(plain, &rd))
	}
	out := append(events(plain), aux...)
	return append(out, tail...), nil
}

// auxFor returns the aux closure of rows, partition by partition, without
// events already among rows.
func (s *Store) auxFor(rows []*record, rd *Reader) []*record {
	byPart := map[*partition][]string{}
	var order []*partition
	in := make(map[*record]bool, len(rows))
	for _, r := range rows {
		in[r] = true
		if _, ok := byPart[r.part]; !ok {
			order = append(order, r.part)
		}
		byPart[r.part] = append(byPart[r.part], r.id)
	}
	var out []*record
	for _, p := range order {
		p.mu.RLock()
		for _, a := range p.auxClosure(byPart[p], rd.keep()) {
			if !in[a] {
				out = append(out, a)
			}
		}
		p.mu.RUnlock()
	}
	return out
}

// legacyThread is the pre-thread-window read: the replies of the single #e
// root (optionally checked against #h) at depth <= depth_limit, matching
// kinds, OLDEST first — the exact reverse of window order — after the
// (thread_cursor, thread_cursor_id) cursor; limit default 100, max 500;
// then their aux closure when include_aux is set.
func (s *Store) legacyThread(f *Filter, rd *Reader) []*nostr.Event {
	root := s.lookup(strings.ToLower(f.Tags["e"][0]))
	if root == nil || !rd.readable(root.part.channel) {
		return nil
	}
	if hs, ok := f.Tags["h"]; ok && !slices.Contains(hs, root.part.channel) {
		return nil
	}
	limit := s.limitFor(f, LegacyDefaultLimit, LegacyMaxLimit)
	p := root.part
	p.mu.RLock()
	defer p.mu.RUnlock()
	th := root.thread
	if th == nil || root.removed || limit == 0 {
		return nil
	}
	at := th.end()
	if f.ThreadCursor != nil {
		ts, id := *f.ThreadCursor, f.ThreadCursorID
		// Records after the cursor in oldest-first order are a prefix of
		// rank order; start just before its end and walk backwards.
		at = th.seek(func(r *record) bool { return !(r.at > ts || (r.at == ts && r.id < id)) })
	}
	var rows []*record
	for r := th.prev(&at); r != nil && len(rows) < limit; r = th.prev(&at) {
		if int(r.depth) > *f.DepthLimit || (f.Kinds != nil && !slices.Contains(f.Kinds, r.ev.Kind)) || !rd.visible(r) {
			continue
		}
		rows = append(rows, r)
	}
	out := events(rows)
	if f.IncludeAux {
		out = append(out, events(p.auxClosure(ids(rows), rd.keep()))...)
	}
	return out
}
