package ledger

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// msg is a signed channel message by author n in channel ch (seq makes it unique).
func msg(t *testing.T, n int, ch string, seq int, tags ...[]string) *nostr.Event {
	t.Helper()
	k := nostr.DeriveKeys("ledger-test", nostr.RoleHuman, n)
	e := &nostr.Event{Kind: nostr.KindStreamMessage, CreatedAt: t0.Unix(), Content: "m" + strconv.Itoa(seq),
		Tags: append([][]string{{"h", ch}}, tags...)}
	if err := k.Sign(e); err != nil {
		t.Fatal(err)
	}
	return e
}

func view(t *testing.T, e *nostr.Event) *nostr.EventView {
	t.Helper()
	var v nostr.EventView
	sc := wire.New(e.AppendJSON(nil))
	if err := nostr.ScanEventView(&sc, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func pk(n int) string { return nostr.DeriveKeys("ledger-test", nostr.RoleHuman, n).PubKey() }

// chanSub opens and makes live a subscription of recipient n to channel ch.
func chanSub(l *Ledger, n int, community, ch string, live time.Time) *Sub {
	s := l.Open(pk(n), community, "s"+strconv.Itoa(n)+ch, []relayclient.Filter{
		{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {ch}}, LimitZero: true}}).(*Sub)
	s.Live(live)
	return s
}

func TestEveryExpectedDeliveryIsJudged(t *testing.T) {
	l := New(Config{})
	a, b, c := chanSub(l, 1, "", "A", at(0)), chanSub(l, 2, "", "A", at(0)), chanSub(l, 3, "", "A", at(0))
	chanSub(l, 4, "", "B", at(0)) // another channel: not a recipient
	e := msg(t, 9, "A", 1)
	l.Sent(e, "", "ws", at(100))
	a.Delivered(view(t, e), at(101))
	b.Delivered(view(t, e), at(102))
	b.Delivered(view(t, e), at(103)) // a duplicate
	l.Settled(e.ID, true, at(104))
	l.Tick(at(104).Add(DefaultPatience))
	_ = c
	l.Finish(at(200_000))
	r := l.Report()
	want := report.LedgerCounts{Expected: 3, Received: 2, Lost: 1, Duplicates: 1, Completed: 0}
	got := r.LedgerCounts
	got.Reach, got.CompletionP50Ms, got.CompletionP99Ms = nil, 0, 0
	if got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
	if *r.Reach < 0.66 || *r.Reach > 0.67 {
		t.Fatalf("reach = %v, want 2/3", *r.Reach)
	}
	if len(r.Missed) != 1 || r.Missed[0].Event != e.ID || r.Missed[0].Recipient != pk(3) || r.Missed[0].RecoveredMs != nil || r.Missed[0].Channel != "A" {
		t.Fatalf("missed = %+v, want %s → %s lost", r.Missed, e.ID, pk(3))
	}
	if ch := ledgerCheckLevel(r); ch != report.CheckFail {
		t.Fatalf("a lost delivery is %s, want fail", ch)
	}
}

func ledgerCheckLevel(r *report.LedgerReport) string { return report.LedgerCheck(r).Level }

func TestAMissedDeliveryReadLaterIsRecoveredAndALateOneReceived(t *testing.T) {
	l := New(Config{Patience: time.Second})
	a, b := chanSub(l, 1, "", "A", at(0)), chanSub(l, 2, "", "A", at(0))
	e := msg(t, 9, "A", 1)
	l.Sent(e, "", "ws", at(10))
	l.Settled(e.ID, true, at(11))
	l.Tick(at(2000)) // both missed now
	a.Delivered(view(t, e), at(2500))
	l.SeenID(pk(2), e.ID, at(3000))
	_ = b
	l.Finish(at(4000))
	r := l.Report()
	if r.Expected != 2 || r.Received != 1 || r.ReceivedLate != 1 || r.Recovered != 1 || r.Lost != 0 {
		t.Fatalf("counts = %+v", r.LedgerCounts)
	}
	for _, m := range r.Missed {
		switch m.Recipient {
		case pk(1):
			if m.ReceivedLateMs == nil || *m.ReceivedLateMs != 1489 {
				t.Fatalf("late = %+v, want 1489 ms after the miss at OK+patience", m)
			}
		case pk(2):
			if m.RecoveredMs == nil || *m.RecoveredMs != 1989 {
				t.Fatalf("recovered = %+v", m)
			}
		}
	}
	if lv := ledgerCheckLevel(r); lv != report.CheckWarn {
		t.Fatalf("recovered and late deliveries are %s, want warn", lv)
	}
}

func TestSubscriptionsAroundThePublishAreJudgedByWhoEndedThem(t *testing.T) {
	l := New(Config{Patience: time.Second, Due: 500 * time.Millisecond})
	early := chanSub(l, 1, "", "A", at(0))
	quit := chanSub(l, 2, "", "A", at(0))
	dropped := chanSub(l, 3, "", "A", at(0))
	beforeOK := chanSub(l, 4, "", "A", at(0))
	e := msg(t, 9, "A", 1)
	l.Sent(e, "", "ws", at(100))
	late := chanSub(l, 5, "", "A", at(101)) // EOSE after the send: not expected
	beforeOK.Ended(at(102), false)          // ended between the send and the OK: unjudged
	l.Settled(e.ID, true, at(110))
	quit.Ended(at(300), true)     // the client closed it before the event was due: unjudged
	dropped.Ended(at(400), false) // the relay (or the network) ended it after the OK: missed
	late.Delivered(view(t, e), at(120))
	early.Delivered(view(t, e), at(120))
	l.Finish(at(5000))
	r := l.Report()
	if r.Expected != 4 || r.Received != 1 || r.Unjudged != 2 || r.Lost != 1 || r.Leaks != 0 {
		t.Fatalf("counts = %+v", r.LedgerCounts)
	}
	if len(r.Missed) != 1 || r.Missed[0].Recipient != pk(3) || r.Missed[0].LiveMissedAt != at(400).UnixMilli() {
		t.Fatalf("missed = %+v, want recipient 3 missed at its socket's end", r.Missed)
	}
}

func TestLeaksAreNamed(t *testing.T) {
	l := New(Config{})
	other := chanSub(l, 1, "c1.example", "A", at(0)) // the same channel id in another community
	mine := chanSub(l, 2, "c0.example", "A", at(0))
	e := msg(t, 9, "A", 1)
	l.Sent(e, "c0.example", "ws", at(10))
	mine.Delivered(view(t, e), at(11))
	other.Delivered(view(t, e), at(11))
	l.Settled(e.ID, true, at(12))
	// An event of a channel the subscription does not name, unknown to the
	// ledger (published elsewhere): its filters decide.
	stray := msg(t, 8, "B", 2)
	mine.Delivered(view(t, stray), at(13))
	l.Finish(at(100))
	r := l.Report()
	if r.Leaks != 2 || len(r.Leaked) != 2 {
		t.Fatalf("leaks = %d %+v", r.Leaks, r.Leaked)
	}
	if lk := r.Leaked[0]; lk.Event != e.ID || lk.Recipient != pk(1) || !strings.Contains(lk.Rule, "community") {
		t.Fatalf("first leak = %+v, want the other community's", lk)
	}
	if lk := r.Leaked[1]; lk.Event != stray.ID || lk.Recipient != pk(2) || !strings.Contains(lk.Rule, "filters do not match") {
		t.Fatalf("second leak = %+v", lk)
	}
	if r.Expected != 1 || r.Received != 1 {
		t.Fatalf("counts = %+v", r.LedgerCounts)
	}
	if lv := ledgerCheckLevel(r); lv != report.CheckFail {
		t.Fatalf("a leak is %s, want fail", lv)
	}
}

func TestInversionsAreCountedPerSubscription(t *testing.T) {
	l := New(Config{})
	a, b := chanSub(l, 1, "", "A", at(0)), chanSub(l, 2, "", "A", at(0))
	e1, e2, e3 := msg(t, 9, "A", 1), msg(t, 9, "A", 2), msg(t, 9, "A", 3)
	for i, e := range []*nostr.Event{e1, e2, e3} {
		l.Sent(e, "", "ws", at(10+i))
		l.Settled(e.ID, true, at(20+i))
	}
	for _, e := range []*nostr.Event{e1, e2, e3} {
		a.Delivered(view(t, e), at(30))
	}
	for _, e := range []*nostr.Event{e3, e1, e2} { // e3 first: e2 and e3 inverted
		b.Delivered(view(t, e), at(30))
	}
	l.Finish(at(100))
	r := l.Report()
	if r.Inversions != 1 || r.Received != 6 || r.Lost != 0 {
		t.Fatalf("counts = %+v, want 1 inversion", r.LedgerCounts)
	}
}

func TestEventsNeverAcknowledgedAreNotJudged(t *testing.T) {
	l := New(Config{})
	chanSub(l, 1, "", "A", at(0))
	refused, unanswered := msg(t, 9, "A", 1), msg(t, 9, "A", 2)
	l.Sent(refused, "", "ws", at(1))
	l.Sent(unanswered, "", "ws", at(1))
	l.Settled(refused.ID, false, at(2))
	l.Finish(at(100))
	if r := l.Report(); r.Expected != 0 || r.Events != 0 {
		t.Fatalf("counts = %+v events %d, want nothing judged", r.LedgerCounts, r.Events)
	}
}

func TestTheSampleIsChosenByIDAlike(t *testing.T) {
	a, b := New(Config{Sample: 0.25}), New(Config{Sample: 0.25})
	n := 0
	for i := range 2000 {
		var id [32]byte
		id[0], id[1], id[2] = byte(i), byte(i>>8), byte(i*7)
		id[5] = byte(i * 13)
		if a.Sampled(id) != b.Sampled(id) {
			t.Fatal("two ledgers disagree on an id")
		}
		if a.Sampled(id) {
			n++
		}
	}
	if n < 400 || n > 600 {
		t.Fatalf("%d of 2000 sampled at 0.25", n)
	}
}

func TestGlobalAndChannelScopesFollowBuzz(t *testing.T) {
	// A filter without #h is global: it gets no channel event (block/buzz
	// subscription.rs fan_out_scoped), and a channel subscription no global one.
	fs, ch, ok := compile([]relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}}})
	if !ok || ch != nil || len(fs) != 1 {
		t.Fatal("a kinds-only filter is a global subscription")
	}
	s := &Sub{filters: fs}
	if s.match(&facts{kind: nostr.KindStreamMessage, channel: "A"}) {
		t.Fatal("a global subscription matched a channel event")
	}
	if _, _, ok := compile([]relayclient.Filter{{Kinds: []int{9}, Extra: map[string]any{"search": "x"}}}); ok {
		t.Fatal("a search filter is judged")
	}
	fs, ch, _ = compile([]relayclient.Filter{{Tags: map[string][]string{"h": {"A", "B"}, "p": {"me"}}}})
	s = &Sub{filters: fs, channels: ch}
	if !s.match(&facts{kind: 9, channel: "B", p: []string{"x", "me"}}) || s.match(&facts{kind: 9, channel: "B", p: []string{"x"}}) {
		t.Fatal("a mention filter matches by #p")
	}
}

