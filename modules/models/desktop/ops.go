package desktop

// Operation names: each request type is its own op in the report.
const (
	OpNIP11        = "desktop_nip11"
	OpLiveEOSE     = "desktop_live_eose"
	OpReplayEOSE   = "desktop_replay_eose"
	OpPresenceEOSE = "desktop_presence_eose"
	OpProbe        = "desktop_probe"
	OpRoster       = "desktop_roster"
	OpMetadata     = "desktop_metadata"
	OpSidebar      = "desktop_sidebar"
	OpProfiles     = "desktop_profiles"
	OpStatuses     = "desktop_statuses"
	OpEmoji        = "desktop_emoji"
	OpReadState    = "desktop_read_state"
	OpUnread       = "desktop_unread"
	OpReminders    = "desktop_reminders"
	OpWindow       = "desktop_window"
	OpNotices      = "desktop_notices"
	OpThreadRoot   = "desktop_thread_root"
	OpThreadWindow = "desktop_thread_window"
)

// Ops lists every desktop operation name.
var Ops = []string{
	OpNIP11, OpLiveEOSE, OpReplayEOSE, OpPresenceEOSE, OpProbe, OpRoster, OpMetadata, OpSidebar, OpProfiles,
	OpStatuses, OpEmoji, OpReadState, OpUnread, OpReminders, OpWindow, OpNotices, OpThreadRoot,
	OpThreadWindow,
}

// Op is the operation the read's (main) requests are reported under. A
// full unread repair also reports its snapshot as OpReadState, and a
// thread read its root lookup as OpThreadRoot.
func (k ReadKind) Op() string {
	switch k {
	case ReadMetadata:
		return OpMetadata
	case ReadSidebar:
		return OpSidebar
	case ReadRoster:
		return OpRoster
	case ReadProfiles:
		return OpProfiles
	case ReadStatuses:
		return OpStatuses
	case ReadEmoji:
		return OpEmoji
	case ReadUnread:
		return OpUnread
	case ReadReminders:
		return OpReminders
	case ReadWindow:
		return OpWindow
	case ReadNotices:
		return OpNotices
	case ReadThread:
		return OpThreadWindow
	}
	return ""
}

// Requests lists the operation of each request r makes when every paged
// read ends on its first page (one roster page, head-only windows): the
// planned minimum. channels and coMembers size the chunked reads.
func (r Read) Requests(channels, coMembers int) []string {
	rep := func(op string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = op
		}
		return out
	}
	switch r.Key.Kind {
	case ReadMetadata:
		return rep(OpMetadata, ceilDiv(channels, 500))
	case ReadProfiles:
		return rep(OpProfiles, ceilDiv(coMembers, ProfileChunk))
	case ReadStatuses:
		return rep(OpStatuses, ceilDiv(coMembers, StatusChunk))
	case ReadUnread:
		out := rep(OpUnread, ceilDiv(channels, UnreadChunk))
		if r.Snapshot {
			out = append([]string{OpReadState}, out...)
		}
		return out
	case ReadThread:
		return []string{OpThreadRoot, OpThreadWindow}
	}
	return []string{r.Key.Kind.Op()}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
