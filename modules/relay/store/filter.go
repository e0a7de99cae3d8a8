package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// Filter is a NIP-01 filter plus the Buzz /query extension fields
// (docs/buzz-protocol.md §3.4–3.6). Pointer fields distinguish "absent" from zero:
// a REQ with "limit":0 replays nothing, one without a limit replays up to
// the store's MaxLimit.
type Filter struct {
	// A nil list is no constraint; an empty non-nil list (JSON []) matches
	// nothing, as in go-nostr and for "#x":[].
	IDs     []string            // 64-hex event ids, lower-cased on decode
	Authors []string            // 64-hex pubkeys, lower-cased on decode
	Kinds   []int               // 0–65535
	Tags    map[string][]string // "#e":[…] is Tags["e"]; any tag name, including multi-letter ("#buzz-channel")
	Since   *int64              // created_at >= Since
	Until   *int64              // created_at <= Until (or the before_id cursor, below)
	Limit   *int                // per-filter limit; nil: the store's MaxLimit

	// BeforeID with Until is the composite cursor of every Buzz read path:
	// rows with created_at < Until, or created_at == Until and id > BeforeID.
	// Matches honours it whenever both are set.
	BeforeID string

	Search     string // NIP-50: every whitespace-separated term must occur in the content (case-insensitive)
	SearchMode string // "prefix": every term must start a word of the content
	Page       *int   // offset paging for search (0-based), /query only

	TopLevel         bool // channel window (NIP-CW); only JSON true selects it
	ThreadWindow     bool // thread window (NIP-CW thread mode)
	IncludeAux       bool // add reactions, deletions and edits targeting the rows
	IncludeSummaries bool // add relay-signed 39005 thread summaries (channel window)

	DepthLimit     *int   // thread depth bound; without ThreadWindow it selects the legacy oldest-first thread read
	ThreadCursor   *int64 // legacy thread read cursor (seconds); "threadCursor" also accepted
	ThreadCursorID string // legacy thread read cursor id; "threadCursorId" also accepted

	FeedTypes         []string // home feed (mentions, needs_action, activity, agent_activity)
	ReadStateSnapshot *int     // read_state_snapshot: the server answers it with an object, not events
	Consistency       string   // "" (routed), ConsistencyStrong (the writer) or ConsistencyMalformed

	keys map[string]bool // JSON keys present, for the strict thread-window check
	sets *matchSets      // lookup sets for long lists, built on decode or by prepare
	// tagList is Tags as a slice, built by prepare: a live fan-out matches
	// every subscription of a channel, and ranging over a map per match was
	// a third of the match's cost in a wide channel's profile.
	tagList []tagCond
}

// tagCond is one "#x" constraint of a prepared filter.
type tagCond struct {
	name string
	vals []string
	set  map[string]bool // nil for short lists
}

// Has reports whether the decoded JSON object carried key.
func (f *Filter) Has(key string) bool { return f.keys[key] }

// FilterError is a filter that could not be decoded: which filter (0-based
// position in the array or REQ), which key, and why.
type FilterError struct {
	Index  int    // position of the filter; -1 when the whole body is wrong
	Key    string // JSON key, "" when the filter itself is not an object
	Reason string
}

func (e *FilterError) Error() string {
	switch {
	case e.Index < 0:
		return "filters: " + e.Reason
	case e.Key == "":
		return fmt.Sprintf("filter %d: %s", e.Index, e.Reason)
	default:
		return fmt.Sprintf("filter %d: %q: %s", e.Index, e.Key, e.Reason)
	}
}

// ParseFilters decodes a JSON array of filter objects (the POST /query and
// POST /count body).
// The /query filter's consistency (Buzz's bridge.rs Consistency).
const (
	ConsistencyStrong    = "strong"
	ConsistencyMalformed = "\x00malformed"
)

