package relay

import (
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// liveFilter is what a fan-out checks of one live filter before, or instead
// of, store.Filter.MatchesInChannel. A wide channel's fan-out checks every
// subscription of the channel (the human model holds two there, one of
// which rarely matches), and the full match reads the filter, its kinds,
// its tag lists and their strings, each in memory of its own: cache misses
// that made matching ~13 % of the relay's CPU. This summary sits in one
// array per subscription and decides most cases alone:
//
//   - the kind is not among the filter's kinds: no match;
//   - the filter needs a one-letter tag the event does not carry: no match;
//   - a filter of kinds and one #h value only (the channel REQ) matches an
//     event of its channel: a match.
//
// Anything else falls through to the full match, so the result is the same.
type liveFilter struct {
	kinds  [4]int32 // the filter's kinds, when nKinds >= 0
	nKinds int8     // -1: any kind, or too many to hold (the full match decides)
	simple bool     // only kinds and #h:[h]: a channel event of h matches
	need   uint64   // one-letter tags the filter constrains (tagBit)
	h      string   // the one #h value of a simple filter
}

// liveFilters summarises a subscription's filters (one per filter).
func liveFilters(filters []store.Filter) []liveFilter {
	out := make([]liveFilter, len(filters))
	for i := range filters {
		f := &filters[i]
		lf := &out[i]
		lf.nKinds = -1
		if f.Kinds != nil && len(f.Kinds) <= len(lf.kinds) {
			lf.nKinds = int8(len(f.Kinds))
			for j, k := range f.Kinds {
				lf.kinds[j] = int32(k)
			}
		}
		for name, vals := range f.Tags {
			if len(vals) > 0 {
				lf.need |= tagBit(name)
			}
		}
		if hs := f.Tags["h"]; len(f.Tags) == 1 && len(hs) == 1 && f.IDs == nil && f.Authors == nil &&
			f.Since == nil && f.Until == nil && f.Search == "" {
			lf.simple, lf.h = true, hs[0]
		}
	}
	return out
}

// tagBit is a one-letter tag name's bit (a-z, A-Z), else 0.
func tagBit(name string) uint64 {
	if len(name) != 1 {
		return 0
	}
	switch c := name[0]; {
	case c >= 'a' && c <= 'z':
		return 1 << (c - 'a')
	case c >= 'A' && c <= 'Z':
		return 1 << (26 + c - 'A')
	}
	return 0
}

// eventTagBits is the set of one-letter tags e can match: the names of its
// tags with a value, and h when the store placed it in a channel (a
// reaction matches #h:[its target's channel] without an h tag).
func eventTagBits(e *nostr.Event, channel string) uint64 {
	var m uint64
	for _, t := range e.Tags {
		if len(t) >= 2 {
			m |= tagBit(t[0])
		}
	}
	if channel != "" {
		m |= tagBit("h")
	}
	return m
}

// decide decides what it can of whether the live event e (with
// eventTagBits tags) matches the filter lf summarises: sure is false when
// only the full match (store.Filter.MatchesInChannel) can tell.
func (lf *liveFilter) decide(e *entry, tags uint64) (match, sure bool) {
	if lf.nKinds >= 0 {
		k, ok := int32(e.Event.Kind), false
		for _, x := range lf.kinds[:lf.nKinds] {
			if x == k {
				ok = true
				break
			}
		}
		if !ok {
			return false, true
		}
	}
	if lf.need&^tags != 0 {
		return false, true
	}
	if lf.simple && e.Channel != "" && e.Channel == lf.h {
		return true, true
	}
	return false, false
}

// matches is decide, completed by the full match of f (the filter lf
// summarises).
func (lf *liveFilter) matches(f *store.Filter, e *entry, tags uint64) bool {
	if m, sure := lf.decide(e, tags); sure {
		return m
	}
	return f.MatchesInChannel(e.Event, e.Channel)
}
