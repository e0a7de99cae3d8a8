package nostr

import (
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
	gonip42 "github.com/nbd-wtf/go-nostr/nip42"
	gonip44 "github.com/nbd-wtf/go-nostr/nip44"
)

// go-nostr v0.38.2 is the second, in-process oracle (test files only).

func toGoNostr(e *Event) *gonostr.Event {
	g := &gonostr.Event{ID: e.ID, PubKey: e.PubKey, CreatedAt: gonostr.Timestamp(e.CreatedAt), Kind: e.Kind, Content: e.Content, Sig: e.Sig}
	for _, t := range e.Tags {
		g.Tags = append(g.Tags, gonostr.Tag(t))
	}
	return g
}

func TestNIP44AgainstGoNostr(t *testing.T) {
	a, b := DeriveKeys("gn44", RoleHuman, 1), DeriveKeys("gn44", RoleAgent, 2)
	ours, err := a.ConversationKey(b.PubKey())
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := gonip44.GenerateConversationKey(b.PubKey(), a.SecretHex())
	if err != nil {
		t.Fatal(err)
	}
	if ours != theirs {
		t.Fatalf("conversation key %x, go-nostr %x", ours, theirs)
	}
	for i, pt := range []string{"x", "hello 🐝", strings.Repeat("q", 33), strings.Repeat("é", 1000), strings.Repeat("z", NIP44MaxPlaintext)} {
		nonce := [32]byte{byte(i), 7, 7}
		p1, err := NIP44EncryptWithNonce(pt, ours, nonce)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := gonip44.Encrypt(pt, theirs, gonip44.WithCustomNonce(nonce[:]))
		if err != nil {
			t.Fatal(err)
		}
		if p1 != p2 {
			t.Errorf("%d bytes: payload differs from go-nostr's with the same nonce", len(pt))
		}
		// Random nonces: each side decrypts the other's.
		r1, _ := NIP44Encrypt(pt, ours)
		if got, err := gonip44.Decrypt(r1, theirs); err != nil || got != pt {
			t.Errorf("%d bytes: go-nostr cannot decrypt ours: %v", len(pt), err)
		}
		r2, _ := gonip44.Encrypt(pt, theirs)
		if got, err := NIP44Decrypt(r2, ours); err != nil || got != pt {
			t.Errorf("%d bytes: we cannot decrypt go-nostr's: %v", len(pt), err)
		}
	}
}

func TestNIP42AgainstGoNostr(t *testing.T) {
	k := DeriveKeys("gn42", RoleHuman, 3)
	now := time.Now() // go-nostr checks created_at against the wall clock (±10 min)
	for _, relay := range []string{"ws://127.0.0.1:7777", "wss://acme.buzz.example"} {
		e, err := AuthEvent(k, relay, "c4a11e", now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pk, ok := gonip42.ValidateAuthEvent(toGoNostr(e), "c4a11e", relay); !ok || pk != k.PubKey() {
			t.Errorf("%s: go-nostr ValidateAuthEvent = %q, %v", relay, pk, ok)
		}
		if _, ok := gonip42.ValidateAuthEvent(toGoNostr(e), "c4a11f", relay); ok {
			t.Errorf("%s: go-nostr accepted the wrong challenge; the oracle is not checking", relay)
		}
		// And our relay-side check agrees with go-nostr on go-nostr's own event.
		g := gonip42.CreateUnsignedAuthEvent("c4a11e", k.PubKey(), relay)
		if err := g.Sign(k.SecretHex()); err != nil {
			t.Fatal(err)
		}
		ev := &Event{ID: g.ID, PubKey: g.PubKey, CreatedAt: int64(g.CreatedAt), Kind: g.Kind, Content: g.Content, Sig: g.Sig}
		for _, tg := range g.Tags {
			ev.Tags = append(ev.Tags, []string(tg))
		}
		if _, err := VerifyAuthEvent(ev, AuthCheck{Challenge: "c4a11e", RelayURL: relay, Now: time.Now(), MaxSkew: time.Minute}); err != nil {
			t.Errorf("%s: we refuse go-nostr's AUTH event: %v", relay, err)
		}
	}
}
