package relay

import (
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// Kind sets (docs/buzz-protocol.md §1.6, §1.8, §4).
var pGatedKinds = set(nostr.KindObserverFrame, nostr.KindMemberAdded, nostr.KindMemberRemoved, nostr.KindGiftWrap,
	nostr.KindDMVisibility, nostr.KindAgentTurnMetric)

var authorOnlyKinds = set(nostr.KindReminder)

// relayOnlyKinds are refused from clients with "restricted: relay-only kind".
// Buzz names 13534, 40901, 40902, 30622, 39005 and 39006; the relay-signed
// group state 39000-39003, the thread-window bounds 39007, system messages
// 40099 and NIP-43 notices 8000/8001 are refused the same way (our choice:
// docs/buzz-protocol.md says only that clients can never write them).
var relayOnlyKinds = set(
	nostr.KindMembershipList, nostr.KindChannelSummary, nostr.KindPresenceSnapshot, nostr.KindDMVisibility,
	nostr.KindThreadSummary, nostr.KindWindowBounds,
	nostr.KindGroupMetadata, nostr.KindGroupAdmins, nostr.KindGroupMembers, nostr.KindGroupRoles, nostr.KindThreadBounds,
	nostr.KindSystemMessage, nostr.KindMemberAddedNotice, nostr.KindMemberRemovedNotice,
)

// allowedKinds is the client-writable allow-list (docs/buzz-protocol.md
// §4.1), with the desktop app's profile-subscription kinds 10100 and 30177.
var allowedKinds = set(
	nostr.KindProfile, nostr.KindDeletion, nostr.KindReaction, nostr.KindStreamMessage, nostr.KindGiftWrap,
	nostr.KindPutUser, nostr.KindRemoveUser, nostr.KindEditMetadata, nostr.KindDeleteEvent, nostr.KindCreateGroup,
	nostr.KindDeleteGroup, nostr.KindJoinRequest, nostr.KindLeaveRequest,
	nostr.KindEmojiList, nostr.KindAppReplaceable, nostr.KindPresence, nostr.KindTyping, nostr.KindObserverFrame,
	nostr.KindEmojiSet, nostr.KindReadState, nostr.KindAgentEngram, nostr.KindAppAddressable, nostr.KindReminder,
	nostr.KindUserStatus, nostr.KindGitRepo, nostr.KindProject,
	nostr.KindStreamMessageV2, nostr.KindStreamMessageEdit, nostr.KindStreamMessageDiff, nostr.KindCanvas,
	nostr.KindAgentTurnMetric, nostr.KindForumPost, nostr.KindForumVote, nostr.KindForumComment, nostr.KindProjectRevision,
)

// channelKinds need an h tag (Buzz's requires_h_channel_scope).
var channelKinds = set(
	nostr.KindStreamMessage, nostr.KindStreamMessageV2, nostr.KindStreamMessageEdit, nostr.KindStreamMessageDiff,
	nostr.KindCanvas, nostr.KindForumPost, nostr.KindForumVote, nostr.KindForumComment,
	nostr.KindPutUser, nostr.KindRemoveUser, nostr.KindEditMetadata, nostr.KindDeleteEvent, nostr.KindDeleteGroup,
	nostr.KindLeaveRequest, nostr.KindTyping,
)

// threadKinds may carry NIP-10 thread ancestry.
var threadKinds = set(nostr.KindStreamMessage, nostr.KindStreamMessageV2, nostr.KindStreamMessageDiff,
	nostr.KindForumPost, nostr.KindForumComment)

func set(kinds ...int) map[int]bool {
	m := make(map[int]bool, len(kinds))
	for _, k := range kinds {
		m[k] = true
	}
	return m
}

type accessMode int

const (
	accessWS accessMode = iota
	accessCOUNT
	accessHTTP
)

// checkReadAccess applies REQ/COUNT/query gates; it returns the CLOSED (or
// HTTP error) reason, or "". Over HTTP an inaccessible channel is left out
// of the result rather than refused (docs/buzz-protocol.md §3.4), so channel membership is
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
		// A filter without kinds can match every p-gated kind, so Buzz's
		// p_gated_filters_authorized (handlers/req.rs) refuses it unless it
		// names ids or #p=[self]: always on COUNT and the HTTP bridge, and on
		// a WebSocket REQ when the subscription is global (no #h).
		if len(f.Kinds) == 0 && len(f.IDs) == 0 && !onlyValues(f.Tags["p"], reader) && (mode != accessWS || len(channels) == 0) {
			if mode == accessWS {
				return "restricted: p-gated events require #p matching your pubkey"
			}
			return "restricted: p-gated kinds require #p tag matching your pubkey"
		}
		for _, k := range f.Kinds {
			switch {
			case pGatedKinds[k]:
				if !onlyValues(f.Tags["p"], reader) {
					if mode == accessWS {
						return "restricted: p-gated events require #p matching your pubkey"
					}
					return "restricted: p-gated kinds require #p tag matching your pubkey"
				}
			case k == nostr.KindAgentEngram:
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
// Extension fields are ignored on this path (docs/buzz-protocol.md §3.5).
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