// A reaction carries no h tag: Buzz moves it into its target's channel and
// delivers it to the channel's subscribers. Not a leak (TestDesktopHumansRun
// found 18 before the ledger left such kinds to the relay).
func TestAReactionInItsTargetsChannelIsNoLeak(t *testing.T) {
	l := New(Config{})
	s := l.Open(pk(1), "", "s", []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage, nostr.KindReaction}, Tags: map[string][]string{"h": {"A"}}}}).(*Sub)
	s.Live(at(0))
	k := nostr.DeriveKeys("ledger-test", nostr.RoleHuman, 2)
	r := &nostr.Event{Kind: nostr.KindReaction, CreatedAt: t0.Unix(), Content: "+", Tags: [][]string{{"e", strings.Repeat("ab", 32)}}}
	if err := k.Sign(r); err != nil {
		t.Fatal(err)
	}
	s.Delivered(view(t, r), at(1))
	l.Finish(at(2))
	if rep := l.Report(); rep.Leaks != 0 {
		t.Fatalf("leaks %+v", rep.Leaked)
	}
}

// A mention subscription (#h and #p) expects the channel's events that
// name its recipient, and no other (the listed entry's shortcut for
// events without p tags must not drop a mention).
func TestAMentionSubscriptionExpectsItsMentions(t *testing.T) {
	l := New(Config{})
	s := l.Open(pk(1), "", "m", []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {"A", "B"}, "p": {pk(1)}}}}).(*Sub)
	s.Live(at(0))
	plain, mention := msg(t, 2, "A", 1), msg(t, 2, "B", 2, []string{"p", pk(1)})
	for _, e := range []*nostr.Event{plain, mention} {
		l.Sent(e, "", "ws", at(1))
		l.Settled(e.ID, true, at(2))
	}
	s.Delivered(view(t, mention), at(3))
	l.Finish(at(4))
	if r := l.Report(); r.Expected != 1 || r.Received != 1 || r.Leaks != 0 {
		t.Fatalf("counts %+v", r.LedgerCounts)
	}
}

