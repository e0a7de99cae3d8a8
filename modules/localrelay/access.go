package localrelay

import (
	"strings"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Kind sets (digest §1.6, §1.8, §4).
const (
	kindEngram       = 30174
	kindPresence     = 20001
	kindTyping       = 20002
	kindObserver     = 24200
	kindGiftWrap     = 1059
	kindReaction     = 7
	kindDeletion     = 5
	kindModDelete    = 9005
	kindAddUser      = 9000
	kindRemoveUser   = 9001
	kindEditMeta     = 9002
	kindDeleteGroup  = 9008
	kindCreateGroup  = 9007
	kindJoin         = 9021
	kindLeave        = 9022
	kindProfile      = 0
	kindEdit         = 40003
	kindReminder     = 30300
	kindMemberAdded  = 44100
	kindMemberRemove = 44101
)

var pGatedKinds = map[int]bool{24200: true, 44100: true, 44101: true, 1059: true, 30622: true, 44200: true}

var authorOnlyKinds = map[int]bool{kindReminder: true}

// relayOnlyKinds are refused from clients with "restricted: relay-only kind".
// Buzz names 13534, 40901, 40902, 30622, 39005 and 39006; the relay-signed
// group state 39000-39003, the thread-window bounds 39007, system messages
// 40099 and NIP-43 notices 8000/8001 are refused the same way (our choice:
// the digest says only that clients can never write them).
var relayOnlyKinds = map[int]bool{
	13534: true, 40901: true, 40902: true, 30622: true, 39005: true, 39006: true,
	39000: true, 39001: true, 39002: true, 39003: true, 39007: true, 40099: true, 8000: true, 8001: true,
}

// allowedKinds is the client-writable allow-list (digest §4.1). Kinds
// 10100 and 30177 are the desktop app's profile-subscription kinds.
var allowedKinds = map[int]bool{
	0: true, 5: true, 7: true, 9: true, 1059: true,
	9000: true, 9001: true, 9002: true, 9005: true, 9007: true, 9008: true, 9021: true, 9022: true,
	10030: true, 10100: true, 20001: true, 20002: true, 24200: true,
	30030: true, 30078: true, 30174: true, 30177: true, 30300: true, 30315: true, 30617: true, 30621: true,
	40002: true, 40003: true, 40008: true, 40100: true,
	44200: true, 45001: true, 45002: true, 45003: true, 47001: true,
}

// channelKinds need an h tag (Buzz's requires_h_channel_scope).
var channelKinds = map[int]bool{
	9: true, 40002: true, 40003: true, 40008: true, 40100: true, 45001: true, 45002: true, 45003: true,
	9000: true, 9001: true, 9002: true, 9005: true, 9008: true, 9022: true, 20002: true,
}

// threadKinds may carry NIP-10 thread ancestry.
var threadKinds = map[int]bool{9: true, 40002: true, 40008: true, 45001: true, 45003: true}

type accessMode int

const (
	accessWS accessMode = iota
	accessCOUNT
	accessHTTP
)

// checkReadAccess applies REQ/COUNT/query gates; it returns the CLOSED (or
// HTTP error) reason, or "". Over HTTP an inaccessible channel is left out
// of the result rather than refused (digest §3.4), so membership is checked
// only on WebSocket.
func (c *community) checkReadAccess(filters []*Filter, reader string, mode accessMode, maxChannels int) string {
	channels := map[string]bool{}
	searches := 0
	for _, f := range filters {
		for _, h := range f.channels() {
			channels[h] = true
		}
		if f.HasSearch {
			searches++
		}
	}
	if maxChannels > 0 && len(channels) > maxChannels {
		return "restricted: too many explicit channels"
	}
	if searches > 0 && searches < len(filters) {
		return "error: mixed search and non-search filters not supported"
	}
	for _, f := range filters {
		for _, k := range f.Kinds {
			switch {
			case pGatedKinds[k]:
				if !onlyValues(f.Tags["p"], reader) {
					if mode == accessWS {
						return "restricted: p-gated events require #p matching your pubkey"
					}
					return "restricted: p-gated kinds require #p tag matching your pubkey"
				}
			case k == kindEngram:
				if !onlyValues(f.Authors, reader) && !onlyValues(f.Tags["p"], reader) {
					return "restricted: agent-engram reads require authors=[self] or #p=[self]"
				}
			case authorOnlyKinds[k]:
				if !onlyValues(f.Authors, reader) {
					return "restricted: author-only kinds require authors=[self]"
				}
			}
		}
	}
	if mode == accessHTTP {
		return ""
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for h := range channels {
		if !c.canRead(h, reader) {
			return "restricted: not a channel member"
		}
	}
	return ""
}

// history runs the filters for a historical read: per filter at most
// min(limit, maxLimit) events (absent limit = maxLimit), deduplicated,
// newest first.
func (c *community) history(filters []*Filter, reader string, maxLimit int) []*Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Entry
	var seen map[string]bool
	if len(filters) > 1 {
		seen = map[string]bool{}
	}
	for _, f := range filters {
		limit := maxLimit
		if f.Limit != nil && *f.Limit < limit {
			limit = *f.Limit
		}
		if limit <= 0 {
			continue
		}
		n := 0
		c.store.Scan(f, func(e *Entry) bool {
			if f.HasBeforeID && f.Until != nil && !afterCursor(e, *f.Until, f.BeforeID) {
				return true
			}
			if !f.matches(e) || !c.visible(e, reader) {
				return true
			}
			if f.HasSearch && !strings.Contains(strings.ToLower(e.Event.Content), strings.ToLower(f.Search)) {
				return true
			}
			if seen != nil {
				if seen[e.Event.ID] {
					return true
				}
				seen[e.Event.ID] = true
			}
			out = append(out, e)
			n++
			return n < limit
		})
	}
	if len(filters) > 1 {
		sortNewestFirst(out)
	}
	return out
}

// countScanCap bounds an unindexed COUNT (digest §1.3: fallback scan 5000).
const countScanCap = 5000

// count counts visible matches of any filter.
func (c *community) count(filters []*Filter, reader string) (int, string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	seen := map[string]bool{}
	for _, f := range filters {
		indexed := len(f.IDs) > 0 || len(f.channels()) > 0 || len(f.Authors) > 0
		scanned := 0
		tooBroad := false
		c.store.Scan(f, func(e *Entry) bool {
			scanned++
			if !indexed && scanned > countScanCap {
				tooBroad = true
				return false
			}
			if f.matches(e) && c.visible(e, reader) {
				seen[e.Event.ID] = true
			}
			return true
		})
		if tooBroad {
			return 0, "restricted: count filter requires narrower constraints"
		}
	}
	return len(seen), ""
}

// eventChannel returns the h tag value when it is a UUID (Buzz parses the
// h tag as a UUID and treats anything else as absent).
func eventChannel(e *nostr.Event) string {
	for _, t := range e.Tags {
		if len(t) >= 2 && t[0] == "h" && isUUID(t[1]) {
			return t[1]
		}
	}
	return ""
}
