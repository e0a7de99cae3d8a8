package desktop

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPlanRoutes(t *testing.T) {
	kinds := func(rs []Route) string {
		var b []string
		for _, r := range rs {
			s := r.Kind.String()
			if r.Kind.Channel() {
				s += "(" + strconv.Itoa(len(r.Channels)) + ")"
			}
			b = append(b, s)
		}
		return strings.Join(b, " ")
	}
	for _, c := range []struct {
		name     string
		mode     Mode
		n        int
		presence bool
		scope    int
		want     string
	}{
		{"up to 10 channels legacy is one replaying batch", ModeLegacy, 5, true, 0, "profiles membership presence batch(5)"},
		{"up to 10 channels current is one replaying batch", ModeCurrent, 10, true, 0, "profiles membership presence batch(10)"},
		{"legacy over 10 is one batch per 10", ModeLegacy, 25, true, 0, "profiles membership presence batch(10) batch(10) batch(5)"},
		{"current over 10 is live-only plus replays of 10", ModeCurrent, 25, true, 0, "profiles membership presence live(25) replay(10) replay(10) replay(5)"},
		{"current live-only covers 2048 channels each", ModeCurrent, 4100, false, 0, "profiles membership live(2048) live(2048) live(4) " + strings.TrimSpace(strings.Repeat("replay(10) ", 410))},
		{"no co-member sends no presence", ModeCurrent, 0, false, 0, "profiles membership"},
		{"a 128-channel live-only scope for capped relays", ModeCurrent, 300, false, 128, "profiles membership live(128) live(128) live(44) " + strings.TrimSpace(strings.Repeat("replay(10) ", 30))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := kinds(PlanRoutes(c.mode, c.n, c.presence, c.scope)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// The cold-start table of docs/desktop-requests.md §1 (W = 3, T = 1, ≤ 100
// co-members, head-only windows).
func TestColdStartCountsPerOp(t *testing.T) {
	common := map[string]int{
		OpNIP11: 1, OpRoster: 1, OpMetadata: 1, OpSidebar: 1, OpProfiles: 1, OpStatuses: 1, OpEmoji: 1,
		OpReadState: 1, OpUnread: 1, OpReminders: 1, OpWindow: 3, OpNotices: 3, OpThreadRoot: 1, OpThreadWindow: 1,
	}
	for _, c := range []struct {
		name         string
		mode         Mode
		n            int
		live, replay int
	}{
		{"legacy 5 channels", ModeLegacy, 5, 3, 0},
		{"current 5 channels", ModeCurrent, 5, 3, 0},
		{"legacy 25 channels", ModeLegacy, 25, 5, 0},
		{"current 25 channels", ModeCurrent, 25, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, params(c.mode, c.n))
			s.coldStart()
			want := map[string]int{OpLiveEOSE: c.live, OpPresenceEOSE: 1}
			if c.replay > 0 {
				want[OpReplayEOSE] = c.replay
			}
			for k, v := range common {
				want[k] = v
			}
			s.wantOps(want)
			// current closes each replay at its EOSE; everything else (and presence) stays open
			if got, want := len(s.wire), c.live+1; got != want {
				t.Errorf("%d REQs left open, want %d", got, want)
			}
		})
	}
}

func TestLegacyMakesEveryReadAsItConnects(t *testing.T) {
	s := newSim(t, params(ModeLegacy, 5))
	s.start()
	s.connected()
	s.wantReads("metadata", "sidebar", "roster", "profiles", "statuses", "emoji", "unread+snapshot",
		"reminders", "window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]")
}

func TestCurrentReadsNamesAndSidebarUpFrontAndTheRestAtEachEOSE(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	s.wantReads("metadata", "sidebar")
	ids := s.sentIDs() // profiles, membership, presence, batch
	step := func(i int, want ...string) {
		t.Helper()
		s.mark()
		delete(s.sent, ids[i])
		s.do(EOSE{Sub: ids[i], At: s.now})
		s.wantReads(want...)
	}
	step(0, "profiles", "statuses", "emoji")
	step(1, "roster", "unread+snapshot", "reminders")
	step(2) // presence establishes nothing
	step(3, "window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]")
}

func TestAtMostFourREQsAreSetUpAtOnce(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 25))
	s.start()
	s.connected()
	if n := len(s.sent); n != 4 {
		t.Fatalf("%d REQs sent before any EOSE, want 4", n)
	}
	first := s.sentIDs()[0]
	delete(s.sent, first)
	s.do(EOSE{Sub: first, At: s.now})
	if n := len(s.sent); n != 4 {
		t.Fatalf("%d REQs awaiting after one EOSE, want 4 (one more sent)", n)
	}
	s.quiesce()
	if s.ops[OpLiveEOSE]+s.ops[OpPresenceEOSE]+s.ops[OpReplayEOSE] != 7 {
		t.Errorf("sent %v", s.ops)
	}
}

