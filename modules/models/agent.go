package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Agent request shapes (buzz-LOADGEN "Agent turns").
const (
	pollLimit         = 20 // per channel and for mentions, per /query poll
	threadReplyWindow = 13 // a turn's read of a thread's newest replies
	toolReadLimit     = 50 // a tool call's read of the channel's newest messages
	defaultFrameBytes = 512
)

// agentState is what an agent keeps across sessions: its schedule of
// polls, messages and turns (absolute times), and a turn under way, which
// continues after a reconnect.
type agentState struct {
	owner string
	ck    [32]byte
	chans []scenario.Channel
	chIDs []string

	mu        sync.Mutex // guards turn and wake for the socket goroutine
	turn      *turn
	wake      chan struct{} // nudges the socket goroutine when a turn's work starts or ends
	nextPoll  time.Time
	nextEvent time.Time
	nextTurn  time.Time
	seq       uint64
	lastPoll  int64
	turns     int // turns finished

	// maxTurns, when > 0, stops starting turns after that many (tests).
	maxTurns int
	// turnDone, when set, gets each finished turn's number (tests).
	turnDone chan int
	// sent is the socket goroutine's recent ids.
	sent recentIDs
}

func newAgentState(c *Client, owner string) *agentState {
	chans := c.sc.MemberChannels(c.cfg.Global)
	a := &agentState{owner: owner, chans: chans, chIDs: make([]string, len(chans)), wake: make(chan struct{}, 1)}
	for i, ch := range chans {
		a.chIDs[i] = c.sc.ChannelID(ch)
	}
	return a
}

// turn is one agent turn under way.
type turn struct {
	n       int
	ch      int
	chID    string
	start   time.Time
	end     time.Time
	reads   []time.Time // tool-call reads still to make, in order
	phase   turnPhase
	msg     *nostr.Event // the message the turn answers (nil: the channel is empty)
	root    string       // its thread's root ("" for a top-level message)
	replies int          // replies the thread read returned
	unreact int          // which of the two reactions is being removed
	reacts  []string     // reactions found for its removal
	// Socket side, during the work phase (guarded by agentState.mu).
	work                  atomic.Bool
	nextTyping, nextFrame time.Time
}

type turnPhase uint8

const (
	phNewest     turnPhase = iota // http_query: the channel's newest message
	phThread                      // turn_context: root, 13 newest replies, own newest reply
	phCount                       // turn_context: /count of the replies when all 13 came back
	phMeta                        // turn_context: kind 39000
	phProject                     // turn_context: kind 30621
	phRepo                        // turn_context: kind 30617
	phProfile                     // turn_context: the author's kind 0
	phReact1                      // http_events: first reaction
	phReact2                      // http_events: second reaction
	phWork                        // typing and frames on the socket, tool-call reads
	phReply                       // http_events: the timed reply
	phReactQuery                  // http_query: the agent's reactions on the message (once per reaction)
	phDelete                      // http_events: one kind:5 per reaction found with that emoji
	phDone
)

// working reports whether the turn is in its work phase at t (typing and
// frames are sent).
func (t *turn) working() bool { return t != nil && t.work.Load() }

func (a *agentState) nudge() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// agentSession is one connection of an agent: the socket (NIP-OA AUTH,
// optional mention subscriptions, presence, observer frames, a turn's
// typing and frames, all sent without waiting for OKs) with the HTTP
// sequence (polls, messages, turns) running beside it, one request at a
// time.
func (c *Client) agentSession(s *session) End {
	a := c.agent
	sa := c.sc.Agent
	if a.ck == ([32]byte{}) {
		ck, err := c.keys.ConversationKey(a.owner)
		if err != nil {
			return End{Reason: EndExited, Err: fmt.Errorf("conversation key with the owner: %w", err)}
		}
		a.ck = ck
	}
	conn, err := c.connect(s)
	if err != nil {
		return connectEnd(err)
	}
	var subs []*relayclient.Sub
	defer func() { s.settle(conn, subs) }()
	me := c.keys.PubKey()
	if sa.ChannelSubscriptions {
		for _, id := range a.chIDs {
			sub, err := conn.Subscribe([]relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
				Tags: map[string][]string{"h": {id}, "p": {me}}, LimitZero: true}},
				relayclient.SubOptions{
					OnEvent: func(ev *nostr.Event, at time.Time, live bool) {
						if live {
							RecordDeliver(c.sink, ev, at)
						}
					},
					OnClosed: func(reason string, _ time.Time) {
						if conn.Err() == nil {
							s.fail(fmt.Errorf("relay CLOSED a live subscription: %s", reason))
						}
					}})
			subs = append(subs, sub)
			if err != nil {
				s.fail(fmt.Errorf("subscribe: %w", err))
				break
			}
		}
	}
	// The socket side draws from its own source, seeded from the client's,
	// so the two goroutines never share one.
	srng := rand.New(rand.NewPCG(c.rng.Uint64(), c.rng.Uint64()))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.agentSocket(s, conn, srng)
	}()
	c.agentHTTP(s)
	wg.Wait()
	return s.end()
}

