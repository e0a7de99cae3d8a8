package relay

import (
	"time"

	"encoding/json"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay/store"
)

// FuzzIngest: any event JSON is answered with a reason, never a panic
// (signatures off so the fuzzer reaches the kind-specific paths).
func FuzzIngest(f *testing.F) {
	k := nostr.DeriveKeys("fuzz", nostr.RoleHuman, 0)
	ch := "0b6e9c1e-1d2a-4c3b-8a4f-5e6d7c8b9a01"
	seeds := []*nostr.Event{
		mustEv(k, 9007, "", [][]string{{"h", ch}, {"name", "n"}, {"visibility", "private"}}),
		mustEv(k, 9000, "", [][]string{{"h", ch}, {"p", k.PubKey(), "admin"}, {"p"}}),
		mustEv(k, 9, "x", [][]string{{"h", ch}, {"e", "00", "", "reply"}, {"e"}}),
		mustEv(k, 7, "+", [][]string{{"e", "ab"}}),
		mustEv(k, 5, "", [][]string{{"a", "30023:x:y"}}),
		mustEv(k, 24200, "c", [][]string{{"p", "x"}, {"agent"}, {"frame", "control"}}),
		mustEv(k, 9002, "", [][]string{{"h", ch}, {"archived", "false"}, {"visibility", "weird"}}),
		mustEv(k, 30300, "", nil),
	}
	for _, e := range seeds {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"kind":9,"tags":[[],["h"]],"content":"","id":"","pubkey":"","sig":""}`))
	cfg := DefaultConfig()
	cfg.VerifySignatures = false
	cfg.RateLimit = false
	r, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	c := r.newCommunity("fuzz.example", "", false)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := nostr.ParseEvent(data)
		if err != nil {
			return
		}
		for _, ws := range []bool{true, false} {
			res := r.ingest(c, ev, ingestAuth{pubkey: ev.PubKey, ws: ws})
			if !res.accepted && res.message == "" {
				t.Fatalf("refusal without a reason for %s", data)
			}
		}
		filters, err := store.ParseFilters([]byte(`[{"kinds":[9],"#h":["` + ch + `"]}]`))
		if err == nil {
			c.history(filters, ev.PubKey, 10)
		}
	})
}

func mustEv(k *nostr.Keys, kind int, content string, tags [][]string) *nostr.Event {
	if tags == nil {
		tags = [][]string{}
	}
	e, err := k.NewEvent(kind, tags, content, nowish())
	if err != nil {
		panic(err)
	}
	return e
}

func nowish() time.Time { return time.Now() }
