package desktop

import (
	"encoding/json"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Replies come from the network: no page, however malformed, may panic.
func FuzzWindowPage(f *testing.F) {
	f.Add(`{"has_more":true,"next_cursor":{"created_at":5,"id":"ab"}}`, "c00:head", "c00", int64(5))
	f.Add(`{"has_more":false,"next_cursor":null}`, "c00:head", "c00", int64(0))
	f.Add(`{"has_more":true,"next_cursor":null}`, "x", "", int64(-1))
	f.Add(`[]`, "c00:head", "c00", int64(1))
	f.Fuzz(func(t *testing.T, content, d, h string, at int64) {
		p := &WindowPager{Channel: "c00"}
		evs := []nostr.Event{{Kind: 9, CreatedAt: at}, {Kind: 39006, Content: content, Tags: [][]string{{"d", d}, {"h", h}}}}
		for i := 0; i < 3 && !p.Done(); i++ {
			more, err := p.Advance(evs)
			if err != nil && more {
				t.Fatal("more with an error")
			}
			_ = p.Filter()
		}
		PickRoot(evs)
		scenario.MarkedRoots(evs, content)
	})
}

func FuzzReadStateSnapshot(f *testing.F) {
	f.Add([]byte(`{"read_state_snapshot":1,"pubkey":"vvvv","events":[{"tags":[["d","a"]]}]}`))
	f.Add([]byte(`{"read_state_snapshot":1,"pubkey":"vvvv","events":[1]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := CheckReadStateSnapshot("vvvv", "")(body)
		if err == nil && !json.Valid(body) {
			t.Fatalf("invalid JSON accepted: %q", body)
		}
	})
}
