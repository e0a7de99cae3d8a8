package metrics

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// DefaultSystemTags are the system tags k6 switches on by default
// (docs/k6-compat.md §1.11), in k6's order; a fresh slice each call.
func DefaultSystemTags() []string {
	return []string{"proto", "subproto", "status", "method", "url", "name", "group", "check", "error", "error_code",
		"tls_version", "scenario", "service", "expected_response"}
}

// Tag is one key/value pair.
type Tag struct {
	Key, Value string
}

// TagSet is an immutable set of tags sorted by key, with a precomputed hash.
// The zero value is the empty set. Copying a TagSet copies one pointer, so
// producers should build the sets they use often once and reuse them: equal
// pointers compare in one step and hit the Collector's routing cache.
type TagSet struct {
	d *tagData
}

type tagData struct {
	tags []Tag
	hash uint64
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// NewTagSet builds a set from pairs; a later duplicate key wins.
func NewTagSet(tags ...Tag) TagSet {
	if len(tags) == 0 {
		return TagSet{}
	}
	ts := make([]Tag, len(tags))
	copy(ts, tags)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Key < ts[j].Key })
	// Keep the last of equal keys (stable sort keeps input order among them).
	out := ts[:0]
	for i, t := range ts {
		if i+1 < len(ts) && ts[i+1].Key == t.Key {
			continue
		}
		out = append(out, t)
	}
	return makeTagSet(out)
}

// TagsFromMap builds a set from a map.
func TagsFromMap(m map[string]string) TagSet {
	if len(m) == 0 {
		return TagSet{}
	}
	ts := make([]Tag, 0, len(m))
	for k, v := range m {
		ts = append(ts, Tag{k, v})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Key < ts[j].Key })
	return makeTagSet(ts)
}

func makeTagSet(sorted []Tag) TagSet {
	h := uint64(fnvOffset)
	for _, t := range sorted {
		h = fnvString(h, t.Key)
		h = (h ^ 0xff) * fnvPrime
		h = fnvString(h, t.Value)
		h = (h ^ 0xfe) * fnvPrime
	}
	return TagSet{&tagData{tags: sorted, hash: h}}
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// Len is the number of tags.
func (t TagSet) Len() int {
	if t.d == nil {
		return 0
	}
	return len(t.d.tags)
}

// Tags returns the pairs sorted by key. The slice must not be modified.
func (t TagSet) Tags() []Tag {
	if t.d == nil {
		return nil
	}
	return t.d.tags
}

// Get returns the value of key and whether it is present.
func (t TagSet) Get(key string) (string, bool) {
	if t.d == nil {
		return "", false
	}
	ts := t.d.tags
	if len(ts) <= 8 {
		for _, tg := range ts {
			if tg.Key == key {
				return tg.Value, true
			}
		}
		return "", false
	}
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Key >= key })
	if i < len(ts) && ts[i].Key == key {
		return ts[i].Value, true
	}
	return "", false
}

// With returns a set with key set to value (the receiver is unchanged).
func (t TagSet) With(key, value string) TagSet {
	ts := t.Tags()
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Key >= key })
	if i < len(ts) && ts[i].Key == key {
		if ts[i].Value == value {
			return t
		}
		out := make([]Tag, len(ts))
		copy(out, ts)
		out[i].Value = value
		return makeTagSet(out)
	}
	out := make([]Tag, 0, len(ts)+1)
	out = append(out, ts[:i]...)
	out = append(out, Tag{key, value})
	out = append(out, ts[i:]...)
	return makeTagSet(out)
}

// Merge returns the receiver with every pair of o laid over it (o wins).
func (t TagSet) Merge(o TagSet) TagSet {
	if o.Len() == 0 {
		return t
	}
	if t.Len() == 0 {
		return o
	}
	a, b := t.Tags(), o.Tags()
	out := make([]Tag, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Key < b[j].Key):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Key < a[i].Key:
			out = append(out, b[j])
			j++
		default:
			out = append(out, b[j])
			i++
			j++
		}
	}
	return makeTagSet(out)
}

// Without returns a set without key.
func (t TagSet) Without(key string) TagSet {
	ts := t.Tags()
	for i, tg := range ts {
		if tg.Key == key {
			out := make([]Tag, 0, len(ts)-1)
			out = append(out, ts[:i]...)
			out = append(out, ts[i+1:]...)
			return makeTagSet(out)
		}
	}
	return t
}

// Hash is a 64-bit hash of the pairs; equal sets have equal hashes.
func (t TagSet) Hash() uint64 {
	if t.d == nil {
		return fnvOffset
	}
	return t.d.hash
}

// Equal reports whether both sets hold the same pairs.
func (t TagSet) Equal(o TagSet) bool {
	if t.d == o.d {
		return true
	}
	if t.Len() != o.Len() || t.Hash() != o.Hash() {
		return false
	}
	a, b := t.Tags(), o.Tags()
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Contains reports whether every pair of sub is in t (a present key with the
// same value; a missing key never matches, even for an empty value).
func (t TagSet) Contains(sub TagSet) bool {
	for _, tg := range sub.Tags() {
		v, ok := t.Get(tg.Key)
		if !ok || v != tg.Value {
			return false
		}
	}
	return true
}

// Map returns the pairs as a new map.
func (t TagSet) Map() map[string]string {
	m := make(map[string]string, t.Len())
	for _, tg := range t.Tags() {
		m[tg.Key] = tg.Value
	}
	return m
}

// String is `k=v,k2=v2` in key order, for messages and tests.
func (t TagSet) String() string {
	var sb strings.Builder
	for i, tg := range t.Tags() {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(tg.Key)
		sb.WriteByte('=')
		sb.WriteString(tg.Value)
	}
	return sb.String()
}

// MarshalJSON writes an object with keys in sorted order ({} when empty).
// Like k6's outputs it does not escape <, > and &.
func (t TagSet) MarshalJSON() ([]byte, error) {
	return t.AppendJSON(nil), nil
}

// AppendJSON appends the MarshalJSON form to b.
func (t TagSet) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, tg := range t.Tags() {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, tg.Key)
		b = append(b, ':')
		b = AppendJSONString(b, tg.Value)
	}
	return append(b, '}')
}

// AppendJSONString appends s as a JSON string, escaping what JSON requires
// (and U+2028/U+2029, as encoding/json does) but not <, > and &.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// UnmarshalJSON reads an object of string values (null is the empty set).
func (t *TagSet) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("tags: %w", err)
	}
	*t = TagsFromMap(m)
	return nil
}
