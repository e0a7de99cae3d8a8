package desktop

import (
	"slices"
	"testing"
	"time"
)

// current renewal (PR "Testing": 499 reads nothing; 500 adds exactly ...)
func TestCurrentRenewal(t *testing.T) {
	channelRecovery := []string{"window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]"}
	for _, c := range []struct {
		name   string
		replay func(SubSpec) int
		want   []string
	}{
		{"499 replayed events everywhere read nothing", everywhere(499), nil},
		{"500 on the channel batch adds channel recovery and a covered repair",
			replays(500, RouteBatch), append([]string{"unread"}, channelRecovery...)},
		{"500 on membership adds roster, read state, unread, reminders and channel recovery",
			replays(500, RouteMembership), append([]string{"roster", "unread+snapshot", "reminders"}, channelRecovery...)},
		{"500 on profiles adds profiles, statuses, emoji, channel recovery and a covered repair",
			replays(500, RouteProfiles), append([]string{"profiles", "statuses", "emoji", "unread"}, channelRecovery...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := params(ModeCurrent, 5)
			p.Renewal = 300 * time.Second
			s := newSim(t, p)
			s.coldStart()
			s.mark()
			s.advance(300 * time.Second)
			if !slices.Contains(s.log, "connect nip11=false renewal=true") {
				t.Fatalf("no renewal: %q", s.log)
			}
			s.connected()
			s.eoseAll(c.replay)
			s.wantReads(c.want...)
			if s.ops[OpNIP11] != 0 {
				t.Error("a current renewal read NIP-11")
			}
		})
	}
}

func TestCurrentRenewalWithMoreThanTenChannelsRecoversChannelsButNotGlobals(t *testing.T) {
	p := params(ModeCurrent, 25)
	p.Renewal = 300 * time.Second
	s := newSim(t, p)
	s.coldStart()
	s.mark()
	s.advance(300 * time.Second)
	s.connected()
	s.quiesce()
	s.wantReads("unread", "window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]")
	s.wantOps(map[string]int{OpLiveEOSE: 3, OpPresenceEOSE: 1, OpReplayEOSE: 3, OpUnread: 1, OpWindow: 3, OpNotices: 3, OpThreadRoot: 1, OpThreadWindow: 1})
}

func TestLegacyRenewalIsAFullReconnect(t *testing.T) {
	p := params(ModeLegacy, 5)
	p.Renewal = 330 * time.Second // between ticks
	s := newSim(t, p)
	s.coldStart()
	s.advance(329 * time.Second)
	s.quiesce()
	s.mark()
	s.advance(time.Second)
	s.connected()
	s.quiesce()
	// everything but channel names and sidebar preferences
	s.wantOps(map[string]int{OpNIP11: 1, OpLiveEOSE: 3, OpPresenceEOSE: 1, OpRoster: 1, OpProfiles: 1, OpStatuses: 1, OpEmoji: 1,
		OpReadState: 1, OpUnread: 1, OpReminders: 1, OpWindow: 3, OpNotices: 3, OpThreadRoot: 1, OpThreadWindow: 1})
}

func TestCurrentReconnectAfterADroppedConnection(t *testing.T) {
	recovery := []string{"window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]"}
	t.Run("complete global replays read only NIP-11, channel recovery and a covered repair", func(t *testing.T) {
		s := newSim(t, params(ModeCurrent, 5))
		s.coldStart()
		s.mark()
		s.drop()
		s.advance(time.Second)
		s.connected()
		s.eoseAll(everywhere(499))
		s.wantReads(append([]string{"unread"}, recovery...)...)
		if s.ops[OpNIP11] != 1 {
			t.Errorf("NIP-11 read %d times", s.ops[OpNIP11])
		}
	})
	t.Run("truncated global replays reread both globals in full", func(t *testing.T) {
		s := newSim(t, params(ModeCurrent, 5))
		s.coldStart()
		s.mark()
		s.drop()
		s.advance(time.Second)
		s.connected()
		s.eoseAll(replays(500, RouteProfiles, RouteMembership))
		s.wantReads(append([]string{"profiles", "statuses", "emoji", "roster", "unread+snapshot", "reminders"}, recovery...)...)
	})
}

func TestSessionEndIsAnOrdinaryReconnect(t *testing.T) {
	for _, mode := range []Mode{ModeLegacy, ModeCurrent} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newSim(t, params(mode, 5))
			s.coldStart()
			s.mark()
			s.now = s.now.Add(time.Minute)
			s.do(SessionEnd{At: s.now})
			if !slices.Equal(s.log, []string{"disconnect", "connect nip11=true renewal=false"}) {
				t.Fatalf("session end: %q", s.log)
			}
			s.connected()
			s.quiesce()
			if s.ops[OpMetadata]+s.ops[OpSidebar] != 0 {
				t.Error("a reconnect reread names or sidebar")
			}
		})
	}
}
