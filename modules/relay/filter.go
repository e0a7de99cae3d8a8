package relay

import (
	"github.com/buzzload/buzzload/modules/relay/store"
)

// parseReqFilters decodes the filters of a REQ or COUNT frame.
func parseReqFilters(raws [][]byte) ([]store.Filter, error) {
	out := make([]store.Filter, 0, len(raws))
	for i, raw := range raws {
		f, err := store.ParseFilter(raw, i)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
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

// channelScope returns the union of #h values when every filter has #h
// (a channel-scoped subscription), else nil (a global one).
func channelScope(filters []store.Filter) []string {
	seen := map[string]bool{}
	var out []string
	for i := range filters {
		hs := filters[i].Tags["h"]
		if len(hs) == 0 {
			return nil
		}
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// authorScope returns the union of the filters' authors when every filter
// names authors (the subscription can match only their events), else nil.
// Filters whose lists are all empty match nothing: an empty, non-nil union.
func authorScope(filters []store.Filter) []string {
	seen := map[string]bool{}
	out := []string{}
	for i := range filters {
		as := filters[i].Authors
		if as == nil {
			return nil
		}
		for _, a := range as {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}
