package models

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/buzzload/buzzload/modules/scenario"
)

// Action is one kind of scheduled activity.
type Action uint8

// The activities of the shared schedule (humans of both models).
const (
	ActPresence   Action = iota // presence heartbeat (kind 20001), every presence_interval_secs
	ActTyping                   // typing indicator (kind 20002), Poisson
	ActMessage                  // channel message (kind 9), Poisson; some are thread replies
	ActReaction                 // reaction (kind 7) to the latest message seen, Poisson
	ActSessionEnd               // the session ends (reconnect churn), once, exponential
	numActions
)

func (a Action) String() string {
	switch a {
	case ActPresence:
		return "presence"
	case ActTyping:
		return "typing"
	case ActMessage:
		return "message"
	case ActReaction:
		return "reaction"
	case ActSessionEnd:
		return "session_end"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// Event is one due activity.
type Event struct {
	Action Action
	// At is when it is due, as an offset from the session's start.
	At time.Duration
	// Channel indexes MemberChannels (and ActivityWeights) for typing,
	// messages and weighted reactions; -1 when the activity has no channel
	// (presence, session end) or, for a reaction, "the channel of the latest
	// message the member saw".
	Channel int
	// Reply marks a message sent as a reply into a seeded deep thread.
	Reply bool
}

// ScheduleConfig is what a schedule is drawn from. Rates of 0 switch an
// activity off; a PresenceInterval or MeanSession of 0 does the same.
type ScheduleConfig struct {
	PresenceInterval    time.Duration
	TypingPerHour       float64
	MessagesPerHour     float64
	ReactionsPerHour    float64
	MeanSession         time.Duration
	ThreadReplyFraction float64
	// Weights spreads typing and messages (and reactions when
	// WeightReactions) over the member's channels; they need not sum to 1.
	// Empty: no channel activity (typing, messages, reactions are off).
	Weights []float64
	// WeightReactions draws a reaction's channel from Weights instead of
	// reacting to the latest message seen anywhere: the member is in wide
	// channels and population.wide_activity_share is set.
	WeightReactions bool
}

// HumanSchedule derives the schedule config of human (or desktop human) g
// from the scenario: [human] rates and ActivityWeights(g).
func HumanSchedule(s *scenario.Scenario, g int) ScheduleConfig {
	ws := s.ActivityWeights(g)
	cfg := ScheduleConfig{
		PresenceInterval:    scenario.Secs(s.Human.PresenceIntervalSecs),
		TypingPerHour:       s.Human.TypingPerHour,
		MessagesPerHour:     s.Human.MessagesPerHour,
		ReactionsPerHour:    s.Human.ReactionsPerHour,
		MeanSession:         scenario.Secs(s.Human.MeanSessionSecs),
		ThreadReplyFraction: s.Human.ThreadReplyFraction,
		Weights:             make([]float64, len(ws)),
	}
	wide := false
	for i, w := range ws {
		cfg.Weights[i] = w.Weight
		if s.IsWide(w.Channel) {
			wide = true
		}
	}
	cfg.WeightReactions = wide && s.Population.WideActivityShare != nil
	return cfg
}

// Schedule is the shared activity schedule of one session: presence
// heartbeats on a fixed period from the session's start, typing, messages
// and reactions as independent Poisson processes, and one exponential session
// end. It is pure: no clock, no sleeping; Next returns what is due next and
// when, as an offset. The same config and random source give the same
// sequence, which is what makes a run reproducible.
type Schedule struct {
	cfg     ScheduleConfig
	rng     *rand.Rand
	cum     []float64 // cumulative channel weights
	due     [numActions]time.Duration
	enabled [numActions]bool
	// first is the stream due first (numActions: none), kept by every
	// change of due, so Peek is a lookup: modules/plan peeks millions of
	// schedules an hour.
	first Action
}

// never marks a stream that has nothing more to do.
const never = time.Duration(math.MaxInt64)

// NewSchedule starts a schedule at offset 0. The first presence heartbeat is
// due at once (a client announces itself when it connects); every other
// stream draws its first gap. Draws happen in a fixed order, so the sequence
// depends only on cfg and rng.
func NewSchedule(cfg ScheduleConfig, rng *rand.Rand) *Schedule {
	s := &Schedule{cfg: cfg, rng: rng}
	total := 0.0
	for _, w := range cfg.Weights {
		if w > 0 && !math.IsInf(w, 0) {
			total += w
		}
		s.cum = append(s.cum, total)
	}
	hasChannels := total > 0
	s.enabled[ActPresence] = cfg.PresenceInterval > 0
	s.enabled[ActTyping] = hasChannels && cfg.TypingPerHour > 0
	s.enabled[ActMessage] = hasChannels && cfg.MessagesPerHour > 0
	s.enabled[ActReaction] = cfg.ReactionsPerHour > 0 && (hasChannels || !cfg.WeightReactions)
	s.enabled[ActSessionEnd] = cfg.MeanSession > 0
	for a := Action(0); a < numActions; a++ {
		s.due[a] = never
		if !s.enabled[a] {
			continue
		}
		if a == ActPresence {
			s.due[a] = 0
			continue
		}
		s.due[a] = s.gap(a)
	}
	s.findFirst()
	return s
}

// findFirst recomputes the stream due first; ties go to the lower Action.
func (s *Schedule) findFirst() {
	best := Action(numActions)
	for a := Action(0); a < numActions; a++ {
		if s.due[a] != never && (best == numActions || s.due[a] < s.due[best]) {
			best = a
		}
	}
	s.first = best
}

// rate is the stream's mean events per hour.
func (s *Schedule) ratePerHour(a Action) float64 {
	switch a {
	case ActTyping:
		return s.cfg.TypingPerHour
	case ActMessage:
		return s.cfg.MessagesPerHour
	case ActReaction:
		return s.cfg.ReactionsPerHour
	}
	return 0
}

// gap draws the time until the stream's next event.
func (s *Schedule) gap(a Action) time.Duration {
	switch a {
	case ActPresence:
		return s.cfg.PresenceInterval
	case ActSessionEnd:
		return expDuration(s.rng, float64(s.cfg.MeanSession))
	}
	return expDuration(s.rng, float64(time.Hour)/s.ratePerHour(a))
}

// ExpDuration draws an exponential duration with the given mean (ns),
// capped so it never overflows: the gap of every Poisson stream of the
// models (and of modules/plan, which replays their draws).
func ExpDuration(rng *rand.Rand, mean float64) time.Duration { return expDuration(rng, mean) }

func expDuration(rng *rand.Rand, mean float64) time.Duration {
	d := rng.ExpFloat64() * mean
	if d >= float64(never/2) {
		return never / 2
	}
	return time.Duration(d)
}

// Done reports whether nothing more will ever be due.
func (s *Schedule) Done() bool {
	for a := Action(0); a < numActions; a++ {
		if s.due[a] != never {
			return false
		}
	}
	return true
}

// Peek returns the next event's action and due offset without consuming it
// (ok false when nothing is due ever again).
func (s *Schedule) Peek() (Action, time.Duration, bool) {
	if s.first == numActions {
		return 0, 0, false
	}
	return s.first, s.due[s.first], true
}

// Next consumes and returns the next due event. Ties go to the lower
// Action. After the session end nothing else is due. ok is false when the
// schedule is exhausted.
func (s *Schedule) Next() (Event, bool) {
	a, at, ok := s.Peek()
	if !ok {
		return Event{}, false
	}
	ev := Event{Action: a, At: at, Channel: -1}
	switch a {
	case ActTyping:
		ev.Channel = s.pickChannel()
	case ActMessage:
		ev.Channel = s.pickChannel()
		ev.Reply = s.cfg.ThreadReplyFraction > 0 && s.rng.Float64() < s.cfg.ThreadReplyFraction
	case ActReaction:
		if s.cfg.WeightReactions {
			ev.Channel = s.pickChannel()
		}
	}
	if a == ActSessionEnd {
		for b := range s.due {
			s.due[b] = never
		}
		s.first = numActions
		return ev, true
	}
	s.due[a] = at + s.gap(a)
	if s.due[a] < at { // overflow
		s.due[a] = never
	}
	s.findFirst()
	return ev, true
}

// pickChannel draws a channel index by weight.
func (s *Schedule) pickChannel() int {
	total := s.cum[len(s.cum)-1]
	x := s.rng.Float64() * total
	for i, c := range s.cum {
		if x < c {
			return i
		}
	}
	return len(s.cum) - 1
}

// SeedFor is the random seed of client g in a run: the first 16 bytes of
// SHA-256("buzzload/v1\x00client\x00" ‖ run_id ‖ "\x00" ‖ decimal(g)), so
// every shard and rerun draws the same activity for the same client.
func SeedFor(runID string, g int) (uint64, uint64) {
	h := sha256.Sum256([]byte("buzzload/v1\x00client\x00" + runID + "\x00" + strconv.Itoa(g)))
	return binary.BigEndian.Uint64(h[0:8]), binary.BigEndian.Uint64(h[8:16])
}

// NewRand returns client g's seeded random source (PCG).
func NewRand(runID string, g int) *rand.Rand {
	a, b := SeedFor(runID, g)
	return rand.New(rand.NewPCG(a, b))
}

// String describes the config (for logs and test names).
func (c ScheduleConfig) String() string {
	return fmt.Sprintf("presence every %v, typing %g/h, messages %g/h (replies %g), reactions %g/h, session mean %v, %d channels",
		c.PresenceInterval, c.TypingPerHour, c.MessagesPerHour, c.ThreadReplyFraction, c.ReactionsPerHour, c.MeanSession, len(c.Weights))
}
