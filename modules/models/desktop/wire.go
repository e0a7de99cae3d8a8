package desktop

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// ChannelKinds is the kind set of every channel subscription
// (CHANNEL_LIVE_KINDS in the app).
var ChannelKinds = []int{
	nostr.KindStreamMessage, nostr.KindStreamMessageV2, nostr.KindStreamMessageDiff, nostr.KindForumPost,
	nostr.KindForumComment, nostr.KindSystemMessage, nostr.KindCanvas, nostr.KindStreamMessageEdit,
	nostr.KindDeletion, nostr.KindDeleteEvent, nostr.KindReaction, nostr.KindGroupMetadata,
	nostr.KindGroupMembers, nostr.KindThreadSummary, nostr.KindTyping,
}

// Row kinds of a window page and of a thread page.
var (
	WindowKinds = []int{nostr.KindStreamMessage, nostr.KindStreamMessageV2, nostr.KindStreamMessageDiff, nostr.KindSystemMessage}
	ThreadKinds = []int{nostr.KindStreamMessage, nostr.KindStreamMessageV2}
	UnreadKinds = []int{nostr.KindStreamMessage, nostr.KindStreamMessageV2, nostr.KindStreamMessageDiff}
)

// Page sizes and read limits (docs/desktop-requests.md §5).
const (
	RosterPage       = 500
	WindowHeadLimit  = 20
	WindowOlderLimit = 60
	NoticesLimit     = 20
	ThreadPageLimit  = 50
	ThreadDepthLimit = 100
	RemindersLimit   = 200
	RootSearchLimit  = 50
	MetadataChunk    = 500
)

// Identity is what the wire shapes need besides the model's specs: who the
// viewer is and what it sees.
type Identity struct {
	Viewer    string   // V: the client's pubkey (hex)
	Channels  []string // channel ids, as in Params.Channels
	CoMembers []string // distinct co-member pubkeys (V excluded)
	// LoadCoMembers, when set, gives the co-members instead of CoMembers.
	LoadCoMembers func() []string
	Relay         string // R: the relay key from NIP-11 `self`; "" skips the signer check

	presence []string // PresenceAuthors, once computed by New
}

func (id *Identity) coMembers() []string {
	if id.LoadCoMembers != nil {
		return id.LoadCoMembers()
	}
	return id.CoMembers
}

// PresenceAuthors are the presence subscription's authors: the co-members
// deduplicated and sorted, at most 256.
func (id *Identity) PresenceAuthors() []string {
	if id.presence != nil {
		return id.presence
	}
	a := dedupSorted(id.coMembers())
	if len(a) > PresenceMax {
		a = a[:PresenceMax]
	}
	return a
}

func dedupSorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	j := 0
	for i, s := range out {
		if i == 0 || s != out[j-1] {
			out[j] = s
			j++
		}
	}
	return out[:j]
}

func (id *Identity) channelIDs(idx []int) []string {
	out := make([]string, len(idx))
	for i, c := range idx {
		out[i] = id.Channels[c]
	}
	return out
}

// SubFilters is the REQ of sp (docs/desktop-requests.md §4, §5.15).
func SubFilters(sp SubSpec, id *Identity) []relayclient.Filter {
	live := func(f relayclient.Filter) relayclient.Filter {
		f.Since = sp.Since
		if sp.LiveOnly {
			f.LimitZero = true
		} else {
			f.Limit = ReplayLimit
		}
		return f
	}
	switch {
	case sp.Probe:
		return []relayclient.Filter{{Kinds: []int{nostr.KindMemberAdded, nostr.KindMemberRemoved}, Tags: tags("p", id.Viewer), Since: sp.Since, LimitZero: true}}
	case sp.Route == RouteProfiles:
		return []relayclient.Filter{
			live(relayclient.Filter{Kinds: []int{nostr.KindProfile, nostr.KindAppReplaceable, nostr.KindAppAddressable}}),
			live(relayclient.Filter{Kinds: []int{nostr.KindUserStatus}, Tags: tags("d", "general")}),
			live(relayclient.Filter{Kinds: []int{nostr.KindEmojiSet}, Tags: tags("d", "buzz:custom-emoji")}),
		}
	case sp.Route == RouteMembership:
		return []relayclient.Filter{
			live(relayclient.Filter{Kinds: []int{nostr.KindMemberAdded, nostr.KindMemberRemoved}, Tags: tags("p", id.Viewer)}),
			live(relayclient.Filter{Kinds: []int{nostr.KindReadState}, Authors: []string{id.Viewer}, Tags: tags("t", "read-state")}),
			live(relayclient.Filter{Kinds: []int{nostr.KindReminder}, Authors: []string{id.Viewer}}),
		}
	case sp.Route == RoutePresence:
		return []relayclient.Filter{{Kinds: []int{nostr.KindPresence}, Authors: id.PresenceAuthors(), Since: sp.Since, LimitZero: true}}
	case sp.LiveOnly: // live-only channel subscription or a replacement: one filter
		return []relayclient.Filter{live(relayclient.Filter{Kinds: ChannelKinds, Tags: map[string][]string{"h": id.channelIDs(sp.Channels)}})}
	default: // a replaying batch or replay: one filter per channel
		out := make([]relayclient.Filter, len(sp.Channels))
		for i, c := range sp.Channels {
			out[i] = live(relayclient.Filter{Kinds: ChannelKinds, Tags: tags("h", id.Channels[c])})
		}
		return out
	}
}