// publishAsync sends ev on the socket without waiting for its OK, tracked
// so a shutdown can wait for it.
func (c *Client) publishAsync(s *session, conn *relayclient.Conn, kind int, tags [][]string, content string) {
	if s.halt.Err() != nil {
		return
	}
	now := time.Now()
	ev, err := c.keys.NewEvent(kind, tags, content, now)
	if err != nil {
		c.sink.Record(relayclient.Result{Op: relayclient.OpPublish, Start: now, Outcome: relayclient.OutcomeError, Error: "sign: " + err.Error()})
		return
	}
	if !c.agent.sent.add(ev.ID) {
		return // the same indicator already went out this second
	}
	s.inflight.add()
	_ = conn.PublishAsync(ev, relayclient.PublishOptions{}, func(relayclient.Result) { s.inflight.done() })
}

// observerFrame builds the content of one frame: size bytes of plaintext,
// NIP-44 encrypted to the owner.
func (c *Client) observerFrame(size int) (string, error) {
	if size <= 0 {
		size = defaultFrameBytes
	}
	size = min(size, nostr.NIP44MaxPlaintext)
	return nostr.NIP44Encrypt(strings.Repeat("t", size), c.agent.ck)
}

func (c *Client) sendFrame(s *session, conn *relayclient.Conn) {
	content, err := c.observerFrame(c.sc.Agent.Turn.FrameBytes)
	if err != nil {
		c.sink.Record(relayclient.Result{Op: relayclient.OpPublish, Start: time.Now(), Outcome: relayclient.OutcomeError, Error: "encrypt frame: " + err.Error()})
		return
	}
	me := c.keys.PubKey()
	c.publishAsync(s, conn, nostr.KindObserverFrame,
		[][]string{{"p", c.agent.owner}, {"agent", me}, {"frame", "telemetry"}}, content)
}

// agentSocket sends presence heartbeats, Poisson observer frames and, while
// a turn works, its typing indicators and frames, until the session halts.
func (c *Client) agentSocket(s *session, conn *relayclient.Conn, rng *rand.Rand) {
	a := c.agent
	sa := c.sc.Agent
	presence := scenario.Secs(sa.PresenceIntervalSecs)
	now := time.Now()
	nextPresence, nextFrame := farFuture, farFuture
	if presence > 0 {
		nextPresence = now
	}
	if sa.ObserverFramesPerHour > 0 {
		nextFrame = now.Add(expDuration(rng, float64(time.Hour)/sa.ObserverFramesPerHour))
	}
	typingEvery := scenario.Secs(sa.Turn.TypingSecs)
	frameEvery := scenario.Secs(sa.Turn.FrameSecs)
	for {
		a.mu.Lock()
		t := a.turn
		due := minTime(nextPresence, nextFrame)
		if t.working() {
			due = minTime(due, t.nextTyping, t.nextFrame)
		}
		a.mu.Unlock()
		timer := time.NewTimer(time.Until(due))
		select {
		case <-s.halt.Done():
			timer.Stop()
			return
		case <-a.wake:
			timer.Stop()
			continue
		case <-timer.C:
		}
		now := time.Now()
		if !now.Before(nextPresence) {
			c.publishAsync(s, conn, nostr.KindPresence, nil, "online")
			nextPresence = nextPresence.Add(presence)
		}
		if !now.Before(nextFrame) {
			c.sendFrame(s, conn)
			nextFrame = nextFrame.Add(expDuration(rng, float64(time.Hour)/sa.ObserverFramesPerHour))
		}
		a.mu.Lock()
		var typing, frame bool
		var chID string
		if t := a.turn; t.working() {
			chID = t.chID
			if !now.Before(t.nextTyping) {
				typing = true
				t.nextTyping = t.nextTyping.Add(typingEvery)
			}
			if !now.Before(t.nextFrame) {
				frame = true
				t.nextFrame = t.nextFrame.Add(frameEvery)
			}
		}
		a.mu.Unlock()
		if typing {
			c.publishAsync(s, conn, nostr.KindTyping, [][]string{{"h", chID}}, "")
		}
		if frame {
			c.sendFrame(s, conn)
		}
	}
}

