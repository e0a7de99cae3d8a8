package nostr

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	gonostr "github.com/nbd-wtf/go-nostr"
)

// The canonical form must match go-nostr's byte for byte, including the
// escaping edge cases where implementations have disagreed.
func TestSerializeMatchesGoNostr(t *testing.T) {
	contents := []string{
		"", "hello", "quote \" backslash \\ slash /", "\b\t\n\f\r", "\x00\x01\x0b\x1f\x7f",
		"line\u2028sep\u2029", "emoji 🐝🚀 and ünïcödé", "<script>&amp;</script>", "tab\tend",
	}
	k := DeriveKeys("test", RoleHuman, 1)
	for _, c := range contents {
		e := &Event{CreatedAt: 1700000000, Kind: 9, Tags: [][]string{{"h", "chan\n1"}, {"e", "x\"y", "", "root"}, {}}, Content: c}
		if err := k.Sign(e); err != nil {
			t.Fatal(err)
		}
		g := gonostr.Event{PubKey: e.PubKey, CreatedAt: gonostr.Timestamp(e.CreatedAt), Kind: e.Kind, Content: e.Content}
		for _, tg := range e.Tags {
			g.Tags = append(g.Tags, gonostr.Tag(tg))
		}
		if got, want := string(e.Serialize()), string(g.Serialize()); got != want {
			t.Errorf("content %q: serialised\n got %s\nwant %s", c, got, want)
		}
		if g.GetID() != e.ID {
			t.Errorf("content %q: id %s, go-nostr %s", c, e.ID, g.GetID())
		}
		g.ID, g.Sig = e.ID, e.Sig
		if ok, err := g.CheckSignature(); !ok || err != nil {
			t.Errorf("content %q: go-nostr rejects our signature: %v", c, err)
		}
		if err := e.Verify(); err != nil {
			t.Errorf("content %q: own verify: %v", c, err)
		}
	}
}

func TestVerifyRejectsTampering(t *testing.T) {
	k := DeriveKeys("test", RoleAgent, 7)
	e, err := k.NewEvent(9, [][]string{{"h", "c"}}, "hi", time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	bad := *e
	bad.Content = "hj"
	if bad.Verify() != ErrBadID {
		t.Error("changed content must fail the id check")
	}
	bad = *e
	bad.Sig = e.Sig[:127] + string("0123456789abcdef"[(int(e.Sig[127])+1)%16])
	if bad.Verify() == nil {
		t.Error("changed signature must fail")
	}
	other := DeriveKeys("test", RoleAgent, 8)
	bad = *e
	bad.PubKey = other.PubKey()
	bad.ID = bad.ComputeID()
	if bad.Verify() != ErrBadSignature {
		t.Error("signature under another key must fail")
	}
}

func TestDeriveKeysIsDeterministicAndDistinct(t *testing.T) {
	a := DeriveKeys("run-1", RoleHuman, 0)
	if a.PubKey() != DeriveKeys("run-1", RoleHuman, 0).PubKey() {
		t.Fatal("same inputs must give the same key")
	}
	seen := map[string]string{}
	for _, c := range []struct {
		run  string
		role Role
		i    int
	}{{"run-1", RoleHuman, 0}, {"run-1", RoleHuman, 1}, {"run-1", RoleAgent, 0}, {"run-2", RoleHuman, 0}, {"run-1", RoleOwner, 0}} {
		pk := DeriveKeys(c.run, c.role, c.i).PubKey()
		if prev, ok := seen[pk]; ok {
			t.Fatalf("%v collides with %s", c, prev)
		}
		seen[pk] = c.run
	}
}

func TestKeysNeverPrintSecret(t *testing.T) {
	k := DeriveKeys("r", RoleOperator, 0)
	for _, s := range []string{k.String(), k.GoString()} {
		if contains(s, k.SecretHex()) {
			t.Fatal("String leaks the secret")
		}
	}
	if _, err := NewKeys("zz" + k.SecretHex()[2:]); err == nil || contains(err.Error(), k.SecretHex()[2:]) {
		t.Fatalf("bad key error must not echo input: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestCheckShape(t *testing.T) {
	k := DeriveKeys("shape", RoleHuman, 0)
	good, err := k.NewEvent(9, nil, "ok", time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := good.CheckShape(); err != nil {
		t.Fatalf("valid event: %v", err)
	}
	for name, mut := range map[string]func(e *Event){
		"short id":         func(e *Event) { e.ID = e.ID[:63] },
		"upper-case id":    func(e *Event) { e.ID = strings.ToUpper(e.ID) },
		"non-hex pubkey":   func(e *Event) { e.PubKey = "g" + e.PubKey[1:] },
		"long sig":         func(e *Event) { e.Sig += "00" },
		"negative kind":    func(e *Event) { e.Kind = -1 },
		"kind above 65535": func(e *Event) { e.Kind = 65536 },
		"invalid UTF-8":    func(e *Event) { e.Content = "a\xffb" },
	} {
		e := *good
		mut(&e)
		if err := e.CheckShape(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestGenerateKeysAreFreshAndUsable(t *testing.T) {
	a, err := GenerateKeys()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKeys()
	if a.PubKey() == b.PubKey() {
		t.Fatal("two generated keys are equal")
	}
	back, err := NewKeys(a.SecretHex())
	if err != nil || back.PubKey() != a.PubKey() {
		t.Fatalf("secret does not round-trip: %v", err)
	}
	e, err := a.NewEvent(1, nil, "x", time.Unix(1700000000, 0))
	if err != nil || e.Verify() != nil {
		t.Fatalf("generated key cannot sign: %v", err)
	}
}

func TestTrimKeepsUTF8Valid(t *testing.T) {
	s := strings.Repeat("é", 60) // 120 bytes; byte 80 is a rune start, 81 is not
	for _, in := range []string{s, "x" + s} {
		if out := trim(in); !utf8.ValidString(out) || len(out) > 80+len("…") {
			t.Errorf("trim(%d bytes) = %q", len(in), out)
		}
	}
}

// The public key comes from the signer's scalar multiplication now, and
// DerivePubKey skips the signer: both must equal btcec's own derivation
// from the secret (and the x-only key the relay verifies against).
func TestDerivedPublicKeysMatchBtcec(t *testing.T) {
	for _, role := range []Role{RoleHuman, RoleAgent, RoleOwner} {
		for i := range 64 {
			k := DeriveKeys("run-pk", role, i)
			sk, _ := btcec.PrivKeyFromBytes(unhex(t, k.SecretHex()))
			want := hex.EncodeToString(schnorr.SerializePubKey(sk.PubKey()))
			if k.PubKey() != want {
				t.Fatalf("%s %d: PubKey %s, btcec %s", role, i, k.PubKey(), want)
			}
			if !k.pub.IsEqual(sk.PubKey()) {
				t.Fatalf("%s %d: the full public key differs from btcec's", role, i)
			}
			if got := DerivePubKey("run-pk", role, i); got != want {
				t.Fatalf("%s %d: DerivePubKey %s, want %s", role, i, got, want)
			}
		}
	}
}