func ParseFilters(data []byte) ([]Filter, error) {
	if string(bytes.TrimSpace(data)) == "null" {
		return []Filter{}, nil // as encoding/json decoded it: no filters
	}
	raws, err := wire.Elements(data, nil)
	if err != nil {
		return nil, &FilterError{Index: -1, Reason: "body must be a JSON array of filter objects: " + jsonReason(err)}
	}
	out := make([]Filter, len(raws))
	for i, raw := range raws {
		f, err := ParseFilter(raw, i)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// member is one key of a filter object with its value's JSON bytes.
type member struct {
	key string
	val []byte
}

// members reads a JSON object into its members sorted by key (errors name
// the same key every time), the last of duplicate keys winning as in a map.
func members(raw []byte) ([]member, error) {
	s := wire.New(raw)
	var out []member
	err := s.Object(func(key []byte) (bool, error) {
		v, err := s.Value(1)
		out = append(out, member{key: wire.ValidUTF8(string(key)), val: v})
		return true, err
	})
	if err == nil && !s.AtEnd() {
		err = s.Fail("data after the object")
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].key < out[j].key })
	n := 0
	for _, m := range out {
		if n > 0 && out[n-1].key == m.key {
			n-- // a later duplicate replaces the earlier one
		}
		out[n] = m
		n++
	}
	return out[:n], nil
}

// ParseFilter decodes one filter object; index only labels errors (for a
// REQ, pass the filter's position among the REQ's filters). Unknown keys are
// ignored, as NIP-01 relays do; Has still reports them.
func ParseFilter(raw []byte, index int) (Filter, error) {
	var f Filter
	fail := func(key, format string, args ...any) (Filter, error) {
		return Filter{}, &FilterError{Index: index, Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return fail("", "must be a JSON object, got %s", jsonType(raw))
	}
	obj, err := members(raw)
	if err != nil {
		return fail("", "%s", jsonReason(err))
	}
	f.keys = make(map[string]bool, len(obj))
	for _, m := range obj {
		k, v := m.key, m.val
		f.keys[k] = true
		var err error
		switch k {
		case "ids":
			f.IDs, err = hexList(v)
		case "authors":
			f.Authors, err = hexList(v)
		case "kinds":
			f.Kinds, err = kindList(v)
		case "since":
			f.Since, err = nonNegInt64(v)
		case "until":
			f.Until, err = nonNegInt64(v)
		case "limit":
			f.Limit, err = nonNegInt(v)
		case "before_id":
			f.BeforeID, err = str(v)
		case "search":
			f.Search, err = str(v)
		case "search_mode":
			f.SearchMode, err = str(v)
		case "page":
			f.Page, err = nonNegInt(v)
		case "top_level":
			// NIP-CW: anything but JSON true means an ordinary filter.
			f.TopLevel = string(v) == "true"
		case "thread_window":
			f.ThreadWindow, err = boolean(v)
		case "include_aux":
			f.IncludeAux, err = boolean(v)
		case "include_summaries":
			f.IncludeSummaries, err = boolean(v)
		case "depth_limit":
			var n *int64
			if n, err = signedInt(v); err == nil {
				d := int(*n)
				f.DepthLimit = &d
			}
		case "thread_cursor", "threadCursor":
			f.ThreadCursor, err = nonNegInt64(v)
		case "thread_cursor_id", "threadCursorId":
			f.ThreadCursorID, err = str(v)
		case "feed_types":
			f.FeedTypes, err = strList(v)
		case "read_state_snapshot":
			f.ReadStateSnapshot, err = nonNegInt(v)
		case "consistency":
			// Exactly "strong", or malformed (docs/buzz-names.md §a: any
			// other value fails the request, judged by the caller).
			f.Consistency = ConsistencyMalformed
			if s, e := str(v); e == nil && s == ConsistencyStrong {
				f.Consistency = ConsistencyStrong
			}
		default:
			if len(k) > 1 && k[0] == '#' {
				var vals []string
				if vals, err = strList(v); err == nil {
					if f.Tags == nil {
						f.Tags = map[string][]string{}
					}
					f.Tags[k[1:]] = vals
				}
			}
		}
		if err != nil {
			return fail(k, "%s", err.Error())
		}
	}
	f.prepare()
	return f, nil
}

func jsonType(raw []byte) string { return wire.Kind(raw) }

func jsonReason(err error) string {
	var se *wire.SyntaxError
	if errors.As(err, &se) {
		return "invalid JSON at " + err.Error()
	}
	return err.Error()
}

func str(v []byte) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", fmt.Errorf("must be a string, got %s", jsonType(v))
	}
	s, err := wire.ParseString(v)
	if err != nil {
		return "", fmt.Errorf("bad string: %v", err)
	}
	return wire.ValidUTF8(s), nil
}

