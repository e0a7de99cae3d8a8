package models

import (
	"context"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Issue 10: a rerun against the same relay re-sends the same reactions to
// the same message (identities and reaction order derive from run_id); the
// relay's "duplicate: reaction already exists" is the state asked for, not
// a publish error.
func TestRerunRepeatsReactionsWithoutErrors(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans = 1
		sc.Human = scenario.Human{HistoryLimit: 5, PresenceIntervalSecs: 3600, ReactionsPerHour: 36000}
	})
	sd := newSeeder(t, sc, sc.OwnerKeys(0))
	sd.channels()
	ch := sc.Channels()[0]
	target := sd.publish(sc.OwnerKeys(0), nostr.KindStreamMessage, [][]string{{"h", sc.ChannelID(ch)}}, "react to me")
	g := sc.GlobalIndex(scenario.KindHuman, 0)
	q, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: sc.OwnerKeys(0)})
	if err != nil {
		t.Fatal(err)
	}
	reactions := func() int {
		evs, _ := q.Query(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindReaction}, Tags: map[string][]string{"e": {target.ID}}}}, relayclient.CallOptions{})
		return len(evs)
	}
	first := &collect{}
	runUntil(t, sc, map[int]relayclient.Sink{g: first}, "three reactions", func() bool { return reactions() >= 3 })
	stored := reactions()
	second := &collect{}
	runUntil(t, sc, map[int]relayclient.Sink{g: second}, "the rerun's first reactions", func() bool { return second.ok(relayclient.OpPublish) >= 3 })
	second.noErrors(t)
	// Repeated reactions add nothing to the store: it holds at most the
	// longer of the two runs' reactions (the rerun's publishes bound its
	// reactions from above). Fresh ones would add to the first run's.
	if after, bound := reactions(), max(stored, second.ok(relayclient.OpPublish)); after > bound {
		t.Fatalf("the rerun stored new reactions: %d after it, the first run stored %d and the rerun published %d events", after, stored, second.ok(relayclient.OpPublish))
	}
}