func tags(name string, values ...string) map[string][]string {
	return map[string][]string{name: values}
}

func chunkStrings(s []string, n int) [][]string {
	var out [][]string
	for lo := 0; lo < len(s); lo += n {
		out = append(out, s[lo:min(lo+n, len(s))])
	}
	return out
}

// Request is one POST /query of a read: its operation and filters.
type Request struct {
	Op      string
	Filters []relayclient.Filter
}

// FixedRequests are the requests of a read whose requests do not depend on
// earlier replies: metadata, sidebar, profiles, statuses, emoji, the unread
// repair (snapshot first), reminders and notices. Paged reads (roster,
// window) use their pagers and the thread read ThreadRequests; they return
// nil here.
func FixedRequests(r Read, id *Identity) []Request {
	var out []Request
	add := func(op string, fs ...relayclient.Filter) { out = append(out, Request{Op: op, Filters: fs}) }
	switch r.Key.Kind {
	case ReadMetadata:
		for _, c := range chunkStrings(id.Channels, MetadataChunk) {
			add(OpMetadata, relayclient.Filter{Kinds: []int{nostr.KindGroupMetadata}, Tags: tags("d", c...), Limit: 500})
		}
	case ReadSidebar:
		add(OpSidebar,
			relayclient.Filter{Kinds: []int{nostr.KindReadState}, Authors: []string{id.Viewer}, Tags: tags("d", "channel-sections"), Limit: 1},
			relayclient.Filter{Kinds: []int{nostr.KindReadState}, Authors: []string{id.Viewer}, Tags: tags("d", "channel-stars"), Limit: 1})
	case ReadProfiles:
		for _, c := range chunkStrings(dedupSorted(id.coMembers()), ProfileChunk) {
			add(OpProfiles, relayclient.Filter{Kinds: []int{nostr.KindProfile}, Authors: c, Limit: 500})
		}
	case ReadStatuses:
		for _, c := range chunkStrings(dedupSorted(id.coMembers()), StatusChunk) {
			add(OpStatuses, relayclient.Filter{Kinds: []int{nostr.KindUserStatus}, Authors: c, Tags: tags("d", "general"), Limit: len(c)})
		}
	case ReadEmoji:
		add(OpEmoji, relayclient.Filter{Kinds: []int{nostr.KindEmojiSet}, Tags: tags("d", "buzz:custom-emoji"), Limit: 500})
	case ReadUnread:
		if r.Snapshot {
			add(OpReadState, ReadStateFilter(id.Viewer))
		}
		for _, c := range chunkStrings(id.Channels, UnreadChunk) {
			add(OpUnread, relayclient.Filter{Kinds: UnreadKinds, Tags: tags("h", c...), Limit: 500, Extra: map[string]any{"include_aux": true}})
		}
	case ReadReminders:
		add(OpReminders, relayclient.Filter{Kinds: []int{nostr.KindReminder}, Authors: []string{id.Viewer}, Limit: RemindersLimit})
	case ReadNotices:
		add(OpNotices, relayclient.Filter{Kinds: []int{nostr.KindSystemMessage}, Tags: tags("h", id.Channels[WindowChannel(r.Key.Index)]), Limit: NoticesLimit})
	}
	return out
}

