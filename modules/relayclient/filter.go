package relayclient

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// Filter is a NIP-01 filter as Buzz reads it, for REQ, COUNT, POST /query
// and POST /count. Zero fields are left out.
type Filter struct {
	IDs     []string
	Authors []string
	Kinds   []int
	Tags    map[string][]string // "h" → #h, "p" → #p, "e" → #e ... (name without '#')
	Since   int64               // unix seconds; 0 = absent
	Until   int64               // unix seconds; 0 = absent
	Limit   int                 // 0 = absent unless LimitZero
	// LimitZero sends "limit":0 (live-only: replay nothing).
	LimitZero bool
	// Extra holds Buzz's extension fields (top_level, thread_window,
	// before_id, search, feed_types, depth_limit, ...), marshalled with
	// encoding/json in key order after the standard fields.
	Extra map[string]any
}

// AppendJSON appends the filter as a JSON object.
func (f *Filter) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = nostr.AppendString(dst, k)
		dst = append(dst, ':')
	}
	strs := func(k string, v []string) {
		key(k)
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = nostr.AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	if f.IDs != nil {
		strs("ids", f.IDs)
	}
	if f.Authors != nil {
		strs("authors", f.Authors)
	}
	if f.Kinds != nil {
		key("kinds")
		dst = append(dst, '[')
		for i, k := range f.Kinds {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(k), 10)
		}
		dst = append(dst, ']')
	}
	if len(f.Tags) > 0 {
		names := make([]string, 0, len(f.Tags))
		for n := range f.Tags {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			strs("#"+n, f.Tags[n])
		}
	}
	if f.Since != 0 {
		key("since")
		dst = strconv.AppendInt(dst, f.Since, 10)
	}
	if f.Until != 0 {
		key("until")
		dst = strconv.AppendInt(dst, f.Until, 10)
	}
	if f.Limit != 0 || f.LimitZero {
		key("limit")
		dst = strconv.AppendInt(dst, int64(f.Limit), 10)
	}
	if len(f.Extra) > 0 {
		names := make([]string, 0, len(f.Extra))
		for n := range f.Extra {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b, err := json.Marshal(f.Extra[n])
			if err != nil {
				return nil, fmt.Errorf("relay: filter field %q: %w", n, err)
			}
			key(n)
			dst = append(dst, b...)
		}
	}
	return append(dst, '}'), nil
}

// MarshalJSON implements json.Marshaler.
func (f Filter) MarshalJSON() ([]byte, error) { return f.AppendJSON(nil) }

// appendFilters appends filters as comma-separated JSON objects.
func appendFilters(dst []byte, filters []Filter) ([]byte, error) {
	for i := range filters {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = filters[i].AppendJSON(dst); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// FiltersJSON returns filters as a JSON array (the POST /query and /count body).
func FiltersJSON(filters []Filter) ([]byte, error) {
	dst, err := appendFilters(append(make([]byte, 0, 128), '['), filters)
	if err != nil {
		return nil, err
	}
	return append(dst, ']'), nil
}

// Client→relay envelopes (wire's, one definition per verb), built by
// appending: an EVENT's or AUTH's event is written in place after the
// envelope's head (no copy on the publish path).

func appendEventEnvelope(dst []byte, v wire.Verb, ev *nostr.Event) []byte {
	if v == wire.VerbAuth {
		dst = wire.AppendAuthHead(dst)
	} else {
		dst = wire.AppendEventHead(dst, "")
	}
	return append(ev.AppendJSON(dst), ']')
}

// appendSubEnvelope appends a REQ or COUNT with filters, or a CLOSE.
func appendSubEnvelope(dst []byte, v wire.Verb, subID string, filters []Filter) ([]byte, error) {
	if v == wire.VerbClose {
		return wire.CloseEnvelope{SubID: subID}.Append(dst), nil
	}
	fs, err := appendFilters(make([]byte, 0, 64*len(filters)), filters)
	if err != nil {
		return nil, err
	}
	if v == wire.VerbCount {
		return wire.CountEnvelope{SubID: subID, Filters: fs}.Append(dst), nil
	}
	return wire.ReqEnvelope{SubID: subID, Filters: fs}.Append(dst), nil
}

// Strong is the filter's "consistency":"strong": Buzz then reads it from
// its writer, not a read replica that may lag the caller's own writes
// (docs/buzz-names.md §a). Every read whose result decides a verdict or a
// write sends it.
func Strong(f Filter) Filter {
	extra := map[string]any{"consistency": "strong"}
	for k, v := range f.Extra {
		extra[k] = v
	}
	f.Extra = extra
	return f
}
