package nostr

import (
	"strings"
	"testing"

	gonip19 "github.com/nbd-wtf/go-nostr/nip19"
)

// The examples of NIP-19 itself.
const (
	nip19Npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
	nip19Pub  = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
	nip19Nsec = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"
	nip19Sec  = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa"
)

func TestNIP19Vectors(t *testing.T) {
	k, err := NewKeys(nip19Nsec)
	if err != nil {
		t.Fatal(err)
	}
	if k.SecretHex() != nip19Sec {
		t.Fatalf("nsec decoded to a different secret")
	}
	if got := k.EncodeNsec(); got != nip19Nsec {
		t.Fatalf("EncodeNsec round trip differs")
	}
	// Surrounding whitespace (a key file's newline) and upper case are fine.
	if k2, err := NewKeys("  " + strings.ToUpper(nip19Nsec) + "\n"); err != nil || k2.PubKey() != k.PubKey() {
		t.Fatalf("upper-case nsec with whitespace: %v", err)
	}
	pk, err := PubKeyHex(nip19Npub)
	if err != nil || pk != nip19Pub {
		t.Fatalf("PubKeyHex(npub) = %q, %v", pk, err)
	}
	if pk, err := PubKeyHex(strings.ToUpper(nip19Pub)); err != nil || pk != nip19Pub {
		t.Fatalf("PubKeyHex(hex) = %q, %v", pk, err)
	}
}

// go-nostr's nip19 is the independent oracle for keys we did not pick.
func TestNIP19MatchesGoNostr(t *testing.T) {
	for i := 0; i < 50; i++ {
		k := DeriveKeys("nip19", RoleHuman, i)
		theirNsec, err := gonip19.EncodePrivateKey(k.SecretHex())
		if err != nil {
			t.Fatal(err)
		}
		if k.EncodeNsec() != theirNsec {
			t.Fatalf("key %d: nsec differs from go-nostr's", i)
		}
		theirNpub, _ := gonip19.EncodePublicKey(k.PubKey())
		if k.EncodeNpub() != theirNpub {
			t.Fatalf("key %d: npub differs from go-nostr's", i)
		}
		k2, err := NewKeys(theirNsec)
		if err != nil || k2.PubKey() != k.PubKey() {
			t.Fatalf("key %d: go-nostr's nsec does not parse back: %v", i, err)
		}
		if pk, err := PubKeyHex(theirNpub); err != nil || pk != k.PubKey() {
			t.Fatalf("key %d: go-nostr's npub does not parse back: %v", i, err)
		}
	}
}

// Bad NIP-19 input is refused, and no error quotes the key or any piece of it.
func TestNIP19ErrorsNeverEchoTheKey(t *testing.T) {
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'q' {
			b[i] = 'p'
		} else {
			b[i] = 'q'
		}
		return string(b)
	}
	bad := []string{
		flip(nip19Nsec, 20),                   // checksum mismatch
		nip19Nsec[:40],                        // truncated
		nip19Nsec[:30] + "b" + nip19Nsec[31:], // 'b' is not in the bech32 alphabet
		"nsec1" + strings.ToUpper(nip19Nsec[5:30]) + nip19Nsec[30:], // mixed case
		nip19Npub, // a public key where a secret is wanted
	}
	for _, s := range bad {
		_, err := NewKeys(s)
		if err == nil {
			t.Fatalf("NewKeys accepted a bad nsec (%d chars)", len(s))
		}
		assertNoKeyIn(t, err.Error(), s)
	}
	for _, s := range []string{flip(nip19Npub, 30), nip19Nsec, "npub1" + nip19Npub[5:40]} {
		_, err := PubKeyHex(s)
		if err == nil {
			t.Fatalf("PubKeyHex accepted a bad npub (%d chars)", len(s))
		}
		assertNoKeyIn(t, err.Error(), s)
	}
}

// assertNoKeyIn fails when msg contains any 8-character run of key.
func assertNoKeyIn(t *testing.T, msg, key string) {
	t.Helper()
	body := key[5:]
	for i := 0; i+8 <= len(body); i++ {
		if strings.Contains(strings.ToLower(msg), strings.ToLower(body[i:i+8])) {
			t.Fatalf("error %q quotes part of the key", msg)
		}
	}
}
