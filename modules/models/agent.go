package models

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/models/agent"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Agent request shapes (buzz-LOADGEN "Agent turns").
const (
	pollLimit         = 20 // per channel and for mentions, per /query poll
	toolReadLimit     = 50 // a tool call's read of the channel's newest messages
	defaultFrameBytes = 512
)

// agentState is what an agent keeps across sessions: its model (the
// schedule of polls, messages and turns, and a turn under way, which
// continues after a reconnect) and the keys its frames need.
type agentState struct {
	owner string
	ck    [32]byte
	chIDs []string

	mu   sync.Mutex // guards m: the HTTP and socket goroutines both step it
	m    *agent.Model
	wake chan struct{} // nudges the socket goroutine when its due time may have moved

	// turnDone, when set, gets each finished turn's number (tests).
	turnDone chan int
	// sent is the socket goroutine's recent ids.
	sent recentIDs
}

func newAgentState(c *Client, owner string) *agentState {
	chans := c.sc.MemberChannels(c.cfg.Global)
	a := &agentState{owner: owner, chIDs: make([]string, len(chans)), wake: make(chan struct{}, 1)}
	for i, ch := range chans {
		a.chIDs[i] = c.sc.ChannelID(ch)
	}
	a.m = NewAgentModel(c.sc, c.keys.PubKey(), len(chans), c.rng)
	return a
}

// NewAgentModel is the turn model of an agent with public key self in
// channels channels, on the scenario's [agent] rates, drawing from rng (the
// client's source: NewRand(run_id, g)). modules/plan builds its agents
// here too, so a plan and a run draw the same turns.
func NewAgentModel(sc *scenario.Scenario, self string, channels int, rng *rand.Rand) *agent.Model {
	sa := sc.Agent
	p := agent.Params{Self: self, Channels: channels,
		PollEvery: scenario.Secs(sa.QueryIntervalSecs), EventsPerHour: sa.EventsPerHour,
		PresenceEvery: scenario.Secs(sa.PresenceIntervalSecs), FramesPerHour: sa.ObserverFramesPerHour,
		TurnsPerHour: sa.Turn.PerHour, TurnMean: scenario.Secs(sa.Turn.MeanSecs), Reads: sa.Turn.Reads,
		TypingEvery: scenario.Secs(sa.Turn.TypingSecs), FrameEvery: scenario.Secs(sa.Turn.FrameSecs),
		Reactions: reactionContents}
	// The socket side draws from its own source, seeded from the client's,
	// so its draws do not depend on the HTTP sequence's timing.
	srng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	return agent.New(p, rng, srng)
}

// step applies ev to the model under the lock.
func (a *agentState) step(ev agent.Event) []agent.Action {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m.Step(ev)
}

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
	me := c.keys.PubKey()
	if sa.ChannelSubscriptions {
		// Paced within Buzz's WebSocket admission as a human's are
		// (admission.go: 50 frames per 5 s per key): an agent in many
		// channels would otherwise burst past it and have its REQs
		// refused; a throttled REQ is sent again after its hint, never a
		// failed session (issue 41 point 4).
		adm := &admission{limit: connectFrameBudget, window: WSAdmissionWindow}
		var admMu sync.Mutex
		pace := func() bool {
			admMu.Lock()
			d := adm.wait(time.Now())
			admMu.Unlock()
			if d > 0 {
				select {
				case <-time.After(d):
				case <-s.halt.Done():
					return false
				}
			}
			admMu.Lock()
			adm.record(time.Now())
			admMu.Unlock()
			return s.halt.Err() == nil
		}
		var subscribe func(id string)
		subscribe = func(id string) {
			if !pace() {
				return
			}
			subsMu.Lock()
			defer subsMu.Unlock()
			if settled {
				return
			}
			sub, err := conn.Subscribe([]relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
				Tags: map[string][]string{"h": {id}, "p": {me}}, LimitZero: true}},
				relayclient.SubOptions{
					OnEventView: func(ev *nostr.EventView, at time.Time, live bool) {
						if live {
							RecordDeliver(c.sink, ev, at)
						}
					},
					OnClosed: func(reason string, _ time.Time) {
						if conn.Err() != nil {
							return
						}
						if strings.HasPrefix(reason, "rate-limited:") {
							wait := relayclient.RetryIn(reason)
							if wait <= 0 {
								wait = time.Second
							}
							time.AfterFunc(wait, func() { subscribe(id) })
							return
						}
						s.fail(fmt.Errorf("relay CLOSED a live subscription: %s", reason))
					}})
			subs = append(subs, sub)
			if err != nil {
				s.fail(fmt.Errorf("subscribe: %w", err))
			}
		}
		for _, id := range a.chIDs {
			if s.halt.Err() != nil {
				break
			}
			subscribe(id)
		}
	}
	a.step(agent.Resume{At: time.Now()})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.agentSocket(s, conn)
	}()
	c.agentHTTP(s)
	wg.Wait()
	return s.end()
}

