// Package agent is the agent's decisions as a state machine: when its
// polls, messages and turns fall due, what each step of a turn reads or
// sends, and the cadence of its socket traffic (presence, observer frames,
// a turn's typing and frames). Step takes an event that carries its time
// and returns the actions it causes; the model reads no clock and opens no
// socket, so every rule is tested with plain times (turn_test.go). The
// driver in modules/models (agent.go) turns actions into requests and
// results back into events.
//
// The request shapes follow ../shared/seeds/buzz-LOADGEN.md "Agent turns".
package agent

import (
	"slices"
	"time"
)

// Never is the due time of something that will not happen.
var Never = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// Rand is the random source the model draws from (*math/rand/v2.Rand).
type Rand interface {
	Float64() float64
	ExpFloat64() float64
	IntN(n int) int
}

// Params are the agent's rates and cadences (the scenario's [agent]).
type Params struct {
	Self          string        // the agent's public key
	Channels      int           // its member channels, addressed by index
	PollEvery     time.Duration // agent.query_interval_secs; 0: no polls
	EventsPerHour float64       // timed messages
	PresenceEvery time.Duration // agent.presence_interval_secs; 0: none
	FramesPerHour float64       // observer frames outside turns
	TurnsPerHour  float64
	TurnMean      time.Duration // a turn lasts 0.5–1.5 × this
	Reads         int           // tool-call reads per turn
	TypingEvery   time.Duration // during a turn's work
	FrameEvery    time.Duration // during a turn's work
	// Reactions are the emoji turns cycle through, two per turn.
	Reactions []string
	// MaxTurns, when > 0, stops starting turns after that many (tests).
	MaxTurns int
}

// ThreadReplyWindow is how many of a thread's newest replies a turn reads;
// a read that returns all of them is followed by a /count.
const ThreadReplyWindow = 13

// request is what the outstanding HTTP request belongs to.
type request uint8

const (
	reqPoll request = iota
	reqMessage
	reqTurn
)

type phase uint8

const (
	phNewest     phase = iota // http_query: the channel's newest message
	phThread                  // turn_context: root, 13 newest replies, own newest reply
	phCount                   // turn_context: /count when all 13 came back
	phMeta                    // turn_context: kind 39000
	phProject                 // turn_context: kind 30621
	phRepo                    // turn_context: kind 30617
	phProfile                 // turn_context: the author's kind 0
	phReact1                  // http_events: first reaction
	phReact2                  // http_events: second reaction
	phWork                    // typing and frames on the socket, tool-call reads
	phReply                   // http_events: the timed reply
	phReactQuery              // http_query: the agent's reactions on the message (once per reaction)
	phDelete                  // http_events: one kind:5 per reaction found with that emoji
	phDone
)

// turn is one turn under way; it outlives a reconnect.
type turn struct {
	n       int
	ch      int
	end     time.Time
	reads   []time.Time // tool-call reads still to make, in order
	phase   phase
	msg     *Message // the message it answers (nil: the channel is empty)
	unreact int      // which of the two reactions is being removed
	reacts  []string // reactions found for its removal
	// The socket side's cadence during the work phase.
	nextTyping, nextFrame time.Time
}

// Model is the agent's state across sessions. Not safe for concurrent use.
type Model struct {
	p         Params
	rng, srng Rand // the HTTP sequence's and the socket side's draws

	now       time.Time // the latest event's time: "at once" for NextHTTP
	started   bool
	busy      bool      // an HTTP request is outstanding
	out       request   // ...and what it is
	pollAt    time.Time // when the outstanding poll was issued
	nextPoll  time.Time
	nextEvent time.Time
	nextTurn  time.Time
	lastPoll  int64
	seq       uint64
	turns     int
	turn      *turn

	nextPresence, nextObserver time.Time
}

// New is an agent that has not started; rng drives the HTTP sequence,
// srng the socket side, so each lane's draws are reproducible alone.
func New(p Params, rng, srng Rand) *Model {
	return &Model{p: p, rng: rng, srng: srng, nextPoll: Never, nextEvent: Never, nextTurn: Never,
		nextPresence: Never, nextObserver: Never}
}

