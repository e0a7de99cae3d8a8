package plan

import (
	"math/rand/v2"
	"time"

	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/nostr"
)

// presencePeers matches the basic human's presence subscription (ten peers).
const presencePeers = 10

// activity is the shared schedule of a human of either model on one
// connection: models.Schedule drawn from the client's own random source,
// so the plan sees the same presence, typing, messages, reactions and
// session ends a run does.
type activity struct {
	cfg      models.ScheduleConfig
	rng      *rand.Rand
	sched    *models.Schedule
	start    time.Duration
	due      time.Duration // the schedule's next event (never: none)
	chans    []int32
	rootsFor []bool // seeded roots looked up, per channel
	// reactions: the target (channel, message number) and how many used.
	reactCh  int32
	reactSeq uint64
	reactN   int
}

func newActivity(s *sim, g int, chans []int32) *activity {
	return &activity{cfg: models.HumanSchedule(s.sc, g), rng: models.NewRand(s.sc.RunID, g), chans: chans,
		rootsFor: make([]bool, len(chans)), reactCh: -1, due: never}
}

// begin starts a new schedule on a new connection at now.
func (a *activity) begin(now time.Duration) {
	a.sched = models.NewSchedule(a.cfg, a.rng)
	a.start = now
	a.peek()
}

func (a *activity) end() { a.sched, a.due = nil, never }

func (a *activity) peek() {
	a.due = never
	if _, at, ok := a.sched.Peek(); ok {
		a.due = a.start + at
	}
}

// next is when the schedule's next event is due.
func (a *activity) next() time.Duration { return a.due }

// run does every event due by now; sessionEnd reports the schedule's end.
func (a *activity) run(s *sim, now time.Duration) (sessionEnd bool) {
	for a.sched != nil && a.due <= now {
		ev, ok := a.sched.Next()
		if !ok {
			a.due = never
			return false
		}
		a.peek()
		switch ev.Action {
		case models.ActSessionEnd:
			return true
		case models.ActPresence:
			s.event(nostr.KindPresence, -1, false)
		case models.ActTyping:
			s.event(nostr.KindTyping, int(a.chans[ev.Channel]), false)
		case models.ActMessage:
			if ev.Reply && !a.rootsFor[ev.Channel] {
				// the generator's own search for the channel's seeded roots: a
				// REQ closed at EOSE, once per channel (models.Activity.threadRoots)
				s.req(models.OpHistory, 1, float64(max(s.sc.Shape.ThreadRootsPerChannel, 1)))
				s.close()
				if !s.failed() {
					a.rootsFor[ev.Channel] = true
				}
			}
			s.event(kindMessage, int(a.chans[ev.Channel]), true)
			if ev.Reply && a.rootsFor[ev.Channel] && s.sc.Shape.ThreadRootsPerChannel > 0 {
				s.markReply(a.chans[ev.Channel])
			}
		case models.ActReaction:
			a.react(s, ev.Channel)
		}
	}
	return false
}

// react reacts to the newest message seen (in the event's channel when
// reactions are weighted), with an emoji not yet used on it: eight at most
// per message (models' reactionContents).
func (a *activity) react(s *sim, ch int) {
	best := int32(-1)
	if ch >= 0 {
		best = a.chans[ch]
		if s.channels[best].lastMsg < 0 {
			return
		}
	} else {
		var at time.Duration = -1
		for _, c := range a.chans {
			if l := s.channels[c].lastMsg; l > at {
				best, at = c, l
			}
		}
		if best < 0 {
			return
		}
	}
	seq := s.channels[best].msgSeq
	if best != a.reactCh || seq != a.reactSeq {
		a.reactCh, a.reactSeq, a.reactN = best, seq, 0
	}
	if a.reactN >= reactionEmoji {
		return
	}
	a.reactN++
	s.event(kindReaction, int(best), false)
}

// reactionEmoji is how many distinct reactions a member puts on one message.
const reactionEmoji = 8

// human is a basic human: one session per iteration (connect, its channel,
// mention and presence REQs, history, then the activity until the
// schedule's session end), and the next session at once.
type human struct {
	g       int
	started bool
	online  bool
	chans   []int32
	peers   bool
	act     *activity
	open    int
}

func newHuman(s *sim, g int, users float64) *human {
	chans := s.denseAll(s.sc.MemberChannels(g))
	return &human{g: g, chans: chans, peers: s.coMemberCount(g, chans, users, presencePeers) > 0, act: newActivity(s, g, chans)}
}

func (h *human) wake(s *sim, now time.Duration) time.Duration {
	if !h.online {
		h.session(s, now)
	}
	if h.act.run(s, now) {
		h.hangUp(s)
		h.session(s, now)
	}
	return h.act.next()
}

func (h *human) session(s *sim, now time.Duration) {
	reason := "start"
	if h.started {
		reason = "session end"
	}
	h.started, h.online = true, true
	s.connect(reason)
	for range h.chans { // one REQ per channel (messages and typing)
		s.req("subscribe_eose", 1, 0)
	}
	h.open = len(h.chans)
	if len(h.chans) > 0 {
		s.req("subscribe_eose", len(h.chans), 0) // mentions
		h.open++
	}
	if h.peers {
		s.req("subscribe_eose", 0, 0) // ten peers' presence
		h.open++
	}
	s.subscribe(h.chans, 1)
	if n := s.sc.Human.HistoryLimit; n > 0 {
		for _, c := range h.chans {
			s.req(models.OpHistory, 1, min(float64(n), s.storedSince(int(c), 0)))
			s.close()
		}
	}
	h.act.begin(now)
}

func (h *human) hangUp(s *sim) {
	s.subscribe(h.chans, -1)
	s.disconnect(h.open)
	h.open, h.online = 0, false
	h.act.end()
}

var _ actor = (*human)(nil)
