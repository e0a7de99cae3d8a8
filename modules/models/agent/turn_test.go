package agent

import (
	"reflect"
	"testing"
	"time"
)

// fixed is a Rand with plain values: every exponential draw is 1 (so a
// Poisson interval is exactly its mean), every uniform draw the next of u
// (cycling), every index 0.
type fixed struct {
	u []float64
	i int
}

func (f *fixed) Float64() float64 {
	if len(f.u) == 0 {
		return 0.5
	}
	v := f.u[f.i%len(f.u)]
	f.i++
	return v
}
func (f *fixed) ExpFloat64() float64 { return 1 }
func (f *fixed) IntN(int) int        { return 0 }

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const self = "agent-pub"

// turnParams: one turn an hour of 10 s mean, two reads, typing every 2 s
// and frames every 3 s; no polls, messages, presence or observer frames.
func turnParams() Params {
	return Params{Self: self, Channels: 3, TurnsPerHour: 1, TurnMean: 10 * time.Second, Reads: 2,
		TypingEvery: 2 * time.Second, FrameEvery: 3 * time.Second, Reactions: []string{"a", "b", "c", "d"}, MaxTurns: 1}
}

// answers scripts the results the driver feeds back.
type answers struct {
	newest  *Message
	threadN int
	threadF bool // the thread read failed
	found   []Reaction
}

func (a answers) result(act Action, at time.Time) Event {
	switch act.(type) {
	case ReadNewest:
		return NewestRead{At: at, Msg: a.newest}
	case ReadThread:
		return ThreadRead{At: at, OK: !a.threadF, Replies: a.threadN}
	case FindReactions:
		return ReactionsFound{At: at, Reactions: a.found}
	}
	return Done{At: at, OK: true}
}

type timed struct {
	at  time.Duration // since t0
	act Action
}

// run drives m from a session start at t0 until limit: the HTTP side at
// its due times (each request answered at once), the socket side at its
// own. It returns every action with its time.
func run(m *Model, a answers, limit time.Duration) []timed {
	var out []timed
	m.Step(Resume{At: t0})
	for {
		h, s := m.NextHTTP(), m.NextSocket()
		at := minTime(h, s)
		if at.After(t0.Add(limit)) {
			return out
		}
		var acts []Action
		if at.Equal(h) {
			acts = m.Step(HTTPDue{At: at})
			for _, act := range acts {
				acts = append(acts, m.Step(a.result(act, at))...)
			}
		} else {
			acts = m.Step(SocketDue{At: at})
		}
		for _, act := range acts {
			out = append(out, timed{at.Sub(t0), act})
		}
	}
}

func requests(ts []timed) []Action {
	var out []Action
	for _, t := range ts {
		switch t.act.(type) {
		case SendPresence, SendFrame, SendTyping:
		default:
			out = append(out, t.act)
		}
	}
	return out
}