// LimitTurns stops starting turns after n in all (tests); a turn already
// drawn still starts.
func (m *Model) LimitTurns(n int) { m.p.MaxTurns = n }

// Turns is how many turns finished.
func (m *Model) Turns() int { return m.turns }

// Working reports whether a turn is in its work phase (typing and frames
// are sent).
func (m *Model) Working() bool { return m.turn != nil && m.turn.phase == phWork }

// NextHTTP is when the HTTP sequence is next due (Never while a request is
// outstanding).
func (m *Model) NextHTTP() time.Time {
	if m.busy {
		return Never
	}
	due := minTime(m.nextPoll, m.nextEvent)
	if m.turn == nil {
		return minTime(due, m.nextTurn)
	}
	return minTime(due, maxTime(m.turn.nextStep(), m.now))
}

// NextSocket is when the socket side is next due.
func (m *Model) NextSocket() time.Time {
	due := minTime(m.nextPresence, m.nextObserver)
	if m.Working() {
		due = minTime(due, m.turn.nextTyping, m.turn.nextFrame)
	}
	return due
}

// Step applies ev and returns the actions it causes.
func (m *Model) Step(ev Event) []Action {
	m.now = maxTime(m.now, eventTime(ev))
	switch e := ev.(type) {
	case Resume:
		m.resume(e.At)
	case HTTPDue:
		if a := m.httpDue(e.At); a != nil {
			m.busy = true
			return []Action{a}
		}
	case SocketDue:
		return m.socketDue(e.At)
	case Done, NewestRead, ThreadRead, ReactionsFound:
		if !m.busy {
			return nil // no request is outstanding: a stray result
		}
		m.busy = false
		switch m.out {
		case reqPoll:
			// The next poll asks from this one's start, when it succeeded.
			if d, _ := e.(Done); d.OK {
				m.lastPoll = m.pollAt.Unix()
			}
		case reqTurn:
			return m.advance(eventTime(e), e)
		}
	}
	return nil
}

func eventTime(ev Event) time.Time {
	switch e := ev.(type) {
	case Resume:
		return e.At
	case HTTPDue:
		return e.At
	case SocketDue:
		return e.At
	case Done:
		return e.At
	case NewestRead:
		return e.At
	case ThreadRead:
		return e.At
	case ReactionsFound:
		return e.At
	}
	return time.Time{}
}

// resume starts a session. The first one polls at once and draws the
// first message and turn; a later one redraws from now what fell due while
// no session ran rather than sending it in a burst (a turn under way
// continues where it was). Presence goes out at each session's start.
func (m *Model) resume(now time.Time) {
	p := m.p
	if !m.started {
		m.started = true
		if p.PollEvery > 0 {
			m.nextPoll = now
		}
		if p.EventsPerHour > 0 && p.Channels > 0 {
			m.nextEvent = now.Add(expDuration(m.rng, float64(time.Hour)/p.EventsPerHour))
		}
		m.drawNextTurn(now)
	} else {
		if m.nextEvent.Before(now) {
			m.nextEvent = now.Add(expDuration(m.rng, float64(time.Hour)/p.EventsPerHour))
		}
		if m.turn == nil && m.nextTurn.Before(now) {
			m.drawNextTurn(now)
		}
	}
	m.nextPresence, m.nextObserver = Never, Never
	if p.PresenceEvery > 0 {
		m.nextPresence = now
	}
	if p.FramesPerHour > 0 {
		m.nextObserver = now.Add(expDuration(m.srng, float64(time.Hour)/p.FramesPerHour))
	}
	if t := m.turn; t != nil && t.phase == phWork {
		t.nextTyping, t.nextFrame = maxTime(t.nextTyping, now), maxTime(t.nextFrame, now)
	}
}

func (m *Model) drawNextTurn(from time.Time) {
	p := m.p
	m.nextTurn = Never
	if p.TurnsPerHour > 0 && p.Channels > 0 && (p.MaxTurns <= 0 || m.turns < p.MaxTurns) {
		m.nextTurn = from.Add(expDuration(m.rng, float64(time.Hour)/p.TurnsPerHour))
	}
}

