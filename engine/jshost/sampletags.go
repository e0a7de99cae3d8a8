package jshost

import (
	"errors"
	"fmt"
	"slices"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/metrics"
)

// sampleTagsMax bounds a VU's memo of tag sets; past it the memo starts
// again (a script with that many distinct tag objects pays the merge again,
// nothing more).
const sampleTagsMax = 256

// sampleTags is a VU's memo of the tag sets its custom metrics' samples
// carried: a script adds the same few tag objects millions of times, and
// sorting them into a map, building a set and merging it with the VU's
// tags was half of the CPU of a run of 4,000,000 tagged samples (issue 49
// goal 3; docs/benchmarks.md). The key is the VU's tags and the object's
// pairs in their order, read every time (objects are mutable): only the
// building and merging are saved.
type sampleTags struct {
	buf []metrics.Tag
	m   map[uint64][]sampleTagsEntry
	n   int
}

type sampleTagsEntry struct {
	base  metrics.TagSet
	pairs []metrics.Tag
	set   metrics.TagSet
}

// tagSet is base with the tags object arg merged over it (arg's values win),
// as withTags(base, tagArg(arg)) makes it.
func (st *sampleTags) tagSet(base metrics.TagSet, arg sobek.Value) (metrics.TagSet, error) {
	if arg == nil || sobek.IsUndefined(arg) || sobek.IsNull(arg) {
		return base, nil
	}
	o, ok := arg.(*sobek.Object)
	if !ok {
		return base, errors.New("tags must be an object")
	}
	st.buf = st.buf[:0]
	h := base.Hash()
	for _, k := range o.Keys() {
		s, err := tagValue(o.Get(k))
		if err != nil {
			return base, fmt.Errorf("tag %q: %w", k, err)
		}
		st.buf = append(st.buf, metrics.Tag{Key: k, Value: s})
		h = fnv1a(fnv1a(h, k)^0xff, s)
	}
	if len(st.buf) == 0 {
		return base, nil
	}
	for _, e := range st.m[h] {
		if slices.Equal(e.pairs, st.buf) && e.base.Equal(base) {
			return e.set, nil
		}
	}
	set := base.Merge(metrics.NewTagSet(st.buf...))
	if st.m == nil || st.n >= sampleTagsMax {
		st.m, st.n = map[uint64][]sampleTagsEntry{}, 0
	}
	st.m[h] = append(st.m[h], sampleTagsEntry{base: base, pairs: slices.Clone(st.buf), set: set})
	st.n++
	return set, nil
}

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
