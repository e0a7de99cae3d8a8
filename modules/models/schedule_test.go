package models

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/scenario"
)

func fixedRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// drain runs a schedule until horizon and counts each action.
func drain(s *Schedule, horizon time.Duration) ([numActions]int, []Event) {
	var n [numActions]int
	var evs []Event
	for {
		_, at, ok := s.Peek()
		if !ok || at > horizon {
			return n, evs
		}
		ev, _ := s.Next()
		n[ev.Action]++
		evs = append(evs, ev)
	}
}

// within checks a Poisson count against its mean with a 5-sigma band.
func within(t *testing.T, what string, got int, mean float64) {
	t.Helper()
	sd := math.Sqrt(mean)
	if math.Abs(float64(got)-mean) > 5*sd {
		t.Errorf("%s: %d events, want %.0f ± %.0f", what, got, mean, 5*sd)
	}
}

func TestScheduleRatesOverManyDraws(t *testing.T) {
	cfg := ScheduleConfig{
		PresenceInterval: 30 * time.Second,
		TypingPerHour:    60, MessagesPerHour: 20, ReactionsPerHour: 10,
		ThreadReplyFraction: 0.25,
		Weights:             []float64{1, 1, 1},
	}
	const hours = 2000
	n, evs := drain(NewSchedule(cfg, fixedRand(1)), hours*time.Hour)
	// Presence is periodic from offset 0: exactly one per interval plus the first.
	if want := hours*120 + 1; n[ActPresence] != want {
		t.Errorf("presence: %d, want %d", n[ActPresence], want)
	}
	within(t, "typing", n[ActTyping], 60*hours)
	within(t, "messages", n[ActMessage], 20*hours)
	within(t, "reactions", n[ActReaction], 10*hours)
	if n[ActSessionEnd] != 0 {
		t.Errorf("session end with mean 0: %d", n[ActSessionEnd])
	}
	replies, perCh := 0, [3]int{}
	var last time.Duration
	for _, ev := range evs {
		if ev.At < last {
			t.Fatalf("events out of order: %v after %v", ev.At, last)
		}
		last = ev.At
		if ev.Action == ActMessage {
			if ev.Reply {
				replies++
			}
			perCh[ev.Channel]++
		}
		if ev.Action == ActReaction && ev.Channel != -1 {
			t.Fatalf("unweighted reaction picked channel %d, want -1 (latest seen)", ev.Channel)
		}
		if ev.Action == ActPresence && ev.Channel != -1 {
			t.Fatalf("presence has channel %d", ev.Channel)
		}
	}
	msgs := float64(n[ActMessage])
	if frac := float64(replies) / msgs; math.Abs(frac-0.25) > 0.02 {
		t.Errorf("reply fraction %.3f, want 0.25 ± 0.02", frac)
	}
	for i, c := range perCh {
		if share := float64(c) / msgs; math.Abs(share-1.0/3) > 0.02 {
			t.Errorf("channel %d got %.3f of messages, want 1/3", i, share)
		}
	}
}

func TestScheduleIsReproducible(t *testing.T) {
	cfg := ScheduleConfig{PresenceInterval: 10 * time.Second, TypingPerHour: 600, MessagesPerHour: 300,
		ReactionsPerHour: 100, MeanSession: 20 * time.Minute, ThreadReplyFraction: 0.3, Weights: []float64{0.5, 0.25, 0.25}}
	a1, b1 := SeedFor("run-a", 7)
	a2, b2 := SeedFor("run-a", 7)
	if a1 != a2 || b1 != b2 {
		t.Fatal("SeedFor is not a function of its inputs")
	}
	if x, _ := SeedFor("run-a", 8); x == a1 {
		t.Fatal("neighbouring clients share a seed")
	}
	if x, _ := SeedFor("run-b", 7); x == a1 {
		t.Fatal("two runs share a seed")
	}
	_, e1 := drain(NewSchedule(cfg, NewRand("run-a", 7)), 24*time.Hour)
	_, e2 := drain(NewSchedule(cfg, NewRand("run-a", 7)), 24*time.Hour)
	_, e3 := drain(NewSchedule(cfg, NewRand("run-a", 8)), 24*time.Hour)
	if len(e1) == 0 || len(e1) != len(e2) {
		t.Fatalf("lengths %d and %d", len(e1), len(e2))
	}
	for i := range e1 {
		if e1[i] != e2[i] {
			t.Fatalf("event %d differs: %+v vs %+v", i, e1[i], e2[i])
		}
	}
	same := len(e1) == len(e3)
	for i := 0; same && i < len(e1); i++ {
		same = e1[i] == e3[i]
	}
	if same {
		t.Fatal("another client drew the identical schedule")
	}
}