// httpDue picks the request due at now: a turn's step first, then a turn
// start, a poll, a timed message.
func (m *Model) httpDue(now time.Time) Action {
	if m.busy {
		return nil
	}
	if m.turn == nil && !now.Before(m.nextTurn) {
		m.startTurn(now)
	}
	if t := m.turn; t != nil && !now.Before(t.nextStep()) {
		if a := m.turnRequest(now); a != nil {
			m.out = reqTurn
			return a
		}
	}
	switch {
	case !now.Before(m.nextPoll):
		m.out, m.pollAt = reqPoll, now
		m.nextPoll = m.nextPoll.Add(m.p.PollEvery)
		if m.nextPoll.Before(now) {
			m.nextPoll = now.Add(m.p.PollEvery) // a slow poll does not cause a burst
		}
		return Poll{Since: m.lastPoll}
	case !now.Before(m.nextEvent):
		m.nextEvent = m.nextEvent.Add(expDuration(m.rng, float64(time.Hour)/m.p.EventsPerHour))
		m.seq++
		m.out = reqMessage
		return PostMessage{Channel: m.rng.IntN(m.p.Channels), Seq: m.seq}
	}
	return nil
}

// startTurn begins a turn in one of the agent's channels: it lasts 0.5–1.5
// × TurnMean, with Reads tool-call reads at uniform random points.
func (m *Model) startTurn(now time.Time) {
	ch := m.rng.IntN(m.p.Channels)
	d := time.Duration((0.5 + m.rng.Float64()) * float64(m.p.TurnMean))
	t := &turn{n: m.turns + 1, ch: ch, end: now.Add(d)}
	for i := 0; i < m.p.Reads; i++ {
		t.reads = append(t.reads, now.Add(time.Duration(m.rng.Float64()*float64(d))))
	}
	slices.SortFunc(t.reads, func(x, y time.Time) int { return x.Compare(y) })
	m.turn = t
}

// nextStep is when the turn's next request is due: at once (the zero
// time) during the start and end sequences; in the work phase the next tool-call read or
// the turn's end.
func (t *turn) nextStep() time.Time {
	if t.phase != phWork {
		return time.Time{}
	}
	if len(t.reads) > 0 && t.reads[0].Before(t.end) {
		return t.reads[0]
	}
	return t.end
}

// turnRequest is the turn's request in its current phase (nil in the work
// phase before its end with no read due).
func (m *Model) turnRequest(now time.Time) Action {
	t := m.turn
	switch t.phase {
	case phNewest:
		return ReadNewest{Channel: t.ch}
	case phThread:
		return ReadThread{Root: t.msg.Root}
	case phCount:
		return CountReplies{Root: t.msg.Root}
	case phMeta:
		return ReadChannelMeta{Channel: t.ch}
	case phProject:
		return ReadProject{Channel: t.ch}
	case phRepo:
		return ReadRepo{Channel: t.ch}
	case phProfile:
		return ReadProfile{Author: t.msg.PubKey}
	case phReact1, phReact2:
		return React{MsgID: t.msg.ID, Author: t.msg.PubKey, Emoji: m.emoji(int(t.phase - phReact1))}
	case phWork:
		if len(t.reads) > 0 && t.reads[0].Before(t.end) {
			t.reads = t.reads[1:]
			return ToolRead{Channel: t.ch}
		}
		if now.Before(t.end) {
			return nil
		}
		t.phase = phReply // typing and frames stop with the work
		return m.turnRequest(now)
	case phReply:
		r := Reply{Channel: t.ch}
		if t.msg != nil {
			r.Root = t.msg.Root
			if r.Root == "" { // a top-level message becomes the root of a new thread
				r.Root = t.msg.ID
			}
			if t.msg.PubKey != m.p.Self {
				r.Mention = t.msg.PubKey
			}
		}
		m.seq++
		r.Seq = m.seq
		return r
	case phReactQuery:
		return FindReactions{MsgID: t.msg.ID}
	case phDelete:
		return Delete{ID: t.reacts[0]}
	}
	return nil
}

