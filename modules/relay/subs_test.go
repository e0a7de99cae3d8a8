package relay

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// subList's swap-remove keeps positions consistent: after any sequence of
// adds and removes it holds exactly the subscriptions added and not removed,
// once each.
func TestSubListAddRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]*subscription, 40)
	for i := range pool {
		pool[i] = &subscription{id: string(rune('a' + i))}
	}
	var l subList
	want := map[*subscription]bool{}
	for step := 0; step < 2000; step++ {
		s := pool[rng.IntN(len(pool))]
		if rng.IntN(2) == 0 {
			l.add(s)
			want[s] = true
		} else {
			l.remove(s)
			delete(want, s)
		}
		if len(l.ents) != len(want) || len(l.at) != len(want) {
			t.Fatalf("step %d: %d subs, %d positions, want %d", step, len(l.ents), len(l.at), len(want))
		}
		for i, en := range l.ents {
			if s := en.s; !want[s] || l.at[s] != i {
				t.Fatalf("step %d: subs[%d]=%s present=%v at=%d", step, i, s.id, want[s], l.at[s])
			}
		}
	}
	for s := range want {
		if !slices.ContainsFunc(l.ents, func(en subEntry) bool { return en.s == s }) {
			t.Fatalf("%s missing", s.id)
		}
	}
}

// Global subscriptions naming authors are found through the author index:
// an author's event reaches the subscriptions naming that author and the
// global ones without authors, never one naming only others, and a closed
// subscription no longer gets it (docs/buzz-protocol.md §1.6: live events
// go to every subscription whose filters match).
func TestLiveEventsByAuthor(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob, carol, dave, eve := key("alice"), key("bob"), key("carol"), key("dave"), key("eve")
	a, c, e := authed(t, r, alice), authed(t, r, carol), authed(t, r, eve)
	b := authed(t, r, bob)
	a.req("p", map[string]any{"kinds": []int{nostr.KindPresence}, "authors": []string{dave.PubKey(), bob.PubKey()}, "limit": 0})
	// Two filters, both naming authors, one of them bob: still indexed, still reached.
	a.req("p2", map[string]any{"kinds": []int{nostr.KindPresence}, "authors": []string{dave.PubKey()}, "limit": 0},
		map[string]any{"kinds": []int{nostr.KindPresence, 9}, "authors": []string{bob.PubKey()}, "limit": 0})
	c.req("p", map[string]any{"kinds": []int{nostr.KindPresence}, "authors": []string{dave.PubKey()}, "limit": 0})
	e.req("p", map[string]any{"kinds": []int{nostr.KindPresence}, "limit": 0})
	online := ev(t, bob, nostr.KindPresence, "online")
	b.mustPublish(online)
	subs := map[string]bool{}
	for range 2 {
		f := a.expect("EVENT")
		subs[str(f[1])] = true
	}
	if !subs["p"] || !subs["p2"] {
		t.Fatalf("alice's subscriptions that got bob's presence: %v", subs)
	}
	if f := e.expect("EVENT"); str(f[1]) != "p" {
		t.Fatalf("eve: %s", f[1])
	}
	a.send("CLOSE", "p")
	a.expect("CLOSED")
	away := ev(t, bob, nostr.KindPresence, "away")
	b.mustPublish(away)
	if f := a.expect("EVENT"); str(f[1]) != "p2" {
		t.Fatalf("alice after closing p: %s", f[1])
	}
	e.expect("EVENT")
	if f, err := c.tryRead(200 * time.Millisecond); err == nil {
		t.Fatalf("carol (authors: dave) got %s", f[0])
	}
	if f, err := a.tryRead(200 * time.Millisecond); err == nil {
		t.Fatalf("alice got a second frame: %s %s", f[0], f[1])
	}
}
