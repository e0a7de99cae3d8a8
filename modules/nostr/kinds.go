package nostr

// Event kinds Buzz accepts or emits (docs/buzz-protocol.md §4.1; numbers from
// block/buzz crates/buzz-core/src/kind.rs). Names follow Buzz's where it has
// one, so a reader can grep both code bases.
const (
	KindProfile  = 0 // kind-0 metadata: JSON {name, display_name, picture, about, nip05}
	KindTextNote = 1 // NIP-01 note (not used by Buzz chat; NIP-OA vectors use it)
	KindDeletion = 5 // NIP-09: exactly one e or a tag, h optional
	KindReaction = 7 // NIP-25: e target (last e tag), optional p; "+", emoji or :code:

	KindStreamMessage = 9    // channel message: h; optional p mentions, thread e tags, broadcast, imeta
	KindGiftWrap      = 1059 // NIP-59 gift wrap (DMs), p recipient, NIP-44 content

	// NIP-29 group (channel) administration, client-signed.
	KindPutUser           = 9000 // add member: h, p, optional role
	KindRemoveUser        = 9001 // remove member: h, p
	KindEditMetadata      = 9002 // edit channel: h + changed fields
	KindDeleteEvent       = 9005 // moderation delete: h, e
	KindCreateGroup       = 9007 // create channel: h (new UUID), name
	KindDeleteGroup       = 9008 // delete channel: h
	KindCreateInvite      = 9009 // create an invite
	KindJoinRequest       = 9021 // join an open channel: h
	KindLeaveRequest      = 9022 // leave: h
	KindRelayAddMember    = 9030 // NIP-43 relay membership admin: add (p + role)
	KindRelayRemoveMember = 9031 // NIP-43: remove a relay member
	KindRelayChangeRole   = 9032 // NIP-43: change a relay member's role
	KindRelaySetWorkspace = 9033 // Buzz: set the workspace profile

	// NIP-43 relay membership notices, relay-signed.
	KindMemberAddedNotice   = 8000
	KindMemberRemovedNotice = 8001
	KindMembershipList      = 13534

	KindEmojiList = 10030 // the user's emoji list
	// The desktop app's own profile-subscription kinds (docs/desktop-requests.md
	// §4.1), named here by their NIP-01 range: their content is the app's.
	KindAppReplaceable = 10100
	KindAppAddressable = 30177

	// Ephemeral (20000–29999): fanned out live, never stored.
	KindPresence      = 20001 // content online|away|offline, optional status tag; WS only
	KindTyping        = 20002 // h, empty content
	KindClientAuth    = 22242 // NIP-42 AUTH: relay, challenge (+ optional NIP-OA auth tag)
	KindObserverFrame = 24200 // agent observer frame: p, agent, frame; NIP-44 content; p-gated
	KindHTTPAuth      = 27235 // NIP-98: u, method, payload (+ nonce)

	// Addressable (30000–39999).
	KindEmojiSet      = 30030 // d=buzz:custom-emoji, emoji tags
	KindReadState     = 30078 // d=read-state:<32 hex>, t=read-state; NIP-44 to self
	KindAgentEngram   = 30174 // agent memory record: d, p
	KindReminder      = 30300 // d, not_before; NIP-44 to self; author-only
	KindUserStatus    = 30315 // NIP-38: d=general
	KindGitRepo       = 30617 // NIP-34 repository announcement
	KindProject       = 30621 // project home: d, name, a -> 30617
	KindDMVisibility  = 30622 // relay-only
	KindGroupMetadata = 39000 // NIP-29 state, relay-signed: d = channel
	KindGroupAdmins   = 39001
	KindGroupMembers  = 39002 // p tags with the role as 4th element
	KindGroupRoles    = 39003
	KindThreadSummary = 39005 // /query overlay, relay-signed
	KindWindowBounds  = 39006 // channel-window bounds overlay
	KindThreadBounds  = 39007 // thread-window bounds overlay

	// Buzz stream kinds (40000+).
	KindStreamMessageV2   = 40002 // as kind 9
	KindStreamMessageEdit = 40003 // h, e = edited event; content = new text
	KindStreamMessageDiff = 40008 // h; unified diff
	KindSystemMessage     = 40099 // relay-signed channel system message
	KindCanvas            = 40100 // h
	KindChannelSummary    = 40901 // relay-only sidecar
	KindPresenceSnapshot  = 40902 // relay-only sidecar
	KindDMOpen            = 41010
	KindDMAddMember       = 41011
	KindDMHide            = 41012
	KindMemberAdded       = 44100 // relay-signed, h + p, p-gated
	KindMemberRemoved     = 44101 // relay-signed, h + p, p-gated
	KindAgentTurnMetric   = 44200 // agent-signed, p = owner, p-gated
	KindForumPost         = 45001 // h
	KindForumVote         = 45002
	KindForumComment      = 45003 // h
	KindProjectRevision   = 47001
)

// IsEphemeral reports whether kind is in the ephemeral range 20000–29999,
// which relays fan out but never store.
func IsEphemeral(kind int) bool { return kind >= 20000 && kind < 30000 }

// IsAddressable reports whether kind is in the addressable (parameterised
// replaceable) range 30000–39999, keyed by (pubkey, kind, d tag).
func IsAddressable(kind int) bool { return kind >= 30000 && kind < 40000 }