// advance moves the turn on after its request's result.
func (m *Model) advance(now time.Time, ev Event) []Action {
	t := m.turn
	if t == nil {
		return nil
	}
	switch t.phase {
	case phNewest:
		if r, ok := ev.(NewestRead); ok && r.Msg != nil {
			msg := *r.Msg
			t.msg = &msg
		}
		t.phase = phThread
		if t.msg == nil || t.msg.Root == "" {
			t.phase = phMeta
		}
	case phThread:
		r, _ := ev.(ThreadRead)
		t.phase = phMeta
		if r.OK && r.Replies >= ThreadReplyWindow {
			t.phase = phCount
		}
	case phCount, phMeta, phProject:
		t.phase++
	case phRepo:
		t.phase = phProfile
		if t.msg == nil { // an empty channel: nothing to look up or react to
			m.beginWork(now)
		}
	case phProfile, phReact1:
		t.phase++
	case phReact2:
		m.beginWork(now)
	case phWork: // a tool-call read finished
	case phReply:
		t.phase = phReactQuery
		if t.msg == nil {
			t.phase = phDone
		}
	case phReactQuery:
		// A harness removes a reaction by finding its own reactions on the
		// message and deleting the ones with that emoji.
		r, _ := ev.(ReactionsFound)
		t.reacts = t.reacts[:0]
		emoji := m.emoji(t.unreact)
		for _, x := range r.Reactions {
			if x.PubKey == m.p.Self && x.Content == emoji {
				t.reacts = append(t.reacts, x.ID)
			}
		}
		t.phase = phDelete
		if len(t.reacts) == 0 {
			t.nextUnreact()
		}
	case phDelete:
		t.reacts = t.reacts[1:]
		if len(t.reacts) == 0 {
			t.nextUnreact()
		}
	}
	if t.phase == phDone {
		m.turn = nil
		m.turns++
		m.drawNextTurn(now)
		return []Action{TurnEnded{N: m.turns}}
	}
	return nil
}

// emoji is the content of the turn's reaction i (0 or 1). Each turn uses
// its own pair, so a message answered again does not repeat a reaction.
func (m *Model) emoji(i int) string {
	r := m.p.Reactions
	if len(r) == 0 {
		return "+"
	}
	return r[(2*(m.turn.n-1)+i)%len(r)]
}

// nextUnreact moves on to removing the second reaction, or ends the turn.
func (t *turn) nextUnreact() {
	t.unreact++
	t.phase = phReactQuery
	if t.unreact >= 2 {
		t.phase = phDone
	}
}

// beginWork starts the work phase: typing and frames from now.
func (m *Model) beginWork(now time.Time) {
	t := m.turn
	t.phase = phWork
	t.nextTyping, t.nextFrame = now, now
}

// socketDue is what the socket sends at now: presence every interval,
// Poisson observer frames, and during a turn's work its typing and frames
// at their cadence.
func (m *Model) socketDue(now time.Time) []Action {
	var out []Action
	if !now.Before(m.nextPresence) {
		out = append(out, SendPresence{})
		m.nextPresence = m.nextPresence.Add(m.p.PresenceEvery)
	}
	if !now.Before(m.nextObserver) {
		out = append(out, SendFrame{})
		m.nextObserver = m.nextObserver.Add(expDuration(m.srng, float64(time.Hour)/m.p.FramesPerHour))
	}
	if t := m.turn; m.Working() {
		if !now.Before(t.nextTyping) {
			out = append(out, SendTyping{Channel: t.ch})
			t.nextTyping = after(t.nextTyping, m.p.TypingEvery)
		}
		if !now.Before(t.nextFrame) {
			out = append(out, SendFrame{})
			t.nextFrame = after(t.nextFrame, m.p.FrameEvery)
		}
	}
	return out
}

// after is t+d, or Never for a cadence of 0 (validation forbids it; a zero
// would otherwise send on every wake).
func after(t time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return Never
	}
	return t.Add(d)
}

// expDuration draws an exponential duration with the given mean (ns),
// capped so it never overflows.
func expDuration(rng Rand, mean float64) time.Duration {
	const limit = 50 * 365 * 24 * time.Hour
	d := rng.ExpFloat64() * mean
	if d >= float64(limit) {
		return limit
	}
	return time.Duration(d)
}

func minTime(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