// ReadStateFilter is the read-state snapshot request; the reply is an
// object. The app sends it only when NIP-11 advertises the extension.
func ReadStateFilter(viewer string) relayclient.Filter {
	return relayclient.Filter{Kinds: []int{nostr.KindReadState}, Authors: []string{viewer}, Extra: map[string]any{"read_state_snapshot": 1}}
}

// PlainReadStateFilter is the app's fallback without the extension: an
// ordinary bounded read answered by an event array
// (docs/desktop-requests.md §5.8).
func PlainReadStateFilter(viewer string) relayclient.Filter {
	return relayclient.Filter{Kinds: []int{nostr.KindReadState}, Authors: []string{viewer}, Tags: tags("t", "read-state"), Limit: 500}
}

// CheckReadStateSnapshot validates a snapshot reply as the app does: an
// object with read_state_snapshot 1, the viewer's pubkey, the community id
// NIP-11 named, an events array of at most 4096 events and no two sharing a
// d coordinate.
func CheckReadStateSnapshot(viewer, community string) func([]byte) error {
	return func(body []byte) error {
		var r struct {
			Version   *int              `json:"read_state_snapshot"`
			Pubkey    string            `json:"pubkey"`
			Community string            `json:"community_id"`
			Events    []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("read-state snapshot: not an object: %w", err)
		}
		switch {
		case r.Version == nil || *r.Version != 1:
			return fmt.Errorf("read-state snapshot: read_state_snapshot is not 1")
		case r.Pubkey != viewer:
			return fmt.Errorf("read-state snapshot: pubkey %q is not the viewer", r.Pubkey)
		case community != "" && r.Community != community:
			return fmt.Errorf("read-state snapshot: community_id %q is not NIP-11's %q", r.Community, community)
		case r.Events == nil:
			return fmt.Errorf("read-state snapshot: no events array")
		case len(r.Events) > 4096:
			return fmt.Errorf("read-state snapshot: %d events, at most 4096", len(r.Events))
		}
		seen := map[string]bool{}
		for i, raw := range r.Events {
			var ev struct {
				Tags [][]string `json:"tags"`
			}
			if err := json.Unmarshal(raw, &ev); err != nil {
				return fmt.Errorf("read-state snapshot: events[%d]: %w", i, err)
			}
			d := tagValue(ev.Tags, "d")
			if seen[d] {
				return fmt.Errorf("read-state snapshot: events[%d]: d %q repeats", i, d)
			}
			seen[d] = true
		}
		return nil
	}
}

func tagValue(tags [][]string, name string) string {
	for _, t := range tags {
		if len(t) >= 2 && t[0] == name {
			return t[1]
		}
	}
	return ""
}

// RootSearchFilter is the generator's own search for a seeded thread root
// in channel: the channel's top-level head with thread summaries; the root
// is the row whose 39005 summary counts the most replies (see PickRoot).
func RootSearchFilter(channel string) relayclient.Filter {
	return relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: tags("h", channel), Limit: RootSearchLimit,
		Extra: map[string]any{"top_level": true, "include_summaries": true}}
}

// MarkedRootSearchFilter is the generator's search for the seeded roots of
// channel by the word seed puts in their content
// (scenario.RootMarker), with NIP-50 search on /query.
func MarkedRootSearchFilter(channel, word string) relayclient.Filter {
	return relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: tags("h", channel), Limit: RootSearchLimit, Extra: map[string]any{"search": word}}
}

// RootLookupFilter is the app's root lookup once the root is known.
func RootLookupFilter(channel, root string) relayclient.Filter {
	return relayclient.Filter{IDs: []string{root}, Tags: tags("h", channel), Limit: 1}
}

// ThreadPageFilter is the first page of a thread.
func ThreadPageFilter(channel, root string) relayclient.Filter {
	return relayclient.Filter{Kinds: ThreadKinds, Tags: map[string][]string{"h": {channel}, "e": {root}}, Limit: ThreadPageLimit,
		Extra: map[string]any{"depth_limit": ThreadDepthLimit, "include_aux": true, "thread_window": true}}
}
