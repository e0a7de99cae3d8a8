package seed

import (
	"context"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// After a private seed, a hot-thread author finds the hot root with the
// NIP-50 search the clients use, and a member finds its channel's roots.
func TestSeededRootsAreFoundBySearch(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "found", privateShape)
	if _, err := runSeed(t, r, sc, nil); err != nil {
		t.Fatal(err)
	}
	search := func(g int, ch scenario.Channel, word string) []nostr.Event {
		ep := sc.Endpoint(ch.Community)
		h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr},
			Keys: sc.Keys(g)})
		if err != nil {
			t.Fatal(err)
		}
		evs, res := h.Query(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
			Tags: map[string][]string{"h": {sc.ChannelID(ch)}}, Limit: 50, Extra: map[string]any{"search": word}}}, relayclient.CallOptions{})
		if res.Outcome != relayclient.OutcomeOK {
			t.Fatal(res.Error)
		}
		return evs
	}
	author := sc.GlobalIndex(scenario.KindHotAuthor, 1)
	if evs := search(author, sc.HotThreadChannel(), scenario.HotRootMarker(sc.RunID)); len(evs) != 1 || evs[0].Content != scenario.HotRootContent(sc.RunID) {
		t.Fatalf("hot author found %d hot roots", len(evs))
	}
	g := sc.GlobalIndex(scenario.KindHuman, 0)
	ch := sc.MemberChannels(g)[0]
	if evs := search(g, ch, scenario.RootMarker(sc.RunID)); len(evs) != sc.Shape.ThreadRootsPerChannel {
		t.Fatalf("member found %d thread roots in %v, want %d", len(evs), ch, sc.Shape.ThreadRootsPerChannel)
	}
}
