package relay

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// The fan-out's summary of a live filter, and a channel list's entry of a
// subscription, decide exactly as the full match:
// every filter shape the summary short-cuts (kinds, one-letter tags, a
// plain channel REQ) and some it must not (several #h values, authors,
// since, multi-letter tags, empty lists), against events with and without
// those tags, in and out of a channel.
func TestLiveFilterMatchesAsFilter(t *testing.T) {
	const ch1, ch2 = "c1111111-1111-4111-8111-111111111111", "c2222222-2222-4222-8222-222222222222"
	pk := "aa" + fmt.Sprintf("%062d", 0)
	filters := []string{
		`{}`,
		`{"kinds":[9]}`,
		`{"kinds":[]}`,
		`{"kinds":[9,20002,7,5,1]}`,
		`{"kinds":[9],"#h":["` + ch1 + `"]}`,
		`{"kinds":[9],"#h":["` + ch1 + `"],"limit":0}`,
		`{"#h":["` + ch1 + `","` + ch2 + `"]}`,
		`{"kinds":[9],"#h":["` + ch1 + `"],"#p":["` + pk + `"]}`,
		`{"kinds":[9],"#h":["` + ch1 + `"],"authors":["` + pk + `"]}`,
		`{"kinds":[9],"#h":["` + ch1 + `"],"since":100}`,
		`{"#h":[]}`,
		`{"#e":["x"],"#buzz-channel":["` + ch1 + `"]}`,
		`{"#P":["` + pk + `"]}`,
	}
	parsed := make([]store.Filter, len(filters))
	for i, raw := range filters {
		f, err := store.ParseFilter([]byte(raw), 0)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		parsed[i] = f
	}
	live := liveFilters(parsed)
	// Subscriptions of 1, 2 (summaries inline) and 3 filters (summaries
	// behind the subscription), in a channel's list.
	l := subList{name: ch1}
	for i := range parsed {
		for n := 1; n <= 3 && i+n <= len(parsed); n++ {
			fs := parsed[i : i+n]
			s := &subscription{filters: fs, live: liveFilters(fs)}
			l.add(s)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for n := 0; n < 5000; n++ {
		ev := &nostr.Event{Kind: []int{9, 20002, 7, 5, 1}[rng.IntN(5)], PubKey: pick(pk, "bb"), CreatedAt: int64(rng.IntN(200))}
		for j := rng.IntN(4); j > 0; j-- {
			name := pick("h", "p", "e", "P", "buzz-channel", "x")
			if rng.IntN(8) == 0 {
				ev.Tags = append(ev.Tags, []string{name}) // no value: matches nothing
				continue
			}
			ev.Tags = append(ev.Tags, []string{name, pick(ch1, ch2, pk, "x")})
		}
		e := &entry{Event: ev, Channel: pick("", ch1, ch2)}
		tags := eventTagBits(ev, e.Channel)
		for _, en := range l.ents {
			want := false
			for i := range en.s.filters {
				want = want || en.s.filters[i].MatchesInChannel(ev, e.Channel)
			}
			if got := en.matches(e, tags); got != want {
				t.Fatalf("subscription of %d filters (%d inline), event kind %d tags %v in %q: %v, want %v", len(en.s.filters), en.n, ev.Kind, ev.Tags, e.Channel, got, want)
			}
		}
		for i := range parsed {
			want := parsed[i].MatchesInChannel(ev, e.Channel)
			if got := live[i].matches(&parsed[i], e, tags); got != want {
				t.Fatalf("filter %s, event kind %d tags %v in %q: summary %v, full match %v", filters[i], ev.Kind, ev.Tags, e.Channel, got, want)
			}
		}
	}
}
