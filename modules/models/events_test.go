package models

import (
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// lastSink keeps the last Result (storing a value allocates nothing).
type lastSink struct {
	n    int
	last relayclient.Result
}

func (s *lastSink) Record(r relayclient.Result) { s.n++; s.last = r }

// view signs an event and reads it in place, as the reader goroutine does.
func view(t testing.TB, k *nostr.Keys, kind int, tags [][]string) (*nostr.EventView, []byte) {
	t.Helper()
	e, err := k.NewEvent(kind, tags, "load message 1-2", time.Unix(1732900000, 0))
	if err != nil {
		t.Fatal(err)
	}
	b := e.AppendJSON(nil)
	var v nostr.EventView
	s := wire.New(b)
	if err := nostr.ScanEventView(&s, &v); err != nil {
		t.Fatal(err)
	}
	return &v, b
}

// RecordDeliver reads the send time from the event in place: deliver =
// arrival − send time, nothing for an untimed or malformed tag, and no
// allocation on the way.
func TestRecordDeliverReadsTheSendTimeInPlace(t *testing.T) {
	k := nostr.DeriveKeys("deliver", nostr.RoleHuman, 0)
	sent := time.UnixMicro(1732900000123456)
	at := sent.Add(3 * time.Millisecond)
	v, _ := view(t, k, nostr.KindStreamMessage, [][]string{{"h", "c"}, {scenario.SentTag}, scenario.SentAtTag(sent)})
	var sink lastSink
	RecordDeliver(&sink, v, at)
	if sink.n != 1 || sink.last.Op != OpDeliver || !sink.last.Start.Equal(sent) || sink.last.Duration != 3*time.Millisecond {
		t.Fatalf("recorded %d: %+v", sink.n, sink.last)
	}
	if n := testing.AllocsPerRun(100, func() { RecordDeliver(&sink, v, at) }); n != 0 {
		t.Fatalf("RecordDeliver allocates %v times per event", n)
	}
	for _, tags := range [][][]string{{{"h", "c"}}, {{scenario.SentTag, "soon"}}, {{scenario.SentTag, "-5"}}} {
		sink = lastSink{}
		v, _ := view(t, k, nostr.KindStreamMessage, tags)
		RecordDeliver(&sink, v, at)
		if sink.n != 0 {
			t.Fatalf("tags %v: recorded %+v", tags, sink.last)
		}
	}
}

// Observe keeps its own copy of the message's id and author: the frame
// buffer the view points into is reused for the next frame. Mutant "keep
// a slice of the buffer" reacts to garbage.
func TestObserveCopiesTheMessageOutOfTheFrame(t *testing.T) {
	sc := testScenario(t, "ws://127.0.0.1:1", "http://127.0.0.1:1", nil)
	act := NewActivity(sc, 0, sc.Keys(0), NewRand(sc.RunID, 0), nil)
	author := sc.Keys(1)
	v, buf := view(t, author, nostr.KindStreamMessage, [][]string{{"h", act.ChannelIDs()[0]}})
	id := v.IDString()
	if n := testing.AllocsPerRun(100, func() { act.Observe(v) }); n != 0 {
		t.Fatalf("Observe allocates %v times per event", n)
	}
	clear(buf)
	*v = nostr.EventView{}
	got, emoji, ok := act.reactionTarget(0)
	if !ok || emoji == "" || string(got.id[:]) != id || string(got.author[:]) != author.PubKey() {
		t.Fatalf("reaction target %q by %q (%v), want %s by %s", got.id, got.author, ok, id, author.PubKey())
	}
	// A message of another channel, or another kind, is not a target.
	other, _ := view(t, author, nostr.KindStreamMessage, [][]string{{"h", "not-a-channel"}})
	typing, _ := view(t, author, nostr.KindTyping, [][]string{{"h", act.ChannelIDs()[0]}})
	act.Observe(other)
	act.Observe(typing)
	if got, _, _ := act.reactionTarget(-1); string(got.id[:]) != id {
		t.Fatalf("latest message %q, want %s", got.id, id)
	}
}

// ObserveIn notes a message under the subscription's channel without a
// lookup, allocating nothing; an event whose h tag names another of the
// member's channels is noted under that one, and one of a channel the member
// is not in is not noted at all (the relay's mistake must not become a
// reaction target). Mutant "trust the index": the second case lands in
// channel 0.
func TestObserveInChecksTheChannel(t *testing.T) {
	sc := testScenario(t, "ws://127.0.0.1:1", "http://127.0.0.1:1", func(sc *scenario.Scenario) {
		sc.Shape.ChannelsPerCommunity, sc.Population.ChannelsPerMember = 3, 2
	})
	act := NewActivity(sc, 0, sc.Keys(0), NewRand(sc.RunID, 0), nil)
	ids := act.ChannelIDs()
	if len(ids) < 2 {
		t.Fatalf("member of %d channels, the test needs 2", len(ids))
	}
	author := sc.Keys(1)
	v0, _ := view(t, author, nostr.KindStreamMessage, [][]string{{"h", ids[0]}})
	if n := testing.AllocsPerRun(100, func() { act.ObserveIn(0, v0) }); n != 0 {
		t.Fatalf("ObserveIn allocates %v times per event", n)
	}
	if got, _, ok := act.reactionTarget(0); !ok || string(got.id[:]) != v0.IDString() {
		t.Fatalf("channel 0's target %q (%v), want %s", got.id, ok, v0.IDString())
	}
	// Delivered on channel 0's subscription, but of channel 1.
	v1, _ := view(t, author, nostr.KindStreamMessage, [][]string{{"h", ids[1]}})
	act.ObserveIn(0, v1)
	if got, _, _ := act.reactionTarget(0); string(got.id[:]) != v0.IDString() {
		t.Fatalf("channel 0's target %q after a channel-1 event, want %s", got.id, v0.IDString())
	}
	if got, _, ok := act.reactionTarget(1); !ok || string(got.id[:]) != v1.IDString() {
		t.Fatalf("channel 1's target %q (%v), want %s", got.id, ok, v1.IDString())
	}
	before, _, _ := act.reactionTarget(-1)
	for _, i := range []int{0, -1, len(ids)} {
		other, _ := view(t, author, nostr.KindStreamMessage, [][]string{{"h", "not-a-channel"}})
		act.ObserveIn(i, other)
	}
	typing, _ := view(t, author, nostr.KindTyping, [][]string{{"h", ids[0]}})
	act.ObserveIn(0, typing)
	if got, _, _ := act.reactionTarget(-1); got.id != before.id {
		t.Fatalf("latest %q after a foreign channel's or a typing event, want %q", got.id, before.id)
	}
}
