package models

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// presencePeers is how many co-members' presence a human watches.
const presencePeers = 10

// Activity is the shared activity of a human of either model: presence
// heartbeats, typing, messages (some as first-level replies under seeded
// deep-thread roots) and reactions to the latest message seen, on the
// Schedule, published over one socket without waiting for their OKs. The
// basic human runs it; the desktop model runs it beside its own
// subscriptions and reads, feeding it what it sees through Observe.
//
// The schedule's random source is only drawn from by the schedule, so the
// same seed gives the same sequence of activities whatever the relay
// answers. Known thread roots outlive sessions.
type Activity struct {
	sc    *scenario.Scenario
	g     int
	keys  *nostr.Keys
	sink  relayclient.Sink
	rng   *rand.Rand
	cfg   ScheduleConfig
	chans []scenario.Channel
	chIDs []string
	chIdx map[string]int
	// inflight counts publishes awaiting their OK.
	inflight *tracker

	mu        sync.Mutex
	latest    seenMsg   // the latest message seen in any channel
	latestCh  []seenMsg // per channel
	reactedTo [64]byte  // the target (id) of the last reactions, and how many so far
	reactN    int
	roots     map[int][]string // per channel index: seeded roots found (nil entry: not looked up)
	seq       uint64
	sent      recentIDs // Run's goroutine only
}

// seenMsg is a message seen: fixed arrays, so noting one on the reader
// goroutine copies and allocates nothing (it is read from a frame buffer).
type seenMsg struct {
	id, author [64]byte // hex; a zero id: nothing seen
	createdAt  int64
}

// NewActivity prepares the activity of human g (basic or desktop), drawing
// its schedule from rng, recording through sink with keys.
func NewActivity(sc *scenario.Scenario, g int, keys *nostr.Keys, rng *rand.Rand, sink relayclient.Sink) *Activity {
	chans := sc.MemberChannels(g)
	a := &Activity{sc: sc, g: g, keys: keys, sink: sink, rng: rng, cfg: HumanSchedule(sc, g),
		chans: chans, chIDs: make([]string, len(chans)), chIdx: make(map[string]int, len(chans)),
		latestCh: make([]seenMsg, len(chans)), roots: map[int][]string{}, inflight: newTracker()}
	for i, ch := range chans {
		a.chIDs[i] = sc.ChannelID(ch)
		a.chIdx[a.chIDs[i]] = i
	}
	return a
}

// ChannelIDs are the member's channels' ids, in MemberChannels order.
func (a *Activity) ChannelIDs() []string { return a.chIDs }

// Observe notes a message the member saw (history or live), for reactions.
// Safe for concurrent use; cheap enough for the reader goroutine.
func (a *Activity) Observe(ev *nostr.EventView) {
	if ev.Kind != nostr.KindStreamMessage {
		return
	}
	h, _ := ev.TagValue("h", 1)
	i, ok := a.chIdx[string(h)]
	if !ok {
		return
	}
	a.note(i, ev)
}

// ObserveIn is Observe for an event of a subscription to channel i (the
// index in ChannelIDs): it checks the event's h tag against that channel
// instead of looking it up. In a 500-human fan-out run's CPU profile the
// lookup (hashing a 64-character id, a cold map bucket) was ~0.9 µs of a
// delivery's ~18; an event of another channel (a relay's mistake) goes
// through Observe.
func (a *Activity) ObserveIn(i int, ev *nostr.EventView) {
	if ev.Kind != nostr.KindStreamMessage {
		return
	}
	if h, _ := ev.TagValue("h", 1); i < 0 || i >= len(a.chIDs) || string(h) != a.chIDs[i] {
		a.Observe(ev)
		return
	}
	a.note(i, ev)
}

// note records ev as the latest message seen in channel i and overall.
func (a *Activity) note(i int, ev *nostr.EventView) {
	m := seenMsg{id: ev.ID, author: ev.PubKey, createdAt: ev.CreatedAt}
	a.mu.Lock()
	if m.createdAt >= a.latestCh[i].createdAt {
		a.latestCh[i] = m
	}
	if m.createdAt >= a.latest.createdAt {
		a.latest = m
	}
	a.mu.Unlock()
}

// Run drives the schedule over conn from now until its session end (true),
// or halt ends (false). Publishes are not started once halt has ended;
// those under way settle on their own (see Settle). ops bounds the
// socket-side root lookups a thread reply needs.
func (a *Activity) Run(halt, ops context.Context, conn *relayclient.Conn) (sessionEnd bool) {
	s := NewSchedule(a.cfg, a.rng)
	start := time.Now()
	_ = RunSchedule(halt, nil, s, start, func(ev Event) bool {
		if ev.Action == ActSessionEnd {
			sessionEnd = true
			return false
		}
		a.do(halt, ops, conn, ev, start.Add(ev.At))
		return halt.Err() == nil
	})
	return sessionEnd
}

// Settle waits until every publish of the activity has settled, or ctx ends.
func (a *Activity) Settle(ctx context.Context) { a.inflight.wait(ctx) }

