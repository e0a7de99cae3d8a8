package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
)

// RequestError is a /query request Buzz answers with HTTP 400
// {"error": Msg}. Msg is Buzz's wording where docs/buzz-protocol.md or the upstream
// source gives it.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

func badRequest(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}

// ErrNoSigner is returned by windows when Reader.Signer is nil.
var ErrNoSigner = errors.New("store: a window needs the relay signer (Reader.Signer)")

// Window limits (NIP-CW, thread_window.rs).
const (
	WindowDefaultLimit = 50
	WindowMaxLimit     = 200
	ThreadDefaultLimit = 50
	ThreadMaxLimit     = 200
	AuxHopCap          = 1000 // events per aux-closure hop
	SummaryMaxAuthors  = 10
	LegacyDefaultLimit = 100
	LegacyMaxLimit     = 500
	SearchDefaultLimit = 100
	SearchMaxLimit     = 500
)

// Cursor is a position in (created_at DESC, id ASC) order.
type Cursor struct {
	CreatedAt int64  `json:"created_at"`
	ID        string `json:"id"`
}

// Window is one served channel-window or thread-window page. Served false
// means the reader cannot access the channel (or the thread root is not in
// it): the wire answer is [] with no bounds event.
type Window struct {
	Served    bool
	Rows      []*nostr.Event // newest first
	Aux       []*nostr.Event // reactions, deletions, edits of the rows (hop 1), deletions of those (hop 2)
	Summaries []*nostr.Event // 39005, one per row with replies (channel window, include_summaries)
	Bounds    *nostr.Event   // exactly one 39006 (channel) or 39007 (thread) when served
	HasMore   bool
	Next      *Cursor // nil exactly when !HasMore
}

// Events is the wire array: rows, aux, summaries, then the bounds event.
func (w *Window) Events() []*nostr.Event {
	if !w.Served {
		return []*nostr.Event{}
	}
	out := make([]*nostr.Event, 0, len(w.Rows)+len(w.Aux)+len(w.Summaries)+1)
	out = append(out, w.Rows...)
	out = append(out, w.Aux...)
	out = append(out, w.Summaries...)
	return append(out, w.Bounds)
}

// rowKinds are the conversation kinds a thread window serves.
var rowKinds = []int{nostr.KindStreamMessage, nostr.KindStreamMessageV2, nostr.KindForumPost, nostr.KindForumComment}

// validateChannelWindow applies NIP-CW's request rules; the messages are Buzz's.
func validateChannelWindow(f *Filter) error {
	if hs := f.Tags["h"]; len(hs) != 1 {
		return badRequest("top_level requires exactly one #h channel")
	}
	if (f.Until == nil) != (f.BeforeID == "") {
		return badRequest("top_level cursor requires both until and before_id, or neither")
	}
	if f.BeforeID != "" && !isHex64(f.BeforeID) {
		return badRequest("top_level: before_id must be a 64-hex event id")
	}
	return nil
}

// ChannelWindow serves a NIP-CW channel window (top_level:true): the
// channel's rows newest first after the cursor, limit clamped to 1–200
// (default 50) and probed with limit+1 after access, deletion, row mode and
// kinds, then the aux closure (include_aux), 39005 summaries
// (include_summaries) and exactly one 39006.
//
// Rows: in the default mode, events of depth 0 (or unknown) and depth-1
// replies tagged ["broadcast","1"]; with rd.ThreadRepliesInChannel every
// event of the channel. Without "kinds", aux kinds (7, 5, 9005, 40003) are
// never rows.
func (s *Store) ChannelWindow(f Filter, rd Reader) (Window, error) {
	if err := validateChannelWindow(&f); err != nil {
		return Window{}, err
	}
	if rd.Signer == nil {
		return Window{}, ErrNoSigner
	}
	channel := f.Tags["h"][0]
	if !rd.readable(channel) {
		return Window{}, nil
	}
	limit := WindowDefaultLimit
	if f.Limit != nil {
		limit = min(max(*f.Limit, 1), WindowMaxLimit)
	}
	var from func(*record) bool
	d := channel + ":head"
	if f.Until != nil {
		bid := strings.ToLower(f.BeforeID)
		from = afterCursor(*f.Until, bid)
		d = channel + ":" + strconv.FormatInt(*f.Until, 10) + ":" + bid
	}
	w := Window{Served: true}
	var sums []summary
	p := s.partition(channel, false)
	if p != nil {
		p.mu.RLock()
		rows := mergeNewest(p.rowLists(f.Kinds, rd.ThreadRepliesInChannel), from, limit+1, rd.keep())
		if len(rows) > limit {
			rows = rows[:limit]
			last := rows[limit-1]
			w.HasMore, w.Next = true, &Cursor{last.at, last.id}
		}
		w.Rows = events(rows)
		if f.IncludeAux {
			w.Aux = events(p.auxClosure(ids(rows), rd.keep()))
		}
		if f.IncludeSummaries {
			sums = p.summaries(rows)
		}
		p.mu.RUnlock()
	}
	now := rd.now()
	for _, sm := range sums {
		ev, err := p.overlay(rd.Signer, now, nostr.KindThreadSummary,
			[][]string{{"e", sm.id}, {"d", sm.id}, {"h", channel}}, sm.json())
		if err != nil {
			return Window{}, err
		}
		w.Summaries = append(w.Summaries, ev)
	}
	content := `{"has_more":false,"next_cursor":null,"thread_replies_in_channel":` + strconv.FormatBool(rd.ThreadRepliesInChannel) + `}`
	if w.HasMore {
		content = `{"has_more":true,"next_cursor":` + w.Next.json() + `,"thread_replies_in_channel":` + strconv.FormatBool(rd.ThreadRepliesInChannel) + `}`
	}
	var err error
	w.Bounds, err = p.overlay(rd.Signer, now, nostr.KindWindowBounds, [][]string{{"d", d}, {"h", channel}}, content)
	if err != nil {
		return Window{}, err
	}
	return w, nil
}