func TestAnEOSEThatArrivedAfterItsDeadlineIsATimeout(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	s.mark()
	id := s.sentIDs()[1] // membership
	delete(s.sent, id)
	s.do(EOSE{Sub: id, At: s.now.Add(DefaultEOSETimeout + time.Millisecond)})
	// a missed deadline is a cut: membership is recovered in full...
	s.wantReads("roster", "unread+snapshot", "reminders")
	// ...but does not catch the route up, so the next connection cannot resume it
	if s.m.routes[1].caughtUp {
		t.Error("a late EOSE caught the route up")
	}
}

func TestResumeSince(t *testing.T) {
	start := t0
	for _, c := range []struct {
		name    string
		prevEnd time.Time
		cold    bool
		want    int64
	}{
		{"cold start replays from 300 s before the start", time.Time{}, true, t0.Unix() - 300},
		{"resume starts 960 s before the previous session ended", t0.Add(3600 * time.Second), false, t0.Unix() + 3600 - 960},
		{"but not before 300 s before the client started", t0.Add(200 * time.Second), false, t0.Unix() - 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ResumeSince(start, c.prevEnd, c.cold); got != c.want {
				t.Errorf("since %d, want %d", got, c.want)
			}
		})
	}
	// the worked example of docs/desktop-requests.md §4.6
	if got := ResumeSince(time.Unix(1_800_000_000, 0), time.Unix(1_800_003_600, 0), false); got != 1800002640 {
		t.Errorf("worked example: %d", got)
	}
}

func TestResumedSubscriptionsCarryTheResumeSince(t *testing.T) {
	for _, mode := range []Mode{ModeLegacy, ModeCurrent} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newSim(t, params(mode, 5))
			s.coldStart()
			s.now = s.now.Add(3600 * time.Second)
			s.drop()
			s.advance(time.Second)
			s.connected()
			want := t0.Unix() + 3600 - 960
			for id, sp := range s.sent {
				if sp.Since != want {
					t.Errorf("%s since %d, want %d", id, sp.Since, want)
				}
			}
			if len(s.sent) != 4 {
				t.Errorf("%d REQs", len(s.sent))
			}
		})
	}
}

// Backstops (PR "Testing": with renewals shorter than the backstop,
// read-state snapshots still recur at the backstop). Review fix: a covered
// repair used to restart the full repair's backstop, so renewals every 300 s
// postponed the snapshot forever. Mutant "lastFullRepair = at for covered
// repairs too" (in repair) fails this test with 1 snapshot instead of 3.
func TestSnapshotsRecurAtTheBackstopEvenWithShorterRenewals(t *testing.T) {
	p := params(ModeCurrent, 25)
	p.Renewal = 300 * time.Second
	s := newSim(t, p)
	s.coldStart()
	for s.now.Sub(t0) < 1850*time.Second {
		s.advance(30 * time.Second)
		if s.m.state == stateConnecting {
			s.connected()
		}
		s.quiesce()
	}
	if got := s.ops[OpReadState]; got != 3 { // cold start, tick 900, tick 1800
		t.Errorf("%d read-state snapshots in 1850 s with a 900 s backstop, want 3", got)
	}
	// renewals at 300, 600, 1200 and 1500 repair unreads without the
	// snapshot (at 900 and 1800 the tick's full repair is still running)
	if covered := s.ops[OpUnread] - s.ops[OpReadState]; covered != 4 {
		t.Errorf("%d covered repairs, want 4", covered)
	}
}