func TestTurnRequests(t *testing.T) {
	inThread := &Message{ID: "m", PubKey: "author", Root: "r"}
	topLevel := &Message{ID: "m", PubKey: "author"}
	own := &Message{ID: "m", PubKey: self}
	mine := func(id, emoji string) Reaction { return Reaction{ID: id, PubKey: self, Content: emoji} }
	context := []Action{ReadChannelMeta{0}, ReadProject{0}, ReadRepo{0}}
	cat := func(parts ...[]Action) []Action {
		var out []Action
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	start := []Action{ReadNewest{0}}
	react := []Action{React{"m", "author", "a"}, React{"m", "author", "b"}}
	work := []Action{ToolRead{0}, ToolRead{0}}
	for _, tc := range []struct {
		name string
		a    answers
		want []Action
	}{
		{"a reply in a thread whose 13 newest replies all came back reads the thread and counts it",
			answers{newest: inThread, threadN: 13},
			cat(start, []Action{ReadThread{"r"}, CountReplies{"r"}}, context, []Action{ReadProfile{"author"}}, react, work,
				[]Action{Reply{Root: "r", Mention: "author", Seq: 1}, FindReactions{"m"}, FindReactions{"m"}, TurnEnded{1}})},
		{"a thread with fewer than 13 replies is not counted",
			answers{newest: inThread, threadN: 12},
			cat(start, []Action{ReadThread{"r"}}, context, []Action{ReadProfile{"author"}}, react, work,
				[]Action{Reply{Root: "r", Mention: "author", Seq: 1}, FindReactions{"m"}, FindReactions{"m"}, TurnEnded{1}})},
		{"a failed thread read is not counted",
			answers{newest: inThread, threadN: 13, threadF: true},
			cat(start, []Action{ReadThread{"r"}}, context, []Action{ReadProfile{"author"}}, react, work,
				[]Action{Reply{Root: "r", Mention: "author", Seq: 1}, FindReactions{"m"}, FindReactions{"m"}, TurnEnded{1}})},
		{"a top-level message reads the channel context only and is answered in a new thread under it",
			answers{newest: topLevel},
			cat(start, context, []Action{ReadProfile{"author"}}, react, work,
				[]Action{Reply{Root: "m", Mention: "author", Seq: 1}, FindReactions{"m"}, FindReactions{"m"}, TurnEnded{1}})},
		{"the reply to the agent's own message mentions no one",
			answers{newest: own},
			cat(start, context, []Action{ReadProfile{self}}, []Action{React{"m", self, "a"}, React{"m", self, "b"}}, work,
				[]Action{Reply{Root: "m", Seq: 1}, FindReactions{"m"}, FindReactions{"m"}, TurnEnded{1}})},
		{"an empty channel: no profile, no reactions, a top-level reply and no removal",
			answers{},
			cat(start, context, work, []Action{Reply{Seq: 1}, TurnEnded{1}})},
		{"removal deletes each own reaction with the emoji, then looks up the second",
			answers{newest: topLevel, found: []Reaction{mine("x1", "a"), mine("x2", "a"), mine("y", "b"),
				{ID: "z", PubKey: "other", Content: "a"}}},
			cat(start, context, []Action{ReadProfile{"author"}}, react, work,
				[]Action{Reply{Root: "m", Mention: "author", Seq: 1}, FindReactions{"m"}, Delete{"x1"}, Delete{"x2"},
					FindReactions{"m"}, Delete{"y"}, TurnEnded{1}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(turnParams(), &fixed{}, &fixed{})
			got := requests(run(m, tc.a, 2*time.Hour))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("requests\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// at returns the times (since t0) of the actions of act's type.
func at(ts []timed, like Action) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		if reflect.TypeOf(t.act) == reflect.TypeOf(like) {
			out = append(out, t.at)
		}
	}
	return out
}

func TestTurnTiming(t *testing.T) {
	h := time.Hour
	msg := answers{newest: &Message{ID: "m", PubKey: "author"}}
	for _, tc := range []struct {
		name   string
		p      func(*Params)
		u      []float64 // uniform draws: the duration's, then each read's
		like   Action
		want   []time.Duration
		within time.Duration
	}{
		{"the first turn starts one mean interval after the session starts",
			nil, nil, ReadNewest{}, []time.Duration{h}, 2 * h},
		{"a turn lasts 0.5 + u of mean_secs: the reply goes out at its end",
			nil, []float64{0.75, 0, 0}, Reply{}, []time.Duration{h + 12500*time.Millisecond}, 2 * h},
		{"tool-call reads fall at u times the turn's duration, in order",
			nil, []float64{0.5, 0.8, 0.2}, ToolRead{}, []time.Duration{h + 2*time.Second, h + 8*time.Second}, 2 * h},
		{"the next turn is drawn from the end of the last",
			func(p *Params) { p.MaxTurns = 2 }, []float64{0.5, 0, 0}, ReadNewest{}, []time.Duration{h, 2*h + 10*time.Second}, 3 * h},
		{"max_turns stops drawing turns",
			nil, nil, ReadNewest{}, []time.Duration{h}, 5 * h},
		{"typing starts when the reactions are in and repeats every typing_secs until the turn's end",
			nil, []float64{0.5, 0, 0}, SendTyping{}, []time.Duration{h, h + 2*time.Second, h + 4*time.Second, h + 6*time.Second, h + 8*time.Second}, 2 * h},
		{"turn frames start with the work and repeat every frame_secs until the turn's end",
			nil, []float64{0.5, 0, 0}, SendFrame{}, []time.Duration{h, h + 3*time.Second, h + 6*time.Second, h + 9*time.Second}, 2 * h},
		{"presence goes out at the session start and every presence interval",
			func(p *Params) { p.PresenceEvery = 30 * time.Second; p.TurnsPerHour = 0 }, nil, SendPresence{},
			[]time.Duration{0, 30 * time.Second, time.Minute}, time.Minute},
		{"observer frames outside turns are Poisson at their hourly rate",
			func(p *Params) { p.FramesPerHour = 60; p.TurnsPerHour = 0 }, nil, SendFrame{},
			[]time.Duration{time.Minute, 2 * time.Minute}, 2 * time.Minute},
		{"polls start with the session and repeat every query interval",
			func(p *Params) { p.PollEvery = 10 * time.Second; p.TurnsPerHour = 0 }, nil, Poll{},
			[]time.Duration{0, 10 * time.Second, 20 * time.Second}, 20 * time.Second},
		{"timed messages are Poisson at events_per_hour",
			func(p *Params) { p.EventsPerHour = 120; p.TurnsPerHour = 0 }, nil, PostMessage{},
			[]time.Duration{30 * time.Second, time.Minute}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := turnParams()
			if tc.p != nil {
				tc.p(&p)
			}
			m := New(p, &fixed{u: tc.u}, &fixed{})
			got := at(run(m, msg, tc.within), tc.like)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%T at %v, want %v", tc.like, got, tc.want)
			}
		})
	}
}

// poller is a started agent that only polls, every 10 s.
func poller() *Model {
	p := turnParams()
	p.PollEvery, p.TurnsPerHour = 10*time.Second, 0
	m := New(p, &fixed{}, &fixed{})
	m.Step(Resume{At: t0})
	return m
}

func TestSequenceRules(t *testing.T) {
	t.Run("one request at a time: nothing is due while one is out", func(t *testing.T) {
		p := turnParams()
		p.PollEvery = time.Second
		m := New(p, &fixed{}, &fixed{})
		m.Step(Resume{At: t0})
		if acts := m.Step(HTTPDue{At: t0}); len(acts) != 1 {
			t.Fatalf("first wake: %v, want one poll", acts)
		}
		if m.NextHTTP() != Never {
			t.Errorf("due %v while the poll is out, want never", m.NextHTTP())
		}
		if acts := m.Step(HTTPDue{At: t0.Add(5 * time.Second)}); acts != nil {
			t.Errorf("a wake while the poll is out asked for %v", acts)
		}
	})
	t.Run("a poll asks since the start of the last successful poll, and a failed one changes nothing", func(t *testing.T) {
		m := poller()
		var since []int64
		for i, ok := range []bool{true, false, true} {
			now := t0.Add(time.Duration(i) * 10 * time.Second)
			since = append(since, m.Step(HTTPDue{At: now})[0].(Poll).Since)
			m.Step(Done{At: now.Add(time.Second), OK: ok})
		}
		if want := []int64{0, t0.Unix(), t0.Unix()}; !reflect.DeepEqual(since, want) {
			t.Errorf("since %v, want %v", since, want)
		}
		if got := m.Step(HTTPDue{At: t0.Add(30 * time.Second)})[0].(Poll).Since; got != t0.Add(20*time.Second).Unix() {
			t.Errorf("since after a success at +20 s: %d", got)
		}
	})
	t.Run("a slow poll does not cause a burst", func(t *testing.T) {
		m := poller()
		m.Step(HTTPDue{At: t0.Add(35 * time.Second)}) // woke late
		m.Step(Done{At: t0.Add(36 * time.Second), OK: true})
		if got := m.NextHTTP().Sub(t0); got != 45*time.Second {
			t.Errorf("next poll at +%v, want +45s (one interval after the late one)", got)
		}
	})
	t.Run("a resumed session redraws an overdue message and turn from now instead of sending them at once", func(t *testing.T) {
		p := turnParams()
		p.EventsPerHour = 60
		m := New(p, &fixed{}, &fixed{})
		m.Step(Resume{At: t0}) // message at +1 min, turn at +1 h
		later := t0.Add(2 * time.Hour)
		m.Step(Resume{At: later})
		if got := m.NextHTTP(); !got.Equal(later.Add(time.Minute)) {
			t.Errorf("next request at %v, want one message interval after the resume", got.Sub(t0))
		}
	})
	t.Run("a turn under way continues after a reconnect where it was", func(t *testing.T) {
		m := New(turnParams(), &fixed{u: []float64{0.5, 0, 0}}, &fixed{})
		a := answers{newest: &Message{ID: "m", PubKey: "author"}}
		m.Step(Resume{At: t0})
		start := t0.Add(time.Hour)
		for _, want := range []Action{ReadNewest{}, ReadChannelMeta{}} {
			act := m.Step(HTTPDue{At: start})[0]
			if reflect.TypeOf(act) != reflect.TypeOf(want) {
				t.Fatalf("%T, want %T", act, want)
			}
			m.Step(a.result(act, start))
		}
		m.Step(Resume{At: start.Add(time.Minute)})
		if act := m.Step(HTTPDue{At: start.Add(time.Minute)})[0]; act != (ReadProject{}) {
			t.Errorf("after the reconnect: %#v, want the project read that comes next", act)
		}
	})
	t.Run("a resumed work phase sends its overdue typing and frame once, not a burst", func(t *testing.T) {
		m := New(turnParams(), &fixed{u: []float64{0.5, 0, 0}}, &fixed{})
		a := answers{}
		m.Step(Resume{At: t0})
		start := t0.Add(time.Hour)
		for !m.Working() {
			act := m.Step(HTTPDue{At: start})[0]
			m.Step(a.result(act, start))
		}
		back := start.Add(7 * time.Second) // three typings and two frames fell due while away
		m.Step(Resume{At: back})
		if got := m.Step(SocketDue{At: back}); !reflect.DeepEqual(got, []Action{SendTyping{}, SendFrame{}}) {
			t.Errorf("on resume: %v, want one typing and one frame", got)
		}
		if got := m.NextSocket(); !got.Equal(back.Add(2 * time.Second)) {
			t.Errorf("next typing at +%v after the resume, want +2s", got.Sub(back))
		}
	})
	t.Run("a result with nothing outstanding changes nothing", func(t *testing.T) {
		m := New(turnParams(), &fixed{}, &fixed{})
		m.Step(Resume{At: t0})
		before := m.NextHTTP()
		if acts := m.Step(NewestRead{At: t0, Msg: &Message{ID: "x"}}); acts != nil || m.NextHTTP() != before || m.turn != nil {
			t.Errorf("a stray result changed the model: %v", acts)
		}
	})
}