func (c *Cursor) json() string {
	return `{"created_at":` + strconv.FormatInt(c.CreatedAt, 10) + `,"id":` + string(nostr.AppendString(nil, c.ID)) + `}`
}

func ids(recs []*record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.id
	}
	return out
}

// rowLists returns the per-kind lists that hold window rows.
func (p *partition) rowLists(kinds []int, projection bool) []*list {
	src := p.top
	if projection {
		src = p.kinds
	}
	var out []*list
	if kinds != nil {
		for i, k := range kinds {
			if l := src[k]; l != nil && !slices.Contains(kinds[:i], k) {
				out = append(out, l)
			}
		}
		return out
	}
	for k, l := range src {
		if !isAux(k) {
			out = append(out, l)
		}
	}
	return out
}

// mergeNewest takes up to n records from lists in rank order, starting after
// the position from (nil: head) and keeping those keep accepts (nil: all).
func mergeNewest(lists []*list, from func(*record) bool, n int, keep func(*record) bool) []*record {
	at := make([]pos, len(lists))
	if from != nil {
		for i, l := range lists {
			at[i] = l.seek(from)
		}
	}
	var out []*record
	for len(out) < n {
		bi := -1
		var best *record
		for i, l := range lists {
			if r := l.at(&at[i]); r != nil && (best == nil || before(r, best)) {
				bi, best = i, r
			}
		}
		if best == nil {
			break
		}
		at[bi].i++
		if keep == nil || keep(best) {
			out = append(out, best)
		}
	}
	return out
}

// auxClosure: hop 1, aux events whose e tag targets one of targets; hop 2,
// deletions of hop-1 events. Deleted aux events are left out but their ids
// still feed hop 2, so a removed reaction arrives with its deletion; events
// keep refuses (nil: none) are left out entirely. Each hop is capped at
// AuxHopCap. p.mu must be held.
func (p *partition) auxClosure(targets []string, keep func(*record) bool) []*record {
	seen := map[*record]bool{}
	var out []*record
	hop := func(ts []string, ok func(int) bool) []string {
		var next []string
		for _, t := range ts {
			for _, r := range p.refs[t] {
				if len(next) >= AuxHopCap {
					return next
				}
				if seen[r] || r.removed || !ok(r.ev.Kind) || (keep != nil && !keep(r)) {
					continue
				}
				seen[r] = true
				next = append(next, r.id)
				if !r.deleted.Load() {
					out = append(out, r)
				}
			}
		}
		return next
	}
	hop(hop(targets, isAux), isDeletion)
	return out
}

// summary is a 39005 computed under the partition lock, signed after it.
type summary struct {
	id           string
	replies      int
	desc         int
	last         int64
	hasLast      bool
	participants []string
}

