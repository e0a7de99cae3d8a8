package relay

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// /buzz/v1 accessory API (docs/buzz-protocol.md §3.10): sidebar counts and server-side read
// state. Decisions where docs/buzz-protocol.md is silent: frontiers order by author
// created_at then id; a row lists the reader's joined channels by id; a
// thread appears in a row when the reader wrote its root or a reply among
// the channel's newest 1000 eligible events within the horizon; a POST
// answers {"account","outcomes":[...]}.

var buzzV1Kinds = []int{nostr.KindStreamMessage, nostr.KindStreamMessageV2, nostr.KindForumPost, nostr.KindForumComment}

var buzzV1Eligible = set(buzzV1Kinds...)

const (
	v1MaxChannels = 20
	v1MaxIntents  = 100
	v1MaxContexts = 20
	v1MaxMessages = 100
	v1ScanCap     = 1000
	v1MaxBody     = 64 << 10
)

// position is a frontier: everything at or before it is read.
type position struct {
	At int64
	ID string
}

// after reports whether (at, id) lies after p in author-time order.
func (p position) after(at int64, id string) bool {
	return at > p.At || at == p.At && id > p.ID
}

type readState struct {
	mu     sync.Mutex
	byUser map[string]map[string]position // pubkey -> context key -> frontier
}

func contextKey(ch, root string) string { return ch + "/" + root }

func (c *community) readStates() *readState {
	if rs := c.reads.Load(); rs != nil {
		return rs
	}
	c.reads.CompareAndSwap(nil, &readState{byUser: map[string]map[string]position{}})
	return c.reads.Load()
}

// frontier is the reader's read position in a channel timeline (root "")
// or a thread; mark_channel_read leaves a floor ("*") under every thread.
func (rs *readState) frontier(pk, ch, root string) position {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m := rs.byUser[pk]
	if root == "" {
		return m[contextKey(ch, "")]
	}
	t := m[contextKey(ch, root)]
	if f, ok := m[contextKey(ch, "*")]; ok && f.after(t.At, t.ID) {
		return f
	}
	return t
}

// advance moves a frontier forward, never back.
func (rs *readState) advance(pk, key string, to position) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m := rs.byUser[pk]
	if m == nil {
		m = map[string]position{}
		rs.byUser[pk] = m
	}
	if cur, ok := m[key]; !ok || to.after(cur.At, cur.ID) {
		m[key] = to
	}
}

type v1Error struct {
	status int
	code   string
}

func (r *Relay) v1Fail(w http.ResponseWriter, status int, code string) {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "60")
	}
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "request_id": newUUID()}})
}