func TestCurrentTicksIdleUntilTheBackstopThenReplaceLiveOnly(t *testing.T) {
	p := params(ModeCurrent, 25)
	p.Backstop = 300 * time.Second
	s := newSim(t, p)
	s.coldStart()
	s.mark()
	s.lastFrame = s.now.Add(299 * time.Second) // keep the socket from looking silent
	s.advance(299 * time.Second)
	if len(s.log) != 0 {
		t.Fatalf("ticks before the backstop acted: %q", s.log)
	}
	s.lastFrame = s.now
	s.advance(time.Second)
	var reqs []string
	for _, l := range s.log {
		if strings.HasPrefix(l, "REQ ") {
			reqs = append(reqs, l)
		}
	}
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0], " live live-only") {
		t.Errorf("backstop tick REQs %q, want one live-only replacement", reqs)
	}
	s.wantReads("roster", "unread+snapshot")
	s.quiesce()
	if len(s.wire) != 4 { // profiles, membership, presence, live-only
		t.Errorf("%d REQs open after the replacement", len(s.wire))
	}
}

// Review fix: a legacy replacement must open the new REQ before closing the
// old one. Mutant "emit CloseSub(old) when the replacement is opened"
// fails the order check.
func TestLegacyTicksReplaceNewBeforeOldAndReread(t *testing.T) {
	s := newSim(t, params(ModeLegacy, 25))
	s.coldStart()
	oldBatches := map[string]bool{}
	for id, sp := range s.wire {
		if sp.Route == RouteBatch {
			oldBatches[id] = true
		}
	}
	for tick := 1; tick <= 2; tick++ {
		s.mark()
		s.lastFrame = s.now.Add(time.Minute)
		s.advance(time.Minute)
		s.wantReads("roster", "unread+snapshot")
		newReqs := 0
		for _, l := range s.log {
			if strings.HasPrefix(l, "CLOSE") {
				t.Fatalf("tick %d closed before the replacement's EOSE: %q", tick, s.log)
			}
			if strings.HasSuffix(l, "batch live-only") {
				newReqs++
			}
		}
		if newReqs != 3 {
			t.Fatalf("tick %d: %d replacement REQs, want 3: %q", tick, newReqs, s.log)
		}
		s.quiesce()
		closes := 0
		for _, l := range s.log {
			if strings.HasPrefix(l, "CLOSE") {
				closes++
			}
		}
		if closes != 3 {
			t.Errorf("tick %d: %d CLOSEs after the replacements' EOSE, want 3", tick, closes)
		}
		for id := range oldBatches {
			if _, open := s.wire[id]; open {
				t.Errorf("tick %d: replaced batch %s still open", tick, id)
			}
		}
		clear(oldBatches)
		for id, sp := range s.wire {
			if sp.Route == RouteBatch {
				oldBatches[id] = true
			}
		}
		if len(oldBatches) != 3 {
			t.Errorf("tick %d: %d batch REQs open, want 3", tick, len(oldBatches))
		}
	}
}

// Review fix: a replacement that misses its EOSE deadline is closed and the
// batch it would have replaced stays. Mutant "close the old batch when the
// replacement fails" leaves no batch open and fails this test.
func TestAReplacementPastItsDeadlineIsClosedAndTheOldBatchStays(t *testing.T) {
	p := params(ModeCurrent, 5)
	p.Backstop = 0 // every tick replaces
	s := newSim(t, p)
	s.coldStart()
	batch := ""
	for id, sp := range s.wire {
		if sp.Route == RouteBatch {
			batch = id
		}
	}
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	repl := s.failSub(isRoute(RouteBatch))
	if _, open := s.wire[repl]; open {
		t.Error("the late replacement was not closed")
	}
	if _, open := s.wire[batch]; !open {
		t.Fatal("the old batch was closed")
	}
	s.settle(nil)
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	if n := s.ops[OpLiveEOSE]; n != 1 {
		t.Fatalf("next tick sent %d replacements, want 1: %q", n, s.log)
	}
	s.quiesce()
	batches := 0
	for _, sp := range s.wire {
		if sp.Route == RouteBatch {
			batches++
		}
	}
	if _, open := s.wire[batch]; open || batches != 1 {
		t.Errorf("after the retry: old batch open %v, %d batch REQs open, want exactly one", open, batches)
	}
}

// Owed reads (PR: a failed roster and unread read retry on the next tick,
// and successful reads do not run again).
func TestFailedRosterAndUnreadRetryOnTheNextTick(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	s.eoseAll(nil)
	s.settle(func(r Read) (bool, bool) {
		switch r.Key.Kind {
		case ReadRoster:
			return false, true
		case ReadUnread:
			return false, true // the snapshot succeeded, the repair failed
		}
		return true, true
	})
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	s.wantReads("roster", "unread") // no snapshot: it succeeded
	s.settle(nil)
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	s.wantReads()
}