func boolean(v []byte) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("must be a boolean, got %s", jsonType(v))
}

func signedInt(v []byte) (*int64, error) {
	s := string(v)
	if jsonType(v) != "a number" {
		return nil, fmt.Errorf("must be an integer, got %s", jsonType(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("must be an integer, got %s", s)
	}
	return &n, nil
}

func nonNegInt64(v []byte) (*int64, error) {
	n, err := signedInt(v)
	if err != nil {
		return nil, err
	}
	if *n < 0 {
		return nil, fmt.Errorf("must not be negative, got %d", *n)
	}
	return n, nil
}

func nonNegInt(v []byte) (*int, error) {
	n, err := nonNegInt64(v)
	if err != nil {
		return nil, err
	}
	if *n > 1<<31-1 {
		return nil, fmt.Errorf("%d is too large", *n)
	}
	i := int(*n)
	return &i, nil
}

func elements(v []byte) ([][]byte, error) {
	if len(v) == 0 || v[0] != '[' {
		return nil, fmt.Errorf("must be an array, got %s", jsonType(v))
	}
	els, err := wire.Elements(v, nil)
	if err != nil {
		return nil, fmt.Errorf("bad array: %v", err)
	}
	return els, nil
}

func strList(v []byte) ([]string, error) {
	els, err := elements(v)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(els))
	for i, el := range els {
		s, err := str(el)
		if err != nil {
			return nil, fmt.Errorf("element %d %s", i, err)
		}
		out[i] = s
	}
	return out, nil
}

func hexList(v []byte) ([]string, error) {
	out, err := strList(v)
	if err != nil {
		return nil, err
	}
	for i, s := range out {
		if !isHex64(s) {
			return nil, fmt.Errorf("element %d: %q is not 64 hex characters", i, clip(s))
		}
		out[i] = strings.ToLower(s)
	}
	return out, nil
}

func kindList(v []byte) ([]int, error) {
	els, err := elements(v)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(els))
	for i, el := range els {
		n, err := signedInt(el)
		if err != nil {
			return nil, fmt.Errorf("element %d %s", i, err)
		}
		if *n < 0 || *n > 65535 {
			return nil, fmt.Errorf("element %d: kind %d is outside 0–65535", i, *n)
		}
		out[i] = int(*n)
	}
	return out, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// matchSets holds hash sets for lists long enough that a linear scan per
// event would dominate (a 500-author profile read, a 500-id #d read).
type matchSets struct {
	ids, authors map[string]bool
	tags         map[string]map[string]bool
}

const setThreshold = 12

func toSet(vals []string) map[string]bool {
	m := make(map[string]bool, len(vals))
	for _, v := range vals {
		m[v] = true
	}
	return m
}

// prepare builds the lookup sets. ParseFilter calls it; the store calls it
// on its own copy of filters built in Go.
func (f *Filter) prepare() {
	var s matchSets
	any := false
	if len(f.IDs) > setThreshold {
		s.ids, any = toSet(f.IDs), true
	}
	if len(f.Authors) > setThreshold {
		s.authors, any = toSet(f.Authors), true
	}
	for name, vals := range f.Tags {
		if len(vals) > setThreshold {
			if s.tags == nil {
				s.tags = map[string]map[string]bool{}
			}
			s.tags[name], any = toSet(vals), true
		}
	}
	if any {
		f.sets = &s
	} else {
		f.sets = nil
	}
	f.tagList = nil
	if len(f.Tags) > 0 {
		f.tagList = make([]tagCond, 0, len(f.Tags))
		for name, vals := range f.Tags {
			f.tagList = append(f.tagList, tagCond{name: name, vals: vals, set: s.tags[name]})
		}
		// "h" first: in a channel's fan-out it is decided without a tag scan.
		slices.SortFunc(f.tagList, func(a, b tagCond) int {
			if (a.name == "h") != (b.name == "h") {
				if a.name == "h" {
					return -1
				}
				return 1
			}
			return strings.Compare(a.name, b.name)
		})
	}
}

func in(vals []string, set map[string]bool, v string) bool {
	if set != nil {
		return set[v]
	}
	for _, x := range vals {
		if x == v {
			return true
		}
	}
	return false
}

// Matches reports whether ev satisfies the filter's NIP-01 predicates (ids,
// authors, kinds, since, until with before_id, tags, search). Window,
// thread, limit and paging fields describe the request, not an event, and
// are ignored.
func (f *Filter) Matches(ev *nostr.Event) bool {
	return f.matches(ev, "")
}

// MatchesInChannel is Matches for an event the store placed in channel: an
// event without an h tag (a reaction that takes its channel from its
// target) still matches "#h":[channel].
func (f *Filter) MatchesInChannel(ev *nostr.Event, channel string) bool {
	return f.matches(ev, channel)
}

func (f *Filter) matches(ev *nostr.Event, channel string) bool {
	var sets matchSets
	if f.sets != nil {
		sets = *f.sets
	}
	if f.IDs != nil && !in(f.IDs, sets.ids, ev.ID) {
		return false
	}
	if f.Authors != nil && !in(f.Authors, sets.authors, ev.PubKey) {
		return false
	}
	if f.Kinds != nil {
		ok := false
		for _, k := range f.Kinds {
			if k == ev.Kind {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if f.Since != nil && ev.CreatedAt < *f.Since {
		return false
	}
	if f.Until != nil {
		u := *f.Until
		if ev.CreatedAt > u {
			return false
		}
		if f.BeforeID != "" && ev.CreatedAt == u && ev.ID <= strings.ToLower(f.BeforeID) {
			return false
		}
	}
	if f.tagList != nil {
		for i := range f.tagList {
			t := &f.tagList[i]
			if !tagMatch(ev, t.name, t.vals, t.set, channel) {
				return false
			}
		}
	} else {
		for name, vals := range f.Tags {
			var set map[string]bool
			if sets.tags != nil {
				set = sets.tags[name]
			}
			if !tagMatch(ev, name, vals, set, channel) {
				return false
			}
		}
	}
	if f.Search != "" && !searchMatch(ev.Content, f.Search, f.SearchMode == "prefix") {
		return false
	}
	return true
}

func tagMatch(ev *nostr.Event, name string, vals []string, set map[string]bool, channel string) bool {
	if len(vals) == 0 {
		return false // NIP-01: an empty list matches nothing
	}
	if name == "h" && channel != "" && in(vals, set, channel) {
		return true
	}
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == name && in(vals, set, t[1]) {
			return true
		}
	}
	return false
}

// searchMatch: every term must occur in content (prefix mode: start a word),
// ignoring case. Ranking is by recency, not relevance.
func searchMatch(content, query string, prefix bool) bool {
	lc := strings.ToLower(content)
	for _, term := range strings.Fields(strings.ToLower(query)) {
		if !prefix {
			if !strings.Contains(lc, term) {
				return false
			}
			continue
		}
		found := false
		for _, w := range strings.FieldsFunc(lc, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127)
		}) {
			if strings.HasPrefix(w, term) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
