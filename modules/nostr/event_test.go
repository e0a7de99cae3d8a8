package nostr

import (
	"testing"
	"time"

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