// serveBuzzV1 serves /buzz/v1 when enabled (Config.BuzzV1).
func (r *Relay) serveBuzzV1(w http.ResponseWriter, req *http.Request, c *community) {
	w.Header().Set("Cache-Control", "private, no-store")
	if d := r.faults.latency(); d > 0 {
		r.faults.held.Add(1)
		time.Sleep(d)
	}
	if st := r.faults.takeHTTPFailure(req.URL.Path); st != 0 {
		r.v1Fail(w, st, "unavailable")
		return
	}
	route := req.Method + " " + req.URL.Path
	if route != "GET /buzz/v1/me/sidebar" && route != "GET /buzz/v1/me/read-state" && route != "POST /buzz/v1/me/read-state" {
		r.v1Fail(w, http.StatusNotFound, "not_found")
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, v1MaxBody)
	var body bytes.Buffer
	if _, err := body.ReadFrom(req.Body); err != nil {
		r.v1Fail(w, http.StatusBadRequest, "invalid_request")
		return
	}
	caller, ok := r.authV1(req, c, body.Bytes())
	if !ok {
		r.v1Fail(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	if !c.admitted(caller.pubkey, "") {
		r.v1Fail(w, http.StatusForbidden, "relay_membership_required")
		return
	}
	if reason := c.limits.api(caller.pubkey, time.Now()); reason != "" {
		r.v1Fail(w, http.StatusTooManyRequests, "rate_limited")
		return
	}
	if c.replay.check(caller.authID, time.Now()) {
		r.v1Fail(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	account := map[string]any{"pubkey": caller.pubkey, "cutoff_ms": (time.Now().Unix() - r.cfg.BuzzV1RetentionSeconds) * 1000}
	var out map[string]any
	var fail *v1Error
	switch route {
	case "GET /buzz/v1/me/sidebar":
		out, fail = r.v1Sidebar(c, caller.pubkey, req.URL.Query())
	case "GET /buzz/v1/me/read-state":
		out, fail = r.v1ReadContexts(c, caller.pubkey, req.URL.Query())
	default:
		out, fail = r.v1WriteIntents(c, caller.pubkey, body.Bytes())
	}
	if fail != nil {
		r.v1Fail(w, fail.status, fail.code)
		return
	}
	out["account"] = account
	writeJSON(w, http.StatusOK, out)
}

// authV1 is NIP-98 with no dev fallback; POSTs must carry the payload tag.
func (r *Relay) authV1(req *http.Request, c *community, body []byte) (httpCaller, bool) {
	ev, err := nostr.ParseHTTPAuth(req.Header.Get("Authorization"))
	if err != nil {
		return httpCaller{}, false
	}
	u := r.publicHTTPBase(req) + req.URL.EscapedPath()
	if req.URL.RawQuery != "" {
		u += "?" + req.URL.RawQuery
	}
	if nostr.VerifyHTTPAuth(ev, nostr.HTTPCheck{Method: req.Method, URL: u, Body: body,
		RequirePayload: req.Method == http.MethodPost, Now: time.Now(), MaxSkew: r.cfg.AuthSkew}) != nil {
		return httpCaller{}, false
	}
	return httpCaller{pubkey: ev.PubKey, authID: ev.ID}, true
}

var errV1Invalid = &v1Error{http.StatusBadRequest, "invalid_request"}

// joined lists the reader's joined, non-deleted channels sorted by id.
func (c *community) joined(pk string) []*channel {
	var out []*channel
	c.channels.Range(func(k, v any) bool {
		ch, ok := v.(*channel)
		if !ok {
			return true
		}
		ch.mu.RLock()
		_, member := ch.members[pk]
		deleted := ch.deleted
		ch.mu.RUnlock()
		if member && !deleted {
			out = append(out, ch)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func countObj(n int, exact bool) map[string]any {
	if exact {
		return map[string]any{"status": "exact", "value": n}
	}
	return map[string]any{"status": "at_least", "value": n}
}

func (r *Relay) v1Sidebar(c *community, pk string, q url.Values) (map[string]any, *v1Error) {
	for k := range q {
		if k != "limit" && k != "cursor" && k != "channel_ids" {
			return nil, errV1Invalid
		}
	}
	chans := c.joined(pk)
	var rows []*channel
	next := any(nil)
	if ids := q.Get("channel_ids"); q.Has("channel_ids") {
		if q.Has("limit") || q.Has("cursor") {
			return nil, errV1Invalid
		}
		want := strings.Split(ids, ",")
		seen := map[string]bool{}
		for _, id := range want {
			if !isUUID(id) || seen[id] {
				return nil, errV1Invalid
			}
			seen[id] = true
		}
		if len(want) < 1 || len(want) > v1MaxChannels {
			return nil, errV1Invalid
		}
		for _, ch := range chans {
			if seen[ch.id] {
				rows = append(rows, ch)
			}
		}
	} else {
		limit := v1MaxChannels
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > v1MaxChannels {
				return nil, errV1Invalid
			}
			limit = n
		}
		cursor := q.Get("cursor")
		if cursor != "" && !isUUID(cursor) {
			return nil, errV1Invalid
		}
		for _, ch := range chans {
			if cursor != "" && ch.id <= cursor {
				continue
			}
			if len(rows) == limit {
				next = rows[len(rows)-1].id
				break
			}
			rows = append(rows, ch)
		}
	}
	out := make([]map[string]any, 0, len(rows))
	for _, ch := range rows {
		out = append(out, r.v1Row(c, pk, ch))
	}
	return map[string]any{"channels": out, "next_cursor": next}, nil
}

// v1Row builds one sidebar row from the channel's newest eligible events.
func (r *Relay) v1Row(c *community, pk string, ch *channel) map[string]any {
	ch.mu.RLock()
	row := map[string]any{"channel_id": ch.id, "name": ch.name, "channel_type": ch.typ, "archived": ch.archived, "hidden": false}
	ch.mu.RUnlock()
	st := c.store()
	horizon := time.Now().Unix() - r.cfg.BuzzV1RetentionSeconds
	limit := v1ScanCap + 1
	f := store.Filter{Kinds: buzzV1Kinds, Tags: map[string][]string{"h": {ch.id}}, Since: &horizon, Limit: &limit}
	evs := st.QueryN([]store.Filter{f}, c.reader(pk), limit)
	truncated := len(evs) > v1ScanCap
	if truncated {
		evs = evs[:v1ScanCap]
	}
	rs := c.readStates()
	chFront := rs.frontier(pk, ch.id, "")
	unread, attention := 0, 0
	row["latest_message_id"], row["latest_message_at"] = nil, nil
	type thread struct {
		root          string
		unread        int
		latestID      string
		latestAt      int64
		participating bool
	}
	threads := map[string]*thread{}
	for _, e := range evs {
		info, _ := st.Lookup(e.ID)
		if info.Depth <= 0 {
			if row["latest_message_id"] == nil {
				row["latest_message_id"], row["latest_message_at"] = e.ID, e.CreatedAt
			}
			if e.PubKey != pk && chFront.after(e.CreatedAt, e.ID) {
				unread++
				if taggedP(e, pk) {
					attention++
				}
			}
			continue
		}
		t := threads[info.Root]
		if t == nil {
			t = &thread{root: info.Root, latestID: e.ID, latestAt: e.CreatedAt}
			threads[info.Root] = t
			if root, ok := st.Get(info.Root); ok && root.PubKey == pk {
				t.participating = true
			}
		}
		if e.PubKey == pk {
			t.participating = true
		} else if rs.frontier(pk, ch.id, info.Root).after(e.CreatedAt, e.ID) {
			t.unread++
			if taggedP(e, pk) {
				attention++
			}
		}
	}
	var items []*thread
	for _, t := range threads {
		if t.participating {
			items = append(items, t)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].latestAt > items[j].latestAt })
	complete := !truncated && len(items) <= 5
	if len(items) > 5 {
		items = items[:5]
	}
	list := make([]map[string]any, 0, len(items))
	for _, t := range items {
		list = append(list, map[string]any{"root_id": t.root, "unread": countObj(t.unread, !truncated), "latest_reply_id": t.latestID, "latest_reply_at": t.latestAt})
	}
	row["unread"] = countObj(unread, !truncated)
	row["attention"] = countObj(attention, !truncated)
	row["latest_message_complete"] = !truncated || row["latest_message_id"] != nil
	row["threads"] = map[string]any{"items": list, "complete": complete}
	return row
}

type v1Target struct {
	ChannelID string `json:"channel_id"`
	RootID    string `json:"root_id,omitempty"`
}

func (t v1Target) valid() bool {
	return isUUID(t.ChannelID) && (t.RootID == "" || isHexLen(t.RootID, 64))
}

func (r *Relay) v1ReadContexts(c *community, pk string, q url.Values) (map[string]any, *v1Error) {
	for k := range q {
		if k != "targets" {
			return nil, errV1Invalid
		}
	}
	var targets []struct {
		Target     v1Target `json:"target"`
		MessageIDs []string `json:"message_ids"`
	}
	dec := json.NewDecoder(strings.NewReader(q.Get("targets")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&targets); err != nil || len(targets) == 0 || len(targets) > v1MaxContexts {
		return nil, errV1Invalid
	}
	total := 0
	for _, t := range targets {
		total += len(t.MessageIDs)
		if !t.Target.valid() {
			return nil, errV1Invalid
		}
		for _, id := range t.MessageIDs {
			if !isHexLen(id, 64) {
				return nil, errV1Invalid
			}
		}
	}
	if total > v1MaxMessages {
		return nil, errV1Invalid
	}
	st, rs := c.store(), c.readStates()
	contexts := make([]map[string]any, 0, len(targets))
	for _, t := range targets {
		ctx := map[string]any{"target": t.Target}
		ch := c.channel(t.Target.ChannelID)
		if ch == nil || !c.isMember(ch, pk) {
			ctx["status"] = "unavailable"
			contexts = append(contexts, ctx)
			continue
		}
		front := rs.frontier(pk, t.Target.ChannelID, t.Target.RootID)
		ctx["status"] = "available"
		ctx["through_timestamp"] = nil
		if front.ID != "" {
			ctx["through_timestamp"] = front.At
		}
		msgs := make([]map[string]any, 0, len(t.MessageIDs))
		for _, id := range t.MessageIDs {
			m := map[string]any{"id": id}
			info, ok := st.Lookup(id)
			switch {
			case !ok || info.Deleted:
				m["status"] = "unknown"
			case info.Channel != t.Target.ChannelID:
				m["status"] = "unavailable"
			case !buzzV1Eligible[info.Event.Kind] || info.Event.PubKey == pk:
				m["status"] = "not_counted"
			case !front.after(info.Event.CreatedAt, id):
				m["status"] = "read"
			default:
				m["status"] = "unread"
				var reason any
				switch {
				case taggedP(info.Event, pk):
					reason = "mention"
				case info.Depth == 1 && hasTagValue(info.Event, "broadcast", "1"):
					reason = "broadcast"
				case info.Depth > 0:
					reason = "conversation"
				}
				m["reason"] = reason
			}
			msgs = append(msgs, m)
		}
		ctx["messages"] = msgs
		contexts = append(contexts, ctx)
	}
	return map[string]any{"contexts": contexts}, nil
}

func (c *community) isMember(ch *channel, pk string) bool {
	ch.mu.RLock()
	defer ch.mu.RUnlock()
	_, ok := ch.members[pk]
	return ok && !ch.deleted
}

func (r *Relay) v1WriteIntents(c *community, pk string, body []byte) (map[string]any, *v1Error) {
	var in struct {
		Intents []struct {
			Type      string    `json:"type"`
			Target    *v1Target `json:"target,omitempty"`
			ChannelID string    `json:"channel_id,omitempty"`
			MessageID string    `json:"message_id"`
		} `json:"intents"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || len(in.Intents) == 0 || len(in.Intents) > v1MaxIntents {
		return nil, errV1Invalid
	}
	st, rs := c.store(), c.readStates()
	outcomes := make([]map[string]any, 0, len(in.Intents))
	for _, it := range in.Intents {
		status := func() string {
			var chID, root string
			switch it.Type {
			case "mark_through":
				if it.Target == nil || !it.Target.valid() || it.ChannelID != "" {
					return "invalid"
				}
				chID, root = it.Target.ChannelID, it.Target.RootID
			case "mark_channel_read":
				if it.Target != nil || !isUUID(it.ChannelID) {
					return "invalid"
				}
				chID = it.ChannelID
			default:
				return "invalid"
			}
			info, ok := st.Lookup(it.MessageID)
			if !isHexLen(it.MessageID, 64) || !ok || info.Channel != chID || root != "" && info.Root != root && info.Event.ID != root {
				return "invalid"
			}
			ch := c.channel(chID)
			if ch == nil || !c.isMember(ch, pk) {
				return "blocked"
			}
			to := position{info.Event.CreatedAt, info.Event.ID}
			rs.advance(pk, contextKey(chID, root), to)
			if it.Type == "mark_channel_read" {
				rs.advance(pk, contextKey(chID, "*"), to)
			}
			return "applied"
		}()
		outcomes = append(outcomes, map[string]any{"status": status, "projection_status": "not_requested"})
	}
	return map[string]any{"outcomes": outcomes}, nil
}