// Review fix: each read leaves the running set as soon as it settles. The
// mutant "a settled read stays in the running set until every running read
// has settled" keeps the failed roster counted as running behind the slow
// window read, and this test fails.
func TestAFailedRosterRetriesWhileAnUnrelatedSlowReadRuns(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	s.eoseAll(nil)
	var slow Read
	for len(s.reads) > 0 {
		r := s.reads[0]
		s.reads = s.reads[1:]
		if r.Key == (ReadKey{Kind: ReadWindow}) {
			slow = r // never settles in this test
			continue
		}
		s.do(ReadSettled{Read: r.Key, At: s.now, OK: r.Key.Kind != ReadRoster, SnapshotOK: true})
	}
	if slow.Key.Kind != ReadWindow {
		t.Fatal("no window read")
	}
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	s.wantReads("roster")
}

// Review fix: a snapshot failure is owed apart from the repair. Mutant
// "continuous membership always repairs without the snapshot" fails here.
func TestASnapshotFailureIsHonouredByTheNextContinuousMembershipEstablishment(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	s.eoseAll(nil)
	s.settle(func(r Read) (bool, bool) { return true, r.Key.Kind != ReadUnread })
	s.mark()
	s.drop()
	s.advance(time.Second)
	s.connected()
	s.eoseAll(nil)
	s.wantReads("unread+snapshot", "window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]")
}

// Review fix: a repair without the snapshot never settles snapshot debt.
// Here a full repair comes due at the backstop while a covered one is still
// running, so it cannot be added and is owed; the covered one then
// succeeds. Mutant "any settled unread repair sets snapshotOwed from
// SnapshotOK" (dropping the running.Snapshot guard) settles the debt and
// the next continuous membership establishment repairs without it.
func TestACoveredRepairDoesNotSettleAnOwedSnapshot(t *testing.T) {
	p := params(ModeCurrent, 5)
	p.Backstop = 120 * time.Second
	s := newSim(t, p)
	s.coldStart()
	s.now = s.now.Add(10 * time.Second)
	s.drop()
	s.advance(time.Second)
	s.connected()
	s.eoseAll(nil) // continuous: a covered repair starts
	var covered []Read
	for len(s.reads) > 0 { // everything but the covered repair settles
		r := s.reads[0]
		s.reads = s.reads[1:]
		if r.Key.Kind == ReadUnread {
			covered = append(covered, r)
			continue
		}
		s.do(ReadSettled{Read: r.Key, At: s.now, OK: true, SnapshotOK: true})
	}
	if len(covered) != 1 || covered[0].Snapshot {
		t.Fatalf("want one covered repair running, have %v", covered)
	}
	s.mark()
	s.advance(t0.Add(p.Backstop).Sub(s.now)) // the tick at 120 s: a full repair is due
	s.settle(nil)                            // (the roster read the tick started)
	if slices.Contains(s.readLog(), "unread+snapshot") {
		t.Fatal("a full repair ran beside the covered one")
	}
	s.do(ReadSettled{Read: covered[0].Key, At: s.now, OK: true, SnapshotOK: true})
	// the next continuous membership establishment, before any tick, still
	// owes the snapshot
	s.mark()
	s.drop()
	s.advance(time.Second)
	s.connected()
	s.eoseAll(nil)
	s.wantReads("unread+snapshot", "window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]")
}

// Review fix: only an EOSE catches a route up. Mutant "a route recovered
// after its deadline counts as caught up" lets the renewal carry it and
// this test reads nothing after the renewal.
func TestARouteThatMissedItsDeadlineIsRecoveredInFullAgainAfterARenewal(t *testing.T) {
	p := params(ModeCurrent, 5)
	p.Renewal = 300 * time.Second
	s := newSim(t, p)
	s.start()
	s.connected()
	s.failSub(isRoute(RouteMembership))
	s.eoseAll(nil)
	if got := s.readLog(); !slices.Contains(got, "roster") || !slices.Contains(got, "unread+snapshot") {
		t.Fatalf("missed deadline not recovered: %q", got)
	}
	s.settle(nil)
	s.mark()
	s.advance(300 * time.Second)
	s.connected()
	s.eoseAll(nil) // a complete replay everywhere
	s.wantReads("roster", "unread+snapshot", "reminders", "window[0]", "notices[0]", "window[1]", "notices[1]", "window[2]", "notices[2]", "thread[0]")
}