var farFuture = time.Now().Add(100 * 365 * 24 * time.Hour)

func minTime(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}

// agentHTTP is the agent's one HTTP sequence: polls, messages and turn
// steps, whichever is due first, one request at a time, until halt.
func (c *Client) agentHTTP(s *session) {
	a := c.agent
	sa := c.sc.Agent
	now := time.Now()
	pollEvery := scenario.Secs(sa.QueryIntervalSecs)
	if a.nextPoll.IsZero() {
		a.nextPoll, a.nextEvent, a.nextTurn = farFuture, farFuture, farFuture
		if pollEvery > 0 {
			a.nextPoll = now
		}
		if sa.EventsPerHour > 0 && len(a.chIDs) > 0 {
			a.nextEvent = now.Add(expDuration(c.rng, float64(time.Hour)/sa.EventsPerHour))
		}
		a.drawNextTurn(c, now)
	} else {
		// Resuming after a reconnect: what fell due while no session ran is
		// redrawn from now rather than sent in a burst (a turn under way
		// continues as it was).
		if a.nextEvent.Before(now) {
			a.nextEvent = now.Add(expDuration(c.rng, float64(time.Hour)/sa.EventsPerHour))
		}
		if a.turn == nil && a.nextTurn.Before(now) {
			a.drawNextTurn(c, now)
		}
	}
	for s.halt.Err() == nil {
		a.mu.Lock()
		t := a.turn
		a.mu.Unlock()
		due := minTime(a.nextPoll, a.nextEvent)
		if t == nil {
			due = minTime(due, a.nextTurn)
		} else {
			due = minTime(due, t.nextStep())
		}
		if !waitUntil(s.halt, nil, due, 0) {
			return
		}
		now := time.Now()
		switch {
		case t != nil && !now.Before(t.nextStep()):
			c.turnStep(s, t)
		case t == nil && !now.Before(a.nextTurn):
			c.startTurn(now)
		case !now.Before(a.nextPoll):
			c.poll(s)
			a.nextPoll = a.nextPoll.Add(pollEvery)
			if a.nextPoll.Before(now) {
				a.nextPoll = now.Add(pollEvery) // a slow poll does not cause a burst
			}
		case !now.Before(a.nextEvent):
			c.agentMessage(s)
			a.nextEvent = a.nextEvent.Add(expDuration(c.rng, float64(time.Hour)/sa.EventsPerHour))
		}
	}
}

func (a *agentState) drawNextTurn(c *Client, from time.Time) {
	tu := c.sc.Agent.Turn
	a.nextTurn = farFuture
	if tu.PerHour > 0 && len(a.chIDs) > 0 && (a.maxTurns <= 0 || a.turns < a.maxTurns) {
		a.nextTurn = from.Add(expDuration(c.rng, float64(time.Hour)/tu.PerHour))
	}
}

// startTurn begins a turn in one of the agent's channels: it lasts 0.5–1.5
// × mean_secs, with `reads` tool-call reads at uniform random points.
func (c *Client) startTurn(now time.Time) {
	a := c.agent
	tu := c.sc.Agent.Turn
	ch := c.rng.IntN(len(a.chIDs))
	d := time.Duration((0.5 + c.rng.Float64()) * float64(scenario.Secs(tu.MeanSecs)))
	t := &turn{n: a.turns + 1, ch: ch, chID: a.chIDs[ch], start: now, end: now.Add(d)}
	for i := 0; i < tu.Reads; i++ {
		t.reads = append(t.reads, now.Add(time.Duration(c.rng.Float64()*float64(d))))
	}
	slices.SortFunc(t.reads, func(x, y time.Time) int { return x.Compare(y) })
	a.mu.Lock()
	a.turn = t
	a.mu.Unlock()
}

