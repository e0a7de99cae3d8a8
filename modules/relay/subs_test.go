package relay

import (
	"math/rand/v2"
	"slices"
	"testing"
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