func TestScheduleSessionEndIsLastAndExponential(t *testing.T) {
	cfg := ScheduleConfig{PresenceInterval: time.Second, MessagesPerHour: 3600, Weights: []float64{1}, MeanSession: time.Minute}
	rng := fixedRand(3)
	const sessions = 4000
	var sum time.Duration
	for i := 0; i < sessions; i++ {
		s := NewSchedule(cfg, rng)
		n, evs := drain(s, 1000*time.Hour)
		if n[ActSessionEnd] != 1 || evs[len(evs)-1].Action != ActSessionEnd {
			t.Fatalf("session %d: %d ends, last %v", i, n[ActSessionEnd], evs[len(evs)-1].Action)
		}
		if !s.Done() {
			t.Fatal("schedule continues after the session end")
		}
		sum += evs[len(evs)-1].At
	}
	mean := sum.Seconds() / sessions
	// Standard error of the mean of an exponential is mean/sqrt(n) ≈ 0.95 s.
	if math.Abs(mean-60) > 5 {
		t.Errorf("mean session %.1f s, want 60 ± 5", mean)
	}
}

func TestScheduleWideActivityShare(t *testing.T) {
	sc := scenario.Defaults()
	sc.RunID = "wide"
	sc.Ramp = []scenario.Step{{Users: 1, HoldSecs: 10}}
	sc.Shape.ChannelsPerCommunity = 6
	sc.Shape.WideChannels = 3
	sc.Population.Humans = 10
	sc.Population.Agents = 0
	sc.Population.WideMemberFraction = 1
	share := 0.8
	sc.Population.WideActivityShare = &share
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	g := sc.GlobalIndex(scenario.KindHuman, 0)
	cfg := HumanSchedule(&sc, g)
	if !cfg.WeightReactions {
		t.Fatal("a wide member with wide_activity_share set must weight its reactions")
	}
	chans := sc.MemberChannels(g)
	n, evs := drain(NewSchedule(cfg, fixedRand(5)), 3000*time.Hour)
	wide := [numActions]int{}
	for _, ev := range evs {
		if ev.Channel >= 0 && sc.IsWide(chans[ev.Channel]) {
			wide[ev.Action]++
		}
	}
	for _, a := range []Action{ActTyping, ActMessage, ActReaction} {
		if got := float64(wide[a]) / float64(n[a]); math.Abs(got-share) > 0.02 {
			t.Errorf("%v: %.3f into wide channels, want %.2f", a, got, share)
		}
	}

	// Unset share: reactions follow the latest message seen, channels equal.
	sc.Population.WideActivityShare = nil
	cfg = HumanSchedule(&sc, g)
	if cfg.WeightReactions {
		t.Fatal("unset share must not weight reactions")
	}
	for i, w := range cfg.Weights {
		if w != cfg.Weights[0] {
			t.Fatalf("unset share: weight %d is %g, want equal weights", i, w)
		}
	}
}

func TestScheduleOffStreams(t *testing.T) {
	// No channels: no typing or messages; reactions still follow what was seen.
	s := NewSchedule(ScheduleConfig{PresenceInterval: time.Second, TypingPerHour: 100, MessagesPerHour: 100, ReactionsPerHour: 100}, fixedRand(9))
	n, _ := drain(s, 10*time.Hour)
	if n[ActTyping] != 0 || n[ActMessage] != 0 || n[ActReaction] == 0 {
		t.Errorf("counts %v", n)
	}
	empty := NewSchedule(ScheduleConfig{}, fixedRand(9))
	if _, ok := empty.Next(); ok || !empty.Done() {
		t.Error("an empty config must schedule nothing")
	}
}

func TestRunScheduleStopsOnContext(t *testing.T) {
	s := NewSchedule(ScheduleConfig{PresenceInterval: time.Hour}, fixedRand(1))
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- RunSchedule(ctx, nil, s, time.Now(), func(Event) bool { calls++; return true })
	}()
	time.Sleep(20 * time.Millisecond) // into its wait (no event due for an hour: nothing to observe), then cancelled
	cancel()
	select {
	case err := <-done:
		if err == nil || calls != 1 {
			t.Fatalf("err %v calls %d, want context error after the first (immediate) heartbeat", err, calls)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("RunSchedule did not return after cancel")
	}
}

func TestRecentIDsSkipsRepeatsOnly(t *testing.T) {
	var r recentIDs
	if !r.add("a") || !r.add("b") || r.add("a") {
		t.Fatal("a repeat within the window must be refused, new ids accepted")
	}
	for i := 0; i < 8; i++ {
		r.add(string(rune('c' + i)))
	}
	if !r.add("a") {
		t.Fatal("an id older than the window is new again")
	}
}