// do performs one scheduled activity, due at due (its publish's Result.Due).
func (a *Activity) do(halt, ops context.Context, conn *relayclient.Conn, ev Event, due time.Time) {
	now := time.Now()
	var tags [][]string
	kind, content := 0, ""
	switch ev.Action {
	case ActPresence:
		kind, content = nostr.KindPresence, "online"
	case ActTyping:
		kind, tags = nostr.KindTyping, [][]string{{"h", a.chIDs[ev.Channel]}}
	case ActMessage:
		kind = nostr.KindStreamMessage
		a.mu.Lock()
		a.seq++
		seq := a.seq
		a.mu.Unlock()
		content = messageContent(a.g, seq)
		chID := a.chIDs[ev.Channel]
		tags = [][]string{{"h", chID}}
		if ev.Reply {
			roots, ok := a.threadRoots(halt, ops, conn, ev.Channel)
			if !ok {
				return // the stop cut the lookup short: the reply is not published
			}
			if len(roots) > 0 {
				tags = firstLevelReply(chID, roots[seq%uint64(len(roots))])
			}
		}
		now = time.Now()
		tags = append(tags, scenario.SentAtTag(now))
	case ActReaction:
		target, content2, ok := a.reactionTarget(ev.Channel)
		if !ok {
			return // nothing seen yet, or every emoji already used on it
		}
		kind, content = nostr.KindReaction, content2
		tags = [][]string{{"e", string(target.id[:])}, {"p", string(target.author[:])}}
	default:
		return
	}
	if halt.Err() != nil {
		return
	}
	e, err := a.keys.NewEvent(kind, tags, content, now)
	if err != nil {
		a.sink.Record(relayclient.Result{Op: relayclient.OpPublish, Start: now, Outcome: relayclient.OutcomeError, Error: "sign: " + err.Error()})
		return
	}
	if !a.sent.add(e.ID) {
		return // the same indicator already went out this second
	}
	a.inflight.add()
	// A write error ends the connection, which ends the session; the
	// Result is recorded by the relay client either way.
	// A reaction is idempotent: Buzz's "duplicate: reaction already exists"
	// (a rerun reacting to the same seeded message) is the state asked for.
	_ = conn.PublishAsync(e, relayclient.PublishOptions{DuplicateOK: kind == nostr.KindReaction, Due: due}, func(relayclient.Result) { a.inflight.done() })
}

// reactionTarget picks the latest message seen (in channel ch, or anywhere
// for -1) and the next emoji not yet used on it.
func (a *Activity) reactionTarget(ch int) (seenMsg, string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.latest
	if ch >= 0 {
		t = a.latestCh[ch]
	}
	if t.id == ([64]byte{}) {
		return t, "", false
	}
	if t.id != a.reactedTo {
		a.reactedTo, a.reactN = t.id, 0
	}
	if a.reactN >= len(reactionContents) {
		return t, "", false
	}
	c := reactionContents[a.reactN]
	a.reactN++
	return t, c, true
}

// threadRoots returns the seeded roots of channel i, searching for them on
// the socket the first time (recorded as history: a REQ closed at EOSE).
// ok is false when halt cut the lookup short.
func (a *Activity) threadRoots(halt, ops context.Context, conn *relayclient.Conn, i int) ([]string, bool) {
	a.mu.Lock()
	roots, known := a.roots[i]
	a.mu.Unlock()
	if known {
		return roots, true
	}
	word := scenario.RootMarker(a.sc.RunID)
	var mu sync.Mutex
	var found []nostr.Event
	sub, err := conn.Subscribe([]relayclient.Filter{rootSearch(a.chIDs[i], word, max(a.sc.Shape.ThreadRootsPerChannel, 1))},
		relayclient.SubOptions{Op: OpHistory, OnEvent: func(ev *nostr.Event, _ time.Time, _ bool) {
			mu.Lock()
			found = append(found, *ev)
			mu.Unlock()
		}})
	if err != nil {
		return nil, true // recorded; the message goes out top-level
	}
	select {
	case <-sub.EOSE():
	case <-halt.Done():
		_ = sub.Close()
		return nil, false
	case <-ops.Done():
		_ = sub.Close()
		return nil, false
	}
	_ = sub.Close()
	if sub.Result().Outcome != relayclient.OutcomeOK {
		return nil, true // not cached: the next reply looks again
	}
	mu.Lock()
	roots = scenario.MarkedRoots(found, word)
	mu.Unlock()
	a.mu.Lock()
	a.roots[i] = roots
	a.mu.Unlock()
	return roots, true
}

// humanState is what a basic human keeps across sessions.
type humanState struct {
	act *Activity
	// adm paces connect-time REQs; kept across sessions because the relay's
	// quota is per pubkey, whichever connection sent the frames.
	adm *admission
}

