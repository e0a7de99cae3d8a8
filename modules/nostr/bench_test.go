package nostr

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

// Benchmarks for the generator's CPU floor (make bench). Targets on the
// reference 2-vCPU machine (nostr-ecosystem.md §2): sign ≤ 130 µs,
// serialise+hash ≤ 1.5 µs with 1 allocation, NIP-44 encrypt with a cached
// key ~7 µs.

// benchEvent is the reference shape: kind 9, one h tag, 200-byte content.
func benchEvent() *Event {
	return &Event{
		CreatedAt: 1_800_000_000,
		Kind:      KindStreamMessage,
		Tags:      [][]string{{"h", "loadtest-group-0001"}},
		Content:   strings.Repeat("buzz load test message ", 9)[:200],
	}
}

func BenchmarkSignEvent(b *testing.B) {
	k := DeriveKeys("bench", RoleHuman, 0)
	e := benchEvent()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e.CreatedAt = 1_800_000_000 + int64(i)
		if err := k.Sign(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSerializeHash(b *testing.B) {
	k := DeriveKeys("bench", RoleHuman, 0)
	e := benchEvent()
	e.PubKey = k.PubKey()
	b.ReportAllocs()
	var sink [32]byte
	for b.Loop() {
		sink = sha256.Sum256(e.Serialize())
	}
	_ = sink
}

func BenchmarkHash(b *testing.B) {
	k := DeriveKeys("bench", RoleHuman, 0)
	e := benchEvent()
	e.PubKey = k.PubKey()
	b.ReportAllocs()
	var sink [32]byte
	for b.Loop() {
		sink = e.Hash()
	}
	_ = sink
}

func BenchmarkVerify(b *testing.B) {
	k := DeriveKeys("bench", RoleHuman, 0)
	e := benchEvent()
	if err := k.Sign(e); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHTTPAuthHeader(b *testing.B) {
	k := DeriveKeys("bench", RoleHuman, 0)
	body := []byte(`[{"kinds":[9],"#h":["loadtest-group-0001"],"limit":50}]`)
	at := time.Unix(1_800_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := HTTPAuth(k, "POST", "http://c1.localhost:7777/query", body, at); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNIP44EncryptCached(b *testing.B) {
	me, peer := DeriveKeys("bench", RoleAgent, 0), DeriveKeys("bench", RoleAgentOwner, 0)
	cache := NewConversationKeys(me, 16)
	pt := strings.Repeat("x", 200)
	if _, err := cache.Encrypt(peer.PubKey(), pt); err != nil { // warm the cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cache.Encrypt(peer.PubKey(), pt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNIP44Decrypt(b *testing.B) {
	me, peer := DeriveKeys("bench", RoleAgent, 0), DeriveKeys("bench", RoleAgentOwner, 0)
	ck, _ := me.ConversationKey(peer.PubKey())
	p, _ := NIP44Encrypt(strings.Repeat("x", 200), ck)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NIP44Decrypt(p, ck); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNIP44ConversationKey(b *testing.B) {
	me, peer := DeriveKeys("bench", RoleAgent, 0), DeriveKeys("bench", RoleAgentOwner, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := me.ConversationKey(peer.PubKey()); err != nil {
			b.Fatal(err)
		}
	}
}

// The allocation budget is a property, not a timing, so a test guards it:
// Serialize allocates exactly its one buffer, Hash nothing (stack buffer).
func TestSerializeAndHashAllocations(t *testing.T) {
	e := benchEvent()
	e.PubKey = DeriveKeys("bench", RoleHuman, 0).PubKey()
	if n := testing.AllocsPerRun(100, func() { _ = e.Serialize() }); n != 1 {
		t.Errorf("Serialize: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = e.Hash() }); n != 0 {
		t.Errorf("Hash: %v allocations, want 0", n)
	}
	// Typical chat content with a few escapes stays within the size hint.
	e.Content = strings.Repeat("line \"quoted\"\n", 20)
	if n := testing.AllocsPerRun(100, func() { _ = e.Serialize() }); n != 1 {
		t.Errorf("Serialize with some escapes: %v allocations, want 1", n)
	}
}
