package nostr

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/btcutil/bech32"
)

// NIP-19 bare keys: nsec1… (secret) and npub1… (public), bech32 (not
// bech32m) over the 32 key bytes. The codec is btcutil's bech32, the same
// btcsuite family as btcec; go-nostr's nip19 wraps that same package, so
// depending on it directly keeps go-nostr a test-only dependency (the tests
// cross-check against its nip19).
const (
	nsecPrefix = "nsec"
	npubPrefix = "npub"
)

// decodeNIP19Key decodes a bare-key NIP-19 string with the wanted prefix.
// Its errors never contain the input nor bech32's own error text, which
// quotes characters and checksums of the key.
func decodeNIP19Key(s, wantPrefix string) ([]byte, error) {
	prefix, data, err := bech32.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("nostr: %s key is not valid bech32 (bad character, case or checksum)", wantPrefix)
	}
	if prefix != wantPrefix {
		return nil, fmt.Errorf("nostr: want a %s1… key, got a %s1… string", wantPrefix, prefixName(prefix))
	}
	b, err := bech32.ConvertBits(data, 5, 8, false)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("nostr: %s key must hold 32 bytes", wantPrefix)
	}
	return b, nil
}

// prefixName returns a human-readable part that is safe to echo: NIP-19
// prefixes are short lower-case words; anything else is not named.
func prefixName(p string) string {
	if len(p) > 10 || strings.Trim(p, "abcdefghijklmnopqrstuvwxyz") != "" {
		return "non-NIP-19"
	}
	return p
}

// isNIP19 reports whether s looks like a NIP-19 string with this prefix
// (bech32 is case-insensitive as a whole).
func isNIP19(s, prefix string) bool {
	return len(s) > len(prefix) && strings.EqualFold(s[:len(prefix)+1], prefix+"1")
}

// PubKeyHex parses a public key given as 64 hex characters or as NIP-19
// npub1…, and returns it as 64 lower-case hex characters, checked to be a
// point on the curve. The error never contains the key.
func PubKeyHex(s string) (string, error) {
	s = strings.TrimSpace(s)
	if isNIP19(s, npubPrefix) {
		b, err := decodeNIP19Key(s, npubPrefix)
		if err != nil {
			return "", err
		}
		s = hex.EncodeToString(b)
	}
	s = strings.ToLower(s)
	if _, err := ParsePubKey(s); err != nil {
		return "", err
	}
	return s, nil
}

// EncodeNsec returns the secret key as NIP-19 nsec1…. Like SecretHex, only
// for a key file the user asked for; never log it.
func (k *Keys) EncodeNsec() string {
	b := k.sk.Key.Bytes()
	return encodeNIP19(nsecPrefix, b[:])
}

// EncodeNpub returns the public key as NIP-19 npub1….
func (k *Keys) EncodeNpub() string {
	b, _ := hex.DecodeString(k.pubHex)
	return encodeNIP19(npubPrefix, b)
}

func encodeNIP19(prefix string, b []byte) string {
	bits, err := bech32.ConvertBits(b, 8, 5, true)
	if err != nil {
		panic("nostr: 8→5 bit conversion of 32 bytes cannot fail: " + err.Error())
	}
	s, err := bech32.Encode(prefix, bits)
	if err != nil {
		panic("nostr: bech32 encoding of a 32-byte key cannot fail: " + err.Error())
	}
	return s
}
