package ledger

import (
	"slices"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// facts are what the ledger keeps of a published event to decide who
// should receive it and whether a delivery was allowed.
type facts struct {
	kind      int
	author    string // hex pubkey
	channel   string // the h tag ("" for a global event)
	p         []string
	community string
	class     string
}

// tracked are the kinds the ledger judges: the ones Buzz fans out as they
// are (a reaction or a deletion without h is moved into its target's
// channel by the relay, which the client cannot know; block/buzz
// crates/buzz-relay/src/handlers/ingest.rs derive_reaction_channel).
func tracked(kind int) bool {
	switch kind {
	case nostr.KindStreamMessage, nostr.KindTyping, nostr.KindPresence, nostr.KindGiftWrap, nostr.KindObserverFrame:
		return true
	}
	return false
}

// factsOf reads ev's facts.
func factsOf(ev *nostr.Event, community, via string) facts {
	f := facts{kind: ev.Kind, author: ev.PubKey, community: community}
	reply := false
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "h":
			if f.channel == "" {
				f.channel = t[1]
			}
		case "p":
			f.p = append(f.p, t[1])
		case "e":
			reply = true
		}
	}
	f.class = className(ev.Kind, reply)
	if via == "http" {
		f.class += " via http"
	}
	return f
}

func className(kind int, reply bool) string {
	switch kind {
	case nostr.KindStreamMessage:
		if reply {
			return "thread_reply"
		}
		return "message"
	case nostr.KindTyping:
		return "typing"
	case nostr.KindPresence:
		return "presence"
	case nostr.KindGiftWrap:
		return "dm"
	case nostr.KindObserverFrame:
		return "observer_frame"
	}
	return "other"
}

// filt is one REQ filter as the ledger judges it: kinds, authors, #h and
// #p (nil: any).
type filt struct {
	kinds   []int
	authors []string
	h, p    []string
}

// compile turns a REQ's filters into the ledger's, with the REQ's scope:
// channel-scoped when every filter names #h, and then the union of the
// channels; global otherwise (docs/buzz-protocol.md §1.6, block/buzz
// crates/buzz-relay/src/subscription.rs fan_out_scoped: channel events go
// only to channel-scoped subscriptions, global ones only to global).
// ok is false for a REQ the ledger cannot judge from an event's facts
// (ids, until, other tags, Buzz's extension fields such as search).
func compile(fs []relayclient.Filter) (out []filt, channels []string, ok bool) {
	if len(fs) == 0 {
		return nil, nil, false
	}
	for i := range fs {
		f := &fs[i]
		if f.IDs != nil || f.Until != 0 || len(f.Extra) > 0 {
			return nil, nil, false
		}
		var c filt
		c.kinds, c.authors = f.Kinds, f.Authors
		for name, vals := range f.Tags {
			switch name {
			case "h":
				c.h = vals
			case "p":
				c.p = vals
			default:
				return nil, nil, false
			}
		}
		out = append(out, c)
	}
	return out, scope(out), true
}

// scope is the channels of a channel-scoped REQ (every filter names #h),
// nil for a global one.
func scope(fs []filt) []string {
	var channels []string
	for _, c := range fs {
		if len(c.h) == 0 {
			return nil
		}
		for _, h := range c.h {
			if !slices.Contains(channels, h) {
				channels = append(channels, h)
			}
		}
	}
	return channels
}

// match reports whether one filter matches the facts.
func (c *filt) match(e *facts) bool {
	if c.kinds != nil && !slices.Contains(c.kinds, e.kind) {
		return false
	}
	if c.authors != nil && !slices.Contains(c.authors, e.author) {
		return false
	}
	if c.h != nil && !slices.Contains(c.h, e.channel) {
		return false
	}
	if c.p != nil {
		for _, p := range e.p {
			if slices.Contains(c.p, p) {
				return true
			}
		}
		return false
	}
	return true
}

// viewFacts are the facts of a delivered event read in place, for a
// delivery of an event the ledger does not hold (the p tags only when a
// filter asks for them: they need the whole event).
func viewFacts(v *nostr.EventView, needP bool) (facts, bool) {
	f := facts{kind: v.Kind, author: v.PubKeyString()}
	if h, ok := v.TagValue("h", 2); ok {
		f.channel = string(h)
	}
	if needP {
		ev, err := v.Event()
		if err != nil {
			return f, false
		}
		for _, t := range ev.Tags {
			if len(t) >= 2 && t[0] == "p" {
				f.p = append(f.p, t[1])
			}
		}
	}
	return f, true
}
