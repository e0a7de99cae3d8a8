package opentelemetry

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/buzzload/buzzload/engine/metrics"
)

// attrCacheMax bounds the cache of attribute sets; past it the cache starts
// again (a run with that many tag sets pays the conversion again, nothing
// more).
const attrCacheMax = 4096

// attrCache converts tag sets to attribute sets once: an attribute.Set is
// sorted and hashed when built, and a run records the same few tag sets
// millions of times.
type attrCache struct {
	m map[attrKey][]attrEntry
	n int
}

type attrKey struct {
	hash uint64
	cond string // "", "zero" or "nonzero" (a Rate's condition)
}

type attrEntry struct {
	tags metrics.TagSet
	set  attribute.Set
}

func newAttrCache() attrCache { return attrCache{m: map[attrKey][]attrEntry{}} }

// get is the attribute set of the tags with an empty key or value left out
// (as k6 does), plus condition=cond when cond is set.
func (c *attrCache) get(tags metrics.TagSet, cond string) attribute.Set {
	k := attrKey{tags.Hash(), cond}
	for _, e := range c.m[k] {
		if e.tags.Equal(tags) {
			return e.set
		}
	}
	kvs := make([]attribute.KeyValue, 0, tags.Len()+1)
	for _, t := range tags.Tags() {
		if t.Key != "" && t.Value != "" {
			kvs = append(kvs, attribute.String(t.Key, t.Value))
		}
	}
	if cond != "" {
		kvs = append(kvs, attribute.String("condition", cond))
	}
	set := attribute.NewSet(kvs...)
	if c.n >= attrCacheMax {
		c.m, c.n = map[attrKey][]attrEntry{}, 0
	}
	c.m[k] = append(c.m[k], attrEntry{tags, set})
	c.n++
	return set
}