// json renders the 39005 content in docs/buzz-protocol.md's field order.
func (sm *summary) json() string {
	b := []byte(`{"reply_count":`)
	b = strconv.AppendInt(b, int64(sm.replies), 10)
	b = append(b, `,"descendant_count":`...)
	b = strconv.AppendInt(b, int64(sm.desc), 10)
	b = append(b, `,"last_reply_at":`...)
	if sm.hasLast {
		b = strconv.AppendInt(b, sm.last, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"participants":[`...)
	for i, pk := range sm.participants {
		if i > 0 {
			b = append(b, ',')
		}
		b = nostr.AppendString(b, pk)
	}
	return string(append(b, "]}"...))
}

// summaries builds one summary per row with descendants: reply_count is its
// direct replies, descendant_count its whole subtree, last_reply_at the
// newest descendant, participants up to 10 distinct reply authors newest
// first (the row's own author only if they replied). p.mu must be held.
func (p *partition) summaries(rows []*record) []summary {
	var out []summary
	for _, row := range rows {
		if row.desc <= 0 {
			continue
		}
		th, sub := row.thread, false
		if row.root != nil {
			th, sub = row.root.thread, true
		}
		sm := summary{id: row.id, replies: int(row.replies), desc: int(row.desc), participants: []string{}}
		if th != nil {
			found := 0
			th.each(func(m *record) bool {
				if sub && !descendantOf(m, row) {
					return true
				}
				found++
				if !sm.hasLast {
					sm.last, sm.hasLast = m.at, true
				}
				if !slices.Contains(sm.participants, m.ev.PubKey) {
					sm.participants = append(sm.participants, m.ev.PubKey)
				}
				return len(sm.participants) < SummaryMaxAuthors && found < sm.desc
			})
		}
		out = append(out, sm)
	}
	return out
}

func descendantOf(m, row *record) bool {
	for a := m.parent; a != nil; a = a.parent {
		if a == row {
			return true
		}
	}
	return false
}

const overlayCacheMax = 4096

// overlay signs a relay overlay, reusing the last one signed for the same
// kind and d tag while its content, tags and signer are unchanged: Schnorr
// signing (~50 µs) would otherwise dominate every window read. A re-signed
// overlay never goes back in time, so "latest created_at wins" caches hold.
// p may be nil (no cache).
func (p *partition) overlay(sg Signer, now int64, kind int, tags [][]string, content string) (*nostr.Event, error) {
	key := strconv.Itoa(kind) + ":" + tags[0][1]
	var prev *nostr.Event
	if p != nil {
		p.cacheMu.Lock()
		prev = p.cache[key]
		p.cacheMu.Unlock()
		if prev != nil && prev.Content == content && prev.PubKey == sg.PubKey() && tagsEqual(prev.Tags, tags) {
			return prev, nil
		}
	}
	ev := &nostr.Event{CreatedAt: now, Kind: kind, Tags: tags, Content: content}
	if prev != nil && prev.CreatedAt > now {
		ev.CreatedAt = prev.CreatedAt
	}
	if err := sg.Sign(ev); err != nil {
		return nil, fmt.Errorf("store: sign kind %d overlay: %w", kind, err)
	}
	if p != nil {
		p.cacheMu.Lock()
		if p.cache == nil || len(p.cache) >= overlayCacheMax {
			p.cache = map[string]*nostr.Event{}
		}
		p.cache[key] = ev
		p.cacheMu.Unlock()
	}
	return ev, nil
}

func tagsEqual(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// threadRequest is a validated thread_window filter.
type threadRequest struct {
	channel, root string
	limit, depth  int
	kinds         []int
	cursor        *Cursor
	includeAux    bool
}

var threadFields = []string{"thread_window", "#h", "#e", "kinds", "limit", "depth_limit", "until", "before_id", "include_aux"}

// parseThreadWindow applies thread_window.rs's strict rules (messages are
// upstream's). A filter built in Go (no JSON keys) is checked by its fields.
func parseThreadWindow(f *Filter) (threadRequest, error) {
	var q threadRequest
	for k := range f.keys {
		if !slices.Contains(threadFields, k) {
			return q, badRequest("thread_window: unsupported or conflicting filter field")
		}
	}
	if f.keys == nil && (f.IDs != nil || f.Authors != nil || f.Since != nil || f.Search != "" || f.TopLevel ||
		f.IncludeSummaries || f.Page != nil || f.ThreadCursor != nil || f.ThreadCursorID != "" || len(f.Tags) > 2) {
		return q, badRequest("thread_window: unsupported or conflicting filter field")
	}
	if !f.ThreadWindow {
		return q, badRequest("thread_window must be true")
	}
	hs := f.Tags["h"]
	if len(hs) != 1 {
		return q, badRequest("thread_window requires exactly one #h")
	}
	if !isUUID(hs[0]) {
		return q, badRequest("thread_window: #h must be a channel UUID")
	}
	q.channel = strings.ToLower(hs[0])
	es := f.Tags["e"]
	if len(es) != 1 {
		return q, badRequest("thread_window requires exactly one #e")
	}
	if !isHex64(es[0]) {
		return q, badRequest("thread_window: expected a full 64-hex event id")
	}
	q.root = strings.ToLower(es[0])
	q.limit = ThreadDefaultLimit
	if f.Limit != nil {
		if *f.Limit < 1 || *f.Limit > ThreadMaxLimit {
			return q, badRequest("thread_window: limit must be an integer in 1..=%d", ThreadMaxLimit)
		}
		q.limit = *f.Limit
	}
	q.depth = MaxThreadDepth
	if f.DepthLimit != nil {
		if *f.DepthLimit < 1 || *f.DepthLimit > MaxThreadDepth {
			return q, badRequest("thread_window: depth_limit must be an integer in 1..=%d", MaxThreadDepth)
		}
		q.depth = *f.DepthLimit
	}
	if len(f.Kinds) == 0 || len(f.Kinds) > len(rowKinds) {
		return q, badRequest("thread_window requires nonempty conversation kinds")
	}
	for _, k := range f.Kinds {
		if !slices.Contains(rowKinds, k) {
			return q, badRequest("thread_window supports row kinds 9, 40002, 45001, 45003 only")
		}
		if !slices.Contains(q.kinds, k) {
			q.kinds = append(q.kinds, k)
		}
	}
	slices.Sort(q.kinds)
	switch {
	case f.Until == nil && f.BeforeID == "":
	case f.Until != nil && f.BeforeID != "":
		if !isHex64(f.BeforeID) {
			return q, badRequest("thread_window: expected a full 64-hex event id")
		}
		q.cursor = &Cursor{*f.Until, strings.ToLower(f.BeforeID)}
	default:
		return q, badRequest("thread_window requires both until and before_id, or neither")
	}
	q.includeAux = f.IncludeAux
	return q, nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// ThreadBinding is the 39007 d tag: "tw:1:" + hex SHA-256 of the compact JSON
// ["tw",1,"older",host,reader,channel,root,limit,depth,kinds,cursor|null,include_aux].
func (q *threadRequest) binding(host, reader string) string {
	b := []byte(`["tw",1,"older",`)
	b = nostr.AppendString(b, host)
	b = append(b, ',')
	b = nostr.AppendString(b, strings.ToLower(reader))
	b = append(b, ',')
	b = nostr.AppendString(b, q.channel)
	b = append(b, ',')
	b = nostr.AppendString(b, q.root)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(q.limit), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(q.depth), 10)
	b = append(b, ",["...)
	for i, k := range q.kinds {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(k), 10)
	}
	b = append(b, "],"...)
	if q.cursor == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		b = strconv.AppendInt(b, q.cursor.CreatedAt, 10)
		b = append(b, ',')
		b = nostr.AppendString(b, q.cursor.ID)
		b = append(b, ']')
	}
	b = append(b, ',')
	b = strconv.AppendBool(b, q.includeAux)
	b = append(b, ']')
	sum := sha256.Sum256(b)
	return "tw:1:" + hex.EncodeToString(sum[:])
}

// ThreadWindow serves a NIP-CW thread window (thread_window:true): the
// root's non-deleted replies at depth 1..depth_limit of the given kinds,
// newest first after the cursor, limit+1 probed; the aux closure of the root
// and the rows (include_aux); exactly one 39007. The root itself is not
// returned (clients read it by id). A root that is missing, in another
// channel or not a conversation kind serves nothing (Served false); a
// deleted root still serves its replies.
func (s *Store) ThreadWindow(f Filter, rd Reader) (Window, error) {
	q, err := parseThreadWindow(&f)
	if err != nil {
		return Window{}, err
	}
	if rd.Signer == nil {
		return Window{}, ErrNoSigner
	}
	if !rd.readable(q.channel) {
		return Window{}, nil
	}
	root := s.lookup(q.root)
	if root == nil || root.part.channel != q.channel || !slices.Contains(rowKinds, root.ev.Kind) {
		return Window{}, nil
	}
	p := root.part
	w := Window{Served: true}
	p.mu.RLock()
	if root.removed {
		p.mu.RUnlock()
		return Window{}, nil
	}
	var rows []*record
	if root.thread != nil {
		var from func(*record) bool
		if q.cursor != nil {
			from = afterCursor(q.cursor.CreatedAt, q.cursor.ID)
		}
		rows = mergeNewest([]*list{root.thread}, from, q.limit+1, func(r *record) bool {
			return int(r.depth) <= q.depth && slices.Contains(q.kinds, r.ev.Kind) && rd.visible(r)
		})
	}
	if len(rows) > q.limit {
		rows = rows[:q.limit]
		last := rows[q.limit-1]
		w.HasMore, w.Next = true, &Cursor{last.at, last.id}
	}
	w.Rows = events(rows)
	if q.includeAux {
		w.Aux = events(p.auxClosure(append([]string{root.id}, ids(rows)...), rd.keep()))
	}
	p.mu.RUnlock()
	content := `{"version":1,"direction":"older","has_more":false,"next_cursor":null}`
	if w.HasMore {
		content = `{"version":1,"direction":"older","has_more":true,"next_cursor":` + w.Next.json() + `}`
	}
	w.Bounds, err = p.overlay(rd.Signer, rd.now(), nostr.KindThreadBounds,
		[][]string{{"d", q.binding(rd.Host, rd.Pubkey)}, {"h", q.channel}, {"e", q.root}}, content)
	if err != nil {
		return Window{}, err
	}
	return w, nil
}
