package store

import (
	"fmt"
	"sync"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Test events carry made-up ids: the store never verifies them, and chosen
// ids let tests pin same-second ordering.
func hexID(n int) string { return fmt.Sprintf("%064x", n) }

func pk(n int) string { return fmt.Sprintf("%062x%02x", 0xabc, n) }

const (
	chA = "0b6e1c52-6f3e-4f7e-9a55-2f0c7d1d9a01"
	chB = "7f0c2d11-1b2c-4d3e-8f90-a1b2c3d4e5f6"
)

func ev(id, author, at, kind int, tags ...[]string) *nostr.Event {
	if tags == nil {
		tags = [][]string{}
	}
	return &nostr.Event{ID: hexID(id), PubKey: pk(author), CreatedAt: int64(at), Kind: kind, Tags: tags, Content: fmt.Sprint("m", id)}
}

func h(ch string) []string { return []string{"h", ch} }

func replyTo(parent int) []string { return []string{"e", hexID(parent), "", "reply"} }

func rootTag(root int) []string { return []string{"e", hexID(root), "", "root"} }

func mustAdd(t testing.TB, s *Store, e *nostr.Event) {
	t.Helper()
	if r := s.Add(e); r.Status != Stored {
		t.Fatalf("Add(%s…): %v, want stored", e.ID[56:], r.Status)
	}
}

func idsOf(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func hexIDs(ns ...int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = hexID(n)
	}
	return out
}

func filter(t testing.TB, js string) Filter {
	t.Helper()
	f, err := ParseFilter([]byte(js), 0)
	if err != nil {
		t.Fatalf("ParseFilter(%s): %v", js, err)
	}
	return f
}

var sharedTestKeys = sync.OnceValue(func() *nostr.Keys { return nostr.DeriveKeys("store-test", nostr.RoleOperator, 0) })

func testKeys(t testing.TB) *nostr.Keys { return sharedTestKeys() }

func replyToID(id string) []string { return []string{"e", id, "", "reply"} }
