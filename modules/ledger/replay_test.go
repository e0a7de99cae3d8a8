package ledger

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
)

// fixture drives the same calls, in time order, into one ledger (a single
// process) and into three ledgers with journals (three runners, each with
// its own clients), ticking like Replay does.
type fixture struct {
	t      *testing.T
	one    *Ledger
	parts  [3]*Ledger
	bufs   [3]*bytes.Buffer
	tick   int64
	subs   map[string][4]*Sub // by key: [one, part]
	runner map[string]int
}

func newFixture(t *testing.T, cfg Config) *fixture {
	f := &fixture{t: t, one: New(cfg), subs: map[string][4]*Sub{}, runner: map[string]int{}}
	for i := range f.parts {
		f.bufs[i] = &bytes.Buffer{}
		c := cfg
		c.Journal = f.bufs[i]
		f.parts[i] = New(c)
	}
	return f
}

// at advances the single ledger's ticks to t (Replay ticks each second
// from its first record).
func (f *fixture) at(t time.Time) time.Time {
	if f.tick == 0 {
		f.tick = t.UnixNano() + int64(time.Second)
	}
	for ; f.tick <= t.UnixNano(); f.tick += int64(time.Second) {
		f.one.Tick(time.Unix(0, f.tick))
	}
	return t
}

func (f *fixture) open(client int, community, ch string, t time.Time) string {
	key := strconv.Itoa(client) + "/" + community + "/" + ch
	f.at(t)
	fs := []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {ch}}, LimitZero: true}}
	a := f.one.Open(pk(client), community, key, fs).(*Sub)
	b := f.parts[client%3].Open(pk(client), community, key, fs).(*Sub)
	a.Live(t)
	b.Live(t)
	f.subs[key] = [4]*Sub{a, b}
	f.runner[key] = client % 3
	return key
}

func TestReplayOfThreeRunnersEqualsOneProcess(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	f := newFixture(t, Config{Patience: 2 * time.Second, Due: 500 * time.Millisecond})
	comms := []string{"c0", "c1"}
	chans := []string{"A", "B", "C"}
	var keys []string
	now := at(0)
	for c := range 30 {
		for _, ch := range []string{chans[c%3], chans[(c+1)%3]} {
			keys = append(keys, f.open(c, comms[c%2], ch, now))
			now = now.Add(time.Millisecond)
		}
	}
	type pub struct {
		e         *nostr.Event
		community string
		acked     time.Time
	}
	var pubs []pub
	for i := range 200 {
		now = now.Add(time.Duration(20+rng.IntN(40)) * time.Millisecond)
		author := rng.IntN(30)
		comm, ch := comms[author%2], chans[rng.IntN(3)]
		e := msg(t, author, ch, i)
		f.at(now)
		f.one.Sent(e, comm, "ws", now)
		f.parts[author%3].Sent(e, comm, "ws", now)
		if i%20 == 19 { // a subscription ends before the OK (the relay's doing, or the client's)
			k := keys[rng.IntN(len(keys))]
			by := rng.IntN(2) == 0
			f.subs[k][0].Ended(now, by)
			f.subs[k][1].Ended(now, by)
		}
		// Deliveries, some before the OK (Buzz fans out first), some lost,
		// some twice, one leak across communities.
		for _, k := range keys {
			s := f.subs[k]
			if s[0].community != comm || s[0].channels[0] != ch || s[0].ended {
				continue
			}
			if rng.IntN(40) == 0 {
				continue // lost live
			}
			times := 1 + boolInt(rng.IntN(60) == 0)
			for range times {
				dt := now.Add(time.Duration(rng.IntN(5)) * time.Millisecond)
				s[0].Delivered(view(t, e), dt)
				f.subs[k][1].Delivered(view(t, e), dt)
			}
		}
		if i == 50 {
			k := keys[1] // a subscriber of another community
			if f.subs[k][0].community != comm {
				f.subs[k][0].Delivered(view(t, e), now)
				f.subs[k][1].Delivered(view(t, e), now)
			}
		}
		ack := now.Add(2 * time.Millisecond)
		accepted := rng.IntN(50) != 0
		f.one.Settled(e.ID, accepted, ack)
		f.parts[author%3].Settled(e.ID, accepted, ack)
		pubs = append(pubs, pub{e, comm, ack})
		if i%25 == 24 { // a reader reads back an older event (a recovery, maybe)
			p := pubs[rng.IntN(len(pubs))]
			c := rng.IntN(30)
			f.one.SeenID(pk(c), p.e.ID, now)
			f.parts[c%3].SeenID(pk(c), p.e.ID, now)
		}
	}
	end := now.Add(10 * time.Second)
	f.at(end)
	f.one.Finish(end)
	want := f.one.Report()
	var rs []io.Reader
	for i, p := range f.parts {
		p.Finish(end)
		if err := p.JournalError(); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, bytes.NewReader(f.bufs[i].Bytes()))
	}
	got, err := Replay(Config{Patience: 2 * time.Second, Due: 500 * time.Millisecond}, nil, []string{"r0", "r1", "r2"}, rs)
	if err != nil {
		t.Fatal(err)
	}
	if want.Lost == 0 || want.Duplicates == 0 || want.Leaks == 0 || want.Expected < 1000 || want.Unjudged == 0 {
		t.Fatalf("the fixture does not exercise the ledger: %+v", want.LedgerCounts)
	}
	// Each runner alone sees only its own publishers' events with its own
	// subscribers: fewer pairs than the whole.
	var partial int64
	for _, p := range f.parts {
		partial += p.Report().Expected
	}
	if partial >= want.Expected {
		t.Fatalf("the runners' own ledgers hold %d pairs, the whole %d: nothing crosses runners", partial, want.Expected)
	}
	for i := range want.Missed {
		if i >= len(got.Missed) || want.Missed[i] != got.Missed[i] {
			w, g := want.Missed[i], report.LedgerMiss{}
			if i < len(got.Missed) {
				g = got.Missed[i]
			}
			t.Logf("missed[%d]: one %+v three %+v", i, w, g)
			break
		}
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Fatalf("replayed journals differ from the single process:\n one: %.600s\n three: %.600s", a, b)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestReplayRefusesWhatIsNotAJournal(t *testing.T) {
	if _, err := Replay(Config{}, nil, []string{"x.ledger"}, []io.Reader{bytes.NewReader([]byte("{}"))}); err == nil {
		t.Fatal("a JSON file replayed")
	}
	var buf bytes.Buffer
	l := New(Config{Journal: &buf})
	s := l.Open(pk(1), "", "s", []relayclient.Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {"A"}}}})
	s.Live(at(1))
	l.Finish(at(2))
	cut := buf.Bytes()[:buf.Len()-3]
	if _, err := Replay(Config{}, nil, []string{"cut.ledger"}, []io.Reader{bytes.NewReader(cut)}); err == nil {
		t.Fatal("a truncated journal replayed without an error")
	}
}