// nextStep is when the turn's next HTTP step is due: at once during the
// start and end sequences; in the work phase the next tool-call read or the
// turn's end.
func (t *turn) nextStep() time.Time {
	if t.phase != phWork {
		return time.Time{}
	}
	if len(t.reads) > 0 && t.reads[0].Before(t.end) {
		return t.reads[0]
	}
	return t.end
}

// turnStep makes the turn's next request and advances it.
func (c *Client) turnStep(s *session, t *turn) {
	a := c.agent
	ctx := s.opCtx
	me := c.keys.PubKey()
	h := map[string][]string{"h": {t.chID}}
	ctxOp := relayclient.CallOptions{Op: OpTurnContext}
	switch t.phase {
	case phNewest:
		evs, r := c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: h, Limit: 1}}, relayclient.CallOptions{})
		if r.Outcome == relayclient.OutcomeOK && len(evs) > 0 {
			t.msg = &evs[0]
			t.root = threadRoot(t.msg)
		}
		t.phase = phThread
		if t.root == "" {
			t.phase = phMeta
		}
	case phThread:
		evs, r := c.http.Query(ctx, []relayclient.Filter{
			{IDs: []string{t.root}},
			{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"e": {t.root}}, Limit: threadReplyWindow},
			{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"e": {t.root}}, Authors: []string{me}, Limit: 1},
		}, ctxOp)
		t.replies = 0
		for i := range evs {
			if evs[i].ID != t.root {
				t.replies++
			}
		}
		t.phase = phMeta
		if r.Outcome == relayclient.OutcomeOK && t.replies >= threadReplyWindow {
			t.phase = phCount
		}
	case phCount:
		c.http.CountHTTP(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"e": {t.root}}}}, ctxOp)
		t.phase = phMeta
	case phMeta:
		c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindGroupMetadata}, Tags: map[string][]string{"d": {t.chID}}}}, ctxOp)
		t.phase = phProject
	case phProject:
		c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindProject}, Tags: map[string][]string{"buzz-channel": {t.chID}}}}, ctxOp)
		t.phase = phRepo
	case phRepo:
		c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindGitRepo}, Tags: map[string][]string{"buzz-channel": {t.chID}}}}, ctxOp)
		t.phase = phProfile
	case phProfile:
		if t.msg != nil {
			c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindProfile}, Authors: []string{t.msg.PubKey}, Limit: 1}}, ctxOp)
		}
		t.phase = phReact1
		if t.msg == nil {
			c.beginWork(t)
		}
	case phReact1, phReact2:
		// Each turn uses its own pair of emoji, so a message answered again
		// does not repeat a reaction.
		c.httpEvent(s, nostr.KindReaction, [][]string{{"e", t.msg.ID}, {"p", t.msg.PubKey}},
			t.emoji(int(t.phase-phReact1)), relayclient.OpHTTPEvents)
		t.phase++
		if t.phase == phWork {
			c.beginWork(t)
		}
	case phWork:
		now := time.Now()
		if len(t.reads) > 0 && t.reads[0].Before(t.end) {
			t.reads = t.reads[1:]
			c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: h, Limit: toolReadLimit}}, relayclient.CallOptions{})
			return
		}
		if now.Before(t.end) {
			return
		}
		t.phase = phReply
		t.work.Store(false)
		a.nudge()
	case phReply:
		var tags [][]string
		switch {
		case t.root != "":
			tags = firstLevelReply(t.chID, t.root)
		case t.msg != nil: // a top-level message becomes the root of a new thread
			tags = firstLevelReply(t.chID, t.msg.ID)
		default:
			tags = [][]string{{"h", t.chID}}
		}
		if t.msg != nil && t.msg.PubKey != me {
			tags = append(tags, []string{"p", t.msg.PubKey})
		}
		tags = append(tags, scenario.SentAtTag(time.Now()))
		a.seq++
		c.httpEvent(s, nostr.KindStreamMessage, tags, "turn reply "+messageContent(c.cfg.Global, a.seq), relayclient.OpHTTPEvents)
		t.phase = phReactQuery
		if t.msg == nil {
			t.phase = phDone
		}
	case phReactQuery:
		// A harness removes a reaction by finding its own reactions on the
		// message and deleting the ones with that emoji.
		evs, _ := c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindReaction}, Authors: []string{me},
			Tags: map[string][]string{"e": {t.msg.ID}}}}, relayclient.CallOptions{})
		t.reacts = t.reacts[:0]
		emoji := t.emoji(t.unreact)
		for i := range evs {
			if evs[i].Kind == nostr.KindReaction && evs[i].PubKey == me && evs[i].Content == emoji {
				t.reacts = append(t.reacts, evs[i].ID)
			}
		}
		t.phase = phDelete
		if len(t.reacts) == 0 {
			t.nextUnreact()
		}
	case phDelete:
		id := t.reacts[0]
		t.reacts = t.reacts[1:]
		c.httpEvent(s, nostr.KindDeletion, [][]string{{"e", id}}, "", relayclient.OpHTTPEvents)
		if len(t.reacts) == 0 {
			t.nextUnreact()
		}
	}
	if t.phase == phDone {
		c.finishTurn(t)
	}
}

