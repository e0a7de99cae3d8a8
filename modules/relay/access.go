package relay

import (
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
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
// of the result rather than refused (digest §3.4), so channel membership is
// checked only on WebSocket.
func (c *community) checkReadAccess(filters []store.Filter, reader string, mode accessMode, maxChannels int) string {
	channels := map[string]bool{}
	searches := 0
	for i := range filters {
		for _, h := range filters[i].Tags["h"] {
			channels[h] = true
		}
		if filters[i].Search != "" {
			searches++
		}
	}
	if maxChannels > 0 && len(channels) > maxChannels {
		return "restricted: too many explicit channels"
	}
	if mode != accessHTTP && searches > 0 && searches < len(filters) {
		return "error: mixed search and non-search filters not supported"
	}
	for i := range filters {
		f := &filters[i]
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
	for h := range channels {
		if !c.canRead(h, reader) {
			return "restricted: not a channel member"
		}
	}
	return ""
}

// history runs a REQ's historical read: per filter at most min(limit,
// maxLimit) events (absent limit = maxLimit), deduplicated, newest first.
// Extension fields are ignored on this path (digest §3.5).
func (c *community) history(filters []store.Filter, reader string, maxLimit int) []*nostr.Event {
	return c.store().QueryN(filters, c.reader(reader), maxLimit)
}

// count counts visible matches of any filter (COUNT, POST /count).
func (c *community) count(filters []store.Filter, reader string) (int, string) {
	n, err := c.store().Count(filters, c.reader(reader))
	if err != nil {
		return 0, err.Error()
	}
	return n, ""
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
