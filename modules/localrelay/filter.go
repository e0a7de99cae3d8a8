package localrelay

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Filter is a NIP-01 filter plus the Buzz bridge extensions. Tag filters are
// keyed by the tag name without '#'. Extensions are ignored on WebSocket REQs
// (digest §3.5: a REQ runs them as an ordinary query).
type Filter struct {
	IDs     []string
	Authors []string
	Kinds   []int
	Tags    map[string][]string
	Since   *int64
	Until   *int64
	Limit   *int

	// Bridge (/query) extensions.
	TopLevel          bool
	ThreadWindow      bool
	IncludeAux        bool
	IncludeSummaries  bool
	BeforeID          string
	HasBeforeID       bool
	DepthLimit        *int
	Search            string
	HasSearch         bool
	ReadStateSnapshot bool
	FeedTypes         []string
}

// parseFilter decodes one filter object. Unknown keys are ignored, as relays do.
func parseFilter(raw json.RawMessage) (*Filter, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("filter is not a JSON object")
	}
	f := &Filter{}
	for k, v := range m {
		var err error
		switch {
		case k == "ids":
			err = json.Unmarshal(v, &f.IDs)
		case k == "authors":
			err = json.Unmarshal(v, &f.Authors)
		case k == "kinds":
			err = json.Unmarshal(v, &f.Kinds)
		case k == "since":
			f.Since = new(int64)
			err = json.Unmarshal(v, f.Since)
		case k == "until":
			f.Until = new(int64)
			err = json.Unmarshal(v, f.Until)
		case k == "limit":
			f.Limit = new(int)
			err = json.Unmarshal(v, f.Limit)
		case len(k) == 2 && k[0] == '#' || strings.HasPrefix(k, "#") && len(k) > 1:
			var vals []string
			err = json.Unmarshal(v, &vals)
			if f.Tags == nil {
				f.Tags = map[string][]string{}
			}
			f.Tags[k[1:]] = vals
		case k == "top_level":
			err = json.Unmarshal(v, &f.TopLevel)
		case k == "thread_window":
			err = json.Unmarshal(v, &f.ThreadWindow)
		case k == "include_aux":
			err = json.Unmarshal(v, &f.IncludeAux)
		case k == "include_summaries":
			err = json.Unmarshal(v, &f.IncludeSummaries)
		case k == "before_id":
			f.HasBeforeID = true
			err = json.Unmarshal(v, &f.BeforeID)
		case k == "depth_limit":
			f.DepthLimit = new(int)
			err = json.Unmarshal(v, f.DepthLimit)
		case k == "search":
			f.HasSearch = true
			err = json.Unmarshal(v, &f.Search)
		case k == "read_state_snapshot":
			var n json.Number
			if err = json.Unmarshal(v, &n); err == nil {
				f.ReadStateSnapshot = n.String() != "0"
			}
		case k == "feed_types":
			err = json.Unmarshal(v, &f.FeedTypes)
		}
		if err != nil {
			return nil, fmt.Errorf("filter field %q: %v", k, err)
		}
	}
	return f, nil
}

// parseFilters decodes a JSON array of filter objects (/query, /count bodies).
func parseFilters(body []byte) ([]*Filter, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return nil, fmt.Errorf("body must be a JSON array of filters")
	}
	out := make([]*Filter, 0, len(raws))
	for i, r := range raws {
		f, err := parseFilter(r)
		if err != nil {
			return nil, fmt.Errorf("filter %d: %v", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// channels returns the #h values (nil when the filter has none).
func (f *Filter) channels() []string { return f.Tags["h"] }

// hasKind reports whether the filter names kind k explicitly.
func (f *Filter) hasKind(k int) bool {
	for _, x := range f.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// onlyValues reports whether vals is non-empty and every value equals v.
func onlyValues(vals []string, v string) bool {
	if len(vals) == 0 {
		return false
	}
	for _, x := range vals {
		if x != v {
			return false
		}
	}
	return true
}

// matches applies the NIP-01 fields (extensions are the callers' business).
func (f *Filter) matches(e *Entry) bool {
	ev := e.Event
	if len(f.IDs) > 0 && !containsStr(f.IDs, ev.ID) {
		return false
	}
	if len(f.Authors) > 0 && !containsStr(f.Authors, ev.PubKey) {
		return false
	}
	if len(f.Kinds) > 0 && !f.hasKind(ev.Kind) {
		return false
	}
	if f.Since != nil && ev.CreatedAt < *f.Since {
		return false
	}
	if f.Until != nil && ev.CreatedAt > *f.Until {
		return false
	}
	for name, vals := range f.Tags {
		if len(vals) == 0 {
			continue
		}
		if name == "h" && e.Channel != "" {
			// Reactions and deletions take their channel from the target.
			if !containsStr(vals, e.Channel) {
				return false
			}
			continue
		}
		found := false
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == name && containsStr(vals, t[1]) {
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

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// before reports whether a sorts before b in the relay's newest-first order:
// created_at DESC, ties by id ASC (NIP-CW).
func before(a, b *Entry) bool {
	if a.Event.CreatedAt != b.Event.CreatedAt {
		return a.Event.CreatedAt > b.Event.CreatedAt
	}
	return a.Event.ID < b.Event.ID
}

func sortNewestFirst(es []*Entry) {
	sort.Slice(es, func(i, j int) bool { return before(es[i], es[j]) })
}

// afterCursor reports whether e lies strictly past the (until, beforeID)
// cursor: created_at < until, or created_at == until and id > beforeID.
func afterCursor(e *Entry, until int64, beforeID string) bool {
	c := e.Event.CreatedAt
	return c < until || c == until && e.Event.ID > beforeID
}