// emoji is the content of the turn's reaction i (0 or 1). Each turn uses
// its own pair, so a message answered again does not repeat a reaction.
func (t *turn) emoji(i int) string {
	return reactionContents[(2*(t.n-1)+i)%len(reactionContents)]
}

// nextUnreact moves on to removing the second reaction, or ends the turn.
func (t *turn) nextUnreact() {
	t.unreact++
	t.phase = phReactQuery
	if t.unreact >= 2 {
		t.phase = phDone
	}
}

// beginWork starts the socket side of the turn's work phase.
func (c *Client) beginWork(t *turn) {
	a := c.agent
	now := time.Now()
	t.phase = phWork
	a.mu.Lock()
	t.nextTyping, t.nextFrame = now, now
	a.mu.Unlock()
	t.work.Store(true)
	a.nudge()
}

func (c *Client) finishTurn(t *turn) {
	a := c.agent
	a.mu.Lock()
	a.turn = nil
	a.turns++
	n := a.turns
	a.mu.Unlock()
	a.drawNextTurn(c, time.Now())
	if a.turnDone != nil {
		select {
		case a.turnDone <- n:
		default:
		}
	}
}

// httpEvent signs and posts one event through /events.
func (c *Client) httpEvent(s *session, kind int, tags [][]string, content, op string) {
	now := time.Now()
	ev, err := c.keys.NewEvent(kind, tags, content, now)
	if err != nil {
		c.sink.Record(relayclient.Result{Op: op, Start: now, Outcome: relayclient.OutcomeError, Error: "sign: " + err.Error()})
		return
	}
	c.http.PublishHTTP(s.opCtx, ev, relayclient.CallOptions{Op: op})
}

// poll is one /query of the channel window plus mentions.
func (c *Client) poll(s *session) {
	a := c.agent
	me := c.keys.PubKey()
	var fs []relayclient.Filter
	for _, id := range a.chIDs {
		fs = append(fs, relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {id}},
			Since: a.lastPoll, Limit: pollLimit})
	}
	fs = append(fs, relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"p": {me}},
		Since: a.lastPoll, Limit: pollLimit})
	start := time.Now()
	if _, r := c.http.Query(s.opCtx, fs, relayclient.CallOptions{}); r.Outcome == relayclient.OutcomeOK {
		a.lastPoll = start.Unix()
	}
}

// agentMessage posts one timed message to a random own channel via /events.
func (c *Client) agentMessage(s *session) {
	a := c.agent
	i := c.rng.IntN(len(a.chIDs))
	a.seq++
	c.httpEvent(s, nostr.KindStreamMessage, [][]string{{"h", a.chIDs[i]}, scenario.SentAtTag(time.Now())},
		messageContent(c.cfg.Global, a.seq), relayclient.OpHTTPEvents)
}