// publishAsync sends ev on the socket without waiting for its OK, tracked
// so a shutdown can wait for it.
func (c *Client) publishAsync(s *session, conn *relayclient.Conn, kind int, tags [][]string, content string, due time.Time) {
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
	_ = conn.PublishAsync(ev, relayclient.PublishOptions{Due: due}, func(relayclient.Result) { s.inflight.done() })
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

func (c *Client) sendFrame(s *session, conn *relayclient.Conn, due time.Time) {
	content, err := c.observerFrame(c.sc.Agent.Turn.FrameBytes)
	if err != nil {
		c.sink.Record(relayclient.Result{Op: relayclient.OpPublish, Start: time.Now(), Outcome: relayclient.OutcomeError, Error: "encrypt frame: " + err.Error()})
		return
	}
	me := c.keys.PubKey()
	c.publishAsync(s, conn, nostr.KindObserverFrame,
		[][]string{{"p", c.agent.owner}, {"agent", me}, {"frame", "telemetry"}}, content, due)
}

// agentSocket sends what the model says is due on the socket (presence,
// observer frames, a turn's typing and frames) until the session halts.
func (c *Client) agentSocket(s *session, conn *relayclient.Conn) {
	a := c.agent
	for {
		a.mu.Lock()
		due := a.m.NextSocket()
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
		for _, act := range a.step(agent.SocketDue{At: time.Now()}) {
			switch act := act.(type) {
			case agent.SendPresence:
				c.publishAsync(s, conn, nostr.KindPresence, nil, "online", due)
			case agent.SendFrame:
				c.sendFrame(s, conn, due)
			case agent.SendTyping:
				c.publishAsync(s, conn, nostr.KindTyping, [][]string{{"h", a.chIDs[act.Channel]}}, "", due)
			}
		}
	}
}

// agentHTTP is the agent's one HTTP sequence: the request the model says
// is due, one at a time, its result fed back, until halt.
func (c *Client) agentHTTP(s *session) {
	a := c.agent
	for s.halt.Err() == nil {
		a.mu.Lock()
		due := a.m.NextHTTP()
		a.mu.Unlock()
		if !waitUntil(s.halt, nil, due, 0) {
			return
		}
		// At most one request (agent.HTTPDue), due when the model said.
		for _, act := range a.step(agent.HTTPDue{At: time.Now()}) {
			res := c.agentRequest(s, act, due)
			for _, out := range a.step(res) {
				if e, ok := out.(agent.TurnEnded); ok && a.turnDone != nil {
					select {
					case a.turnDone <- e.N:
					default:
					}
				}
			}
			a.nudge() // the work phase may have begun or ended
		}
	}
}

// agentRequest makes one HTTP request of the model and returns its result.
func (c *Client) agentRequest(s *session, act agent.Action, due time.Time) agent.Event {
	a := c.agent
	ctx := s.opCtx
	me := c.keys.PubKey()
	ctxOp := relayclient.CallOptions{Op: OpTurnContext, Due: due}
	plain := relayclient.CallOptions{Due: due}
	ch := func(i int) map[string][]string { return map[string][]string{"h": {a.chIDs[i]}} }
	var r relayclient.Result
	switch act := act.(type) {
	case agent.Poll:
		var fs []relayclient.Filter
		for _, id := range a.chIDs {
			fs = append(fs, relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {id}},
				Since: act.Since, Limit: pollLimit})
		}
		fs = append(fs, relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"p": {me}},
			Since: act.Since, Limit: pollLimit})
		_, r = c.http.Query(ctx, fs, plain)
	case agent.PostMessage:
		r = c.httpEvent(s, nostr.KindStreamMessage, [][]string{{"h", a.chIDs[act.Channel]}, scenario.SentAtTag(time.Now())},
			messageContent(c.cfg.Global, act.Seq), relayclient.OpHTTPEvents, due)
	case agent.ReadNewest:
		evs, r := c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: ch(act.Channel), Limit: 1}}, plain)
		res := agent.NewestRead{At: time.Now()}
		if r.Outcome == relayclient.OutcomeOK && len(evs) > 0 {
			res.Msg = &agent.Message{ID: evs[0].ID, PubKey: evs[0].PubKey, Root: threadRoot(&evs[0])}
		}
		return res
	case agent.ReadThread:
		evs, r := c.http.Query(ctx, []relayclient.Filter{
			{IDs: []string{act.Root}},
			{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"e": {act.Root}}, Limit: agent.ThreadReplyWindow},
			{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"e": {act.Root}}, Authors: []string{me}, Limit: 1},
		}, ctxOp)
		res := agent.ThreadRead{At: time.Now(), OK: r.Outcome == relayclient.OutcomeOK}
		for i := range evs {
			if evs[i].ID != act.Root {
				res.Replies++
			}
		}
		return res
	case agent.CountReplies:
		_, r = c.http.CountHTTP(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"e": {act.Root}}}}, ctxOp)
	case agent.ReadChannelMeta:
		_, r = c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindGroupMetadata}, Tags: map[string][]string{"d": {a.chIDs[act.Channel]}}}}, ctxOp)
	case agent.ReadProject:
		_, r = c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindProject}, Tags: map[string][]string{"buzz-channel": {a.chIDs[act.Channel]}}}}, ctxOp)
	case agent.ReadRepo:
		_, r = c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindGitRepo}, Tags: map[string][]string{"buzz-channel": {a.chIDs[act.Channel]}}}}, ctxOp)
	case agent.ReadProfile:
		_, r = c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindProfile}, Authors: []string{act.Author}, Limit: 1}}, ctxOp)
	case agent.React:
		r = c.httpEvent(s, nostr.KindReaction, [][]string{{"e", act.MsgID}, {"p", act.Author}}, act.Emoji, relayclient.OpHTTPEvents, due)
	case agent.ToolRead:
		_, r = c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: ch(act.Channel), Limit: toolReadLimit}}, plain)
	case agent.Reply:
		chID := a.chIDs[act.Channel]
		tags := [][]string{{"h", chID}}
		if act.Root != "" {
			tags = firstLevelReply(chID, act.Root)
		}
		if act.Mention != "" {
			tags = append(tags, []string{"p", act.Mention})
		}
		tags = append(tags, scenario.SentAtTag(time.Now()))
		r = c.httpEvent(s, nostr.KindStreamMessage, tags, "turn reply "+messageContent(c.cfg.Global, act.Seq), relayclient.OpHTTPEvents, due)
	case agent.FindReactions:
		evs, _ := c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindReaction}, Authors: []string{me},
			Tags: map[string][]string{"e": {act.MsgID}}}}, plain)
		res := agent.ReactionsFound{At: time.Now()}
		for i := range evs {
			if evs[i].Kind == nostr.KindReaction {
				res.Reactions = append(res.Reactions, agent.Reaction{ID: evs[i].ID, PubKey: evs[i].PubKey, Content: evs[i].Content})
			}
		}
		return res
	case agent.Delete:
		r = c.httpEvent(s, nostr.KindDeletion, [][]string{{"e", act.ID}}, "", relayclient.OpHTTPEvents, due)
	}
	return agent.Done{At: time.Now(), OK: r.Outcome == relayclient.OutcomeOK}
}

// httpEvent signs and posts one event through /events.
func (c *Client) httpEvent(s *session, kind int, tags [][]string, content, op string, due time.Time) relayclient.Result {
	now := time.Now()
	ev, err := c.keys.NewEvent(kind, tags, content, now)
	if err != nil {
		r := relayclient.Result{Op: op, Start: now, Outcome: relayclient.OutcomeError, Error: "sign: " + err.Error()}
		c.sink.Record(r)
		return r
	}
	// Reactions are idempotent: a duplicate (a rerun) is the state asked for.
	_, r := c.http.PublishHTTP(s.opCtx, ev, relayclient.CallOptions{Op: op, DuplicateOK: kind == nostr.KindReaction, Due: due})
	return r
}