// A presence REQ (a global filter naming co-members) expects its authors'
// presence and no one else's, alongside a global subscription without
// authors (the two lists merge in serial order for the look-up).
func TestPresenceIsExpectedFromTheNamedAuthors(t *testing.T) {
	l := New(Config{})
	all := l.Open(pk(5), "", "g", []relayclient.Filter{{Kinds: []int{nostr.KindPresence}}}).(*Sub)
	all.Live(at(0))
	peers := l.Open(pk(1), "", "p", []relayclient.Filter{{Kinds: []int{nostr.KindPresence}, Authors: []string{pk(2), pk(3)}}}).(*Sub)
	peers.Live(at(0))
	pres := func(n, seq int) *nostr.Event {
		k := nostr.DeriveKeys("ledger-test", nostr.RoleHuman, n)
		e := &nostr.Event{Kind: nostr.KindPresence, CreatedAt: t0.Unix(), Content: "online " + strconv.Itoa(seq)}
		if err := k.Sign(e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	from2, from4 := pres(2, 1), pres(4, 2)
	for _, e := range []*nostr.Event{from2, from4} {
		l.Sent(e, "", "ws", at(1))
		l.Settled(e.ID, true, at(2))
	}
	peers.Delivered(view(t, from2), at(3))
	all.Delivered(view(t, from2), at(3))
	all.Delivered(view(t, from4), at(3))
	peers.Delivered(view(t, from4), at(3)) // not one of its authors: a leak
	l.Finish(at(4))
	r := l.Report()
	if r.Expected != 3 || r.Received != 3 || r.Leaks != 1 || r.Leaked[0].Recipient != pk(1) {
		t.Fatalf("counts %+v leaks %+v", r.LedgerCounts, r.Leaked)
	}
}