// humanSession is one connection of a basic human: connect and
// authenticate, subscribe to its channels (messages and typing), its
// mentions and ten peers' presence, fetch history, then run the activity.
func (c *Client) humanSession(s *session) End {
	h := c.human
	if h.act == nil {
		h.act = NewActivity(c.sc, c.cfg.Global, c.keys, c.rng, c.sink)
	}
	act := h.act
	conn, err := c.connect(s)
	if err != nil {
		return connectEnd(err)
	}
	var subsMu sync.Mutex
	var subs []*relayclient.Sub
	settled := false
	defer func() {
		subsMu.Lock()
		settled = true
		all := subs
		subsMu.Unlock()
		s.settle(conn, all)
	}()
	defer act.Settle(s.opCtx)

	// Connect-time REQs are paced within Buzz's WS admission (admission.go):
	// a human in many channels would otherwise burst past 50 frames in 5 s
	// and have its subscriptions refused.
	if h.adm == nil {
		h.adm = &admission{limit: connectFrameBudget, window: WSAdmissionWindow}
	}
	adm := h.adm
	pace := func() bool {
		if d := adm.wait(time.Now()); d > 0 {
			select {
			case <-time.After(d):
			case <-s.halt.Done():
				return false
			}
		}
		adm.record(time.Now())
		return s.halt.Err() == nil
	}
	chIDs := act.ChannelIDs()
	me := c.keys.PubKey()
	var live func(filters []relayclient.Filter, onEvent func(*nostr.EventView, time.Time, bool))
	live = func(filters []relayclient.Filter, onEvent func(*nostr.EventView, time.Time, bool)) {
		if s.halt.Err() != nil {
			return
		}
		onClosed := func(reason string, _ time.Time) {
			if conn.Err() != nil {
				return // the connection ended: OnDisconnect reports it
			}
			if strings.HasPrefix(reason, "rate-limited:") {
				// A throttle, recorded as such by the subscription: the
				// session goes on and subscribes again after the hint.
				wait := relayclient.RetryIn(reason)
				if wait <= 0 {
					wait = time.Second
				}
				time.AfterFunc(wait, func() { live(filters, onEvent) })
				return
			}
			s.fail(fmt.Errorf("relay CLOSED a live subscription: %s", reason))
		}
		subsMu.Lock()
		defer subsMu.Unlock()
		if settled || s.halt.Err() != nil {
			return
		}
		sub, err := conn.Subscribe(filters, relayclient.SubOptions{OnEventView: onEvent, OnClosed: onClosed})
		subs = append(subs, sub)
		if err != nil {
			s.fail(fmt.Errorf("subscribe: %w", err))
		}
	}
	// One REQ per channel: older relays treat several #h values as global.
	for i, id := range chIDs {
		if !pace() {
			break
		}
		live([]relayclient.Filter{
			{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {id}}, LimitZero: true},
			{Kinds: []int{nostr.KindTyping}, Tags: map[string][]string{"h": {id}}, LimitZero: true},
		}, func(ev *nostr.EventView, at time.Time, isLive bool) {
			if ev.Kind != nostr.KindStreamMessage {
				return
			}
			act.ObserveIn(i, ev)
			if isLive {
				RecordDeliver(c.sink, ev, at)
			}
		})
	}
	// Mentions are channel events, so the filter names the channels: at
	// most 128 per REQ (Buzz closes a REQ naming more).
	for _, group := range chunkChannels(chIDs, MaxChannelValuesPerREQ) {
		if !pace() {
			break
		}
		live([]relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
			Tags: map[string][]string{"h": group, "p": {me}}, LimitZero: true}}, nil)
	}
	if peers := c.sc.CoMembers(c.cfg.Global, c.cfg.Users, presencePeers); len(peers) > 0 && pace() {
		pub := c.cfg.PubKey
		if pub == nil {
			pub = c.sc.PubKey
		}
		authors := make([]string, 0, len(peers))
		for _, p := range peers {
			if pk := pub(p); pk != "" {
				authors = append(authors, pk)
			}
		}
		live([]relayclient.Filter{{Kinds: []int{nostr.KindPresence}, Authors: authors, LimitZero: true}}, nil)
	}

	if n := c.sc.Human.HistoryLimit; n > 0 && s.halt.Err() == nil {
		c.history(s, conn, chIDs, n, act, pace)
	}
	if s.halt.Err() == nil {
		act.Run(s.halt, s.opCtx, conn)
	}
	return s.end()
}

// history fetches the newest n messages of every channel, all at once, and
// waits for their EOSE (bounded by the grace: a history fetch under way
// at the stop finishes).
func (c *Client) history(s *session, conn *relayclient.Conn, chIDs []string, n int, act *Activity, pace func() bool) {
	subs := make([]*relayclient.Sub, 0, len(chIDs))
	for _, id := range chIDs {
		if !pace() {
			break
		}
		sub, err := conn.Subscribe([]relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
			Tags: map[string][]string{"h": {id}}, Limit: n}},
			relayclient.SubOptions{Op: OpHistory, OnEventView: func(ev *nostr.EventView, _ time.Time, _ bool) { act.Observe(ev) }})
		if err != nil {
			break // recorded; the connection is gone
		}
		subs = append(subs, sub)
	}
	for _, sub := range subs {
		select {
		case <-sub.EOSE():
		case <-s.opCtx.Done():
		}
		_ = sub.Close()
	}
}