func TestAnOwedProfileReadRunsWhenTheProfileRouteNextEstablishes(t *testing.T) {
	s := newSim(t, params(ModeCurrent, 5))
	s.start()
	s.connected()
	s.eoseAll(nil)
	s.settle(func(r Read) (bool, bool) { return r.Key.Kind != ReadStatuses, true })
	s.mark()
	s.lastFrame = s.now.Add(time.Minute)
	s.advance(time.Minute)
	if slices.Contains(s.readLog(), "statuses") {
		t.Error("a tick reread statuses")
	}
	s.drop()
	s.advance(time.Second)
	s.connected()
	s.eoseAll(nil)
	if got := s.readLog(); !slices.Contains(got, "statuses") || slices.Contains(got, "profiles") {
		t.Errorf("reads %q: want the owed statuses only", got)
	}
}

// Issue 41 item 4: a rate-limited CLOSED of a live route — after its EOSE
// or instead of one — is a throttle, not a failure: the session goes on
// and the route subscribes again once the relay's `retry in Ns` has passed.
// Any other CLOSED on a live route still ends the session. Fails without
// the retry: the throttled route ended the session.
func TestAThrottledRouteSubscribesAgainAfterItsHint(t *testing.T) {
	for _, beforeEOSE := range []bool{false, true} {
		s := newSim(t, params(ModeCurrent, 5))
		s.start()
		s.connected()
		if !beforeEOSE {
			s.quiesce()
		}
		route := 0
		id := s.m.routes[route].sub
		delete(s.sent, id)
		delete(s.wire, id)
		s.mark()
		s.do(SubClosed{Sub: id, At: s.now, Reason: "rate-limited: quota exceeded; retry in 3s"})
		if !s.m.Connected() || slices.Contains(s.log, "disconnect") {
			t.Fatalf("before EOSE %v: a throttled route ended the session: %v", beforeEOSE, s.log)
		}
		if w := s.m.NextWake(); w.After(s.now.Add(3 * time.Second)) {
			// with Jitter unset the wait is the hint itself
			t.Errorf("next wake %v after the throttle, want by the 3 s hint", w.Sub(s.now))
		}
		s.advance(2 * time.Second)
		if s.m.routes[route].sub != "" {
			t.Fatalf("before EOSE %v: subscribed again before the hint", beforeEOSE)
		}
		s.advance(1500 * time.Millisecond)
		again := s.m.routes[route].sub
		if again == "" || again == id {
			t.Fatalf("before EOSE %v: not subscribed again after the hint: %v", beforeEOSE, s.log)
		}
		if _, sent := s.wire[again]; !sent {
			t.Errorf("before EOSE %v: the new REQ was not sent", beforeEOSE)
		}
	}
	s := newSim(t, params(ModeCurrent, 5))
	s.coldStart()
	s.mark()
	s.do(SubClosed{Sub: s.m.routes[0].sub, At: s.now, Reason: "restricted: not a member"})
	if s.m.Connected() {
		t.Error("a restricted CLOSED of a live route did not end the session")
	}
}

// Issue 41 item 12 (audit desktop.md): a tick before the membership
// subscription's EOSE reads neither the roster nor the unreads — the EOSE
// establishes them. Fails without the gate: the tick read the roster and
// repaired unreads while membership was still replaying.
func TestATickWaitsForTheMembershipSubscription(t *testing.T) {
	for _, mode := range []Mode{ModeCurrent, ModeLegacy} {
		p := params(mode, 5)
		p.Tick = 5 * time.Second
		s := newSim(t, p)
		s.start()
		s.connected()
		var membership string
		for i, r := range s.m.routes {
			if r.Kind == RouteMembership {
				membership = s.m.routes[i].sub
			}
		}
		for len(s.sent) > 1 || len(s.reads) > 0 { // answer all but membership
			for id := range s.sent {
				if id != membership {
					delete(s.sent, id)
					s.do(EOSE{Sub: id, At: s.now})
				}
			}
			s.settle(nil)
		}
		s.mark()
		s.advance(6 * time.Second) // one tick, within membership's EOSE timeout
		for _, l := range s.readLog() {
			if strings.Contains(l, "roster") || strings.Contains(l, "unread") {
				t.Errorf("%v: the tick read %q before membership's EOSE", mode, l)
			}
		}
	}
}
