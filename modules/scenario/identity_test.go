package scenario

import (
	"slices"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

func TestIdentities(t *testing.T) {
	s := mustParse(t, rampShape) // 10 humans (some desktop), 2 agents, 1 author per unit
	desk := s.Clients(KindDesktop, 1, Shard{})
	if len(desk) == 0 {
		t.Fatal("no desktop human to check")
	}
	cases := []struct {
		rule string
		g    int
		role nostr.Role
	}{
		{"basic human", s.Clients(KindHuman, 1, Shard{})[0], nostr.RoleHuman},
		{"desktop human on human keys", desk[0], nostr.RoleHuman},
		{"agent", 10, nostr.RoleAgent},
		{"hot-thread author", 12, nostr.RoleHotAuthor},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			if got, want := s.Keys(c.g).PubKey(), nostr.DeriveKeys("t", c.role, c.g).PubKey(); got != want {
				t.Errorf("Keys(%d) = %s, want %s role keys %s", c.g, got, c.role, want)
			}
		})
	}
	if s.Keys(-1) != nil || s.AgentOwnerKeys(0) != nil {
		t.Error("keys for a non-client or a non-agent owner")
	}
	if got, want := s.AgentOwnerKeys(11).PubKey(), nostr.DeriveKeys("t", nostr.RoleAgentOwner, 11).PubKey(); got != want {
		t.Errorf("AgentOwnerKeys(11) = %s, want %s", got, want)
	}
	if got, want := s.OwnerKeys(0).PubKey(), nostr.DeriveKeys("t", nostr.RoleOwner, 0).PubKey(); got != want {
		t.Errorf("OwnerKeys(0) = %s, want %s", got, want)
	}
}

func TestCoMembers(t *testing.T) {
	s := mustParse(t, plainShape)
	// human 0 is in channels 0/0 and 0/1: its co-members are their members
	// in that order, each once, without itself.
	var want []int
	seen := map[int]bool{0: true}
	for _, ch := range s.MemberChannels(0) {
		for m := range s.ChannelMembers(ch) {
			if !seen[m] {
				seen[m] = true
				want = append(want, m)
			}
		}
	}
	if got := s.CoMembers(0, 2, 100); !slices.Equal(got, want) {
		t.Errorf("CoMembers(0) = %v, want %v", got, want)
	}
	if got := s.CoMembers(0, 2, 2); !slices.Equal(got, want[:2]) {
		t.Errorf("CoMembers(0, limit 2) = %v, want %v", got, want[:2])
	}
	for _, m := range s.CoMembers(0, 2, 100) {
		shared := false
		for _, ch := range s.MemberChannels(m) {
			shared = shared || slices.Contains(s.MemberChannels(0), ch)
		}
		if !shared || m == 0 {
			t.Errorf("co-member %d shares no channel with 0", m)
		}
	}
}

func TestPubKeyIsTheClientsKeyWithoutItsSigner(t *testing.T) {
	sc := Defaults()
	sc.RunID = "pk-run"
	sc.Population.Humans, sc.Population.Agents = 5, 2
	memo := NewKeyMemo(&sc).PubKey
	for g := range sc.Population.Humans + sc.Population.Agents {
		want := sc.Keys(g).PubKey()
		if got := sc.PubKey(g); got != want {
			t.Fatalf("client %d: PubKey %s, Keys %s", g, got, want)
		}
		if first, memoised := memo(g), memo(g); first != want || memoised != want {
			t.Fatalf("client %d: the memo differs", g)
		}
	}
	if sc.PubKey(-1) != "" || memo(-1) != "" {
		t.Error("a non-client has a pubkey")
	}
}

// One derivation per client: a pubkey asked for (a presence peer) and the
// client's own keys later are the same Keys, equal to Scenario.Keys.
func TestKeyMemoDerivesEachClientOnce(t *testing.T) {
	sc := Defaults()
	sc.RunID = "memo-run"
	sc.Population.Humans, sc.Population.Agents = 4, 1
	m := NewKeyMemo(&sc)
	n := sc.Population.Humans + sc.Population.Agents
	for g := range n {
		if got, want := m.PubKey(g), sc.Keys(g).PubKey(); got != want {
			t.Fatalf("client %d: memo pubkey %s, Keys %s", g, got, want)
		}
	}
	for g := range n {
		k := m.Keys(g)
		if k == nil || k != m.Keys(g) || k.PubKey() != sc.Keys(g).PubKey() {
			t.Fatalf("client %d: memo keys %v are not one derivation of Scenario.Keys", g, k)
		}
	}
	held := 0
	m.m.Range(func(any, any) bool { held++; return true })
	if held != n {
		t.Errorf("the memo holds %d keys for %d clients", held, n)
	}
	if m.Keys(-1) != nil || m.PubKey(-1) != "" {
		t.Error("a non-client has keys")
	}
}

// A secret mixed into the identities (reliability.md F6): the run id alone
// no longer gives the owners' keys; every process with the same secret
// derives the same keys; the variable wins over the operator key, which is
// the secret otherwise on a real target. Fails without SetIdentitySecret.
func TestIdentitySecret(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	plain := mustParse(t, rampShape)
	a, b := mustParse(t, rampShape), mustParse(t, rampShape)
	for _, s := range []*Scenario{a, b} {
		if src, err := s.SetIdentitySecret(env(map[string]string{IdentitySecretEnv: "s3cret"})); err != nil || src != "$"+IdentitySecretEnv {
			t.Fatalf("SetIdentitySecret: %q, %v", src, err)
		}
	}
	if !a.IdentitiesSecret() || plain.IdentitiesSecret() {
		t.Fatal("IdentitiesSecret wrong")
	}
	if a.OwnerKeys(0).PubKey() == plain.OwnerKeys(0).PubKey() || a.Keys(10).PubKey() == plain.Keys(10).PubKey() {
		t.Fatal("the secret changed no key")
	}
	if a.OwnerKeys(0).PubKey() != b.OwnerKeys(0).PubKey() || a.PubKey(3) != b.Keys(3).PubKey() || a.AgentOwnerKeys(11).PubKey() != b.AgentOwnerKeys(11).PubKey() {
		t.Fatal("two processes with one secret derive different keys")
	}
	// The derivation is HMAC-SHA-256 keyed by the secret (oracle: Python's
	// hmac over "buzzload/v1\0run1\0owner\00" with key "env\0s3cret").
	want, _ := nostr.NewKeys("57b5684938b97139024c088c375ebaf539f753a5d162a4ba26e8ae2227bfc7cd")
	if got := nostr.DeriveSecretKeys([]byte("env\x00s3cret"), "run1", nostr.RoleOwner, 0); got.PubKey() != want.PubKey() {
		t.Fatalf("DeriveSecretKeys = %s, want %s", got.PubKey(), want.PubKey())
	}
	if nostr.DeriveSecretKeys(nil, "run1", nostr.RoleOwner, 0).PubKey() != nostr.DeriveKeys("run1", nostr.RoleOwner, 0).PubKey() {
		t.Fatal("no secret is not the old derivation")
	}

	// A real target: the operator key is the secret, the variable wins.
	remote := func() *Scenario {
		s := mustParse(t, rampShape)
		s.Target.WSURL, s.Target.HTTPURL = "wss://buzz.example.com", "https://buzz.example.com"
		s.Target.OperatorKeyEnv = "BUZZLOAD_OPERATOR_KEY"
		return s
	}
	op := "0000000000000000000000000000000000000000000000000000000000000003"
	r1, r2, r3 := remote(), remote(), remote()
	if !r3.SharedTarget() {
		t.Fatal("a remote target is not shared")
	}
	if src, _ := r1.SetIdentitySecret(env(map[string]string{"BUZZLOAD_OPERATOR_KEY": op})); src != "the operator key" {
		t.Fatalf("source %q", src)
	}
	_, _ = r2.SetIdentitySecret(env(map[string]string{"BUZZLOAD_OPERATOR_KEY": op, IdentitySecretEnv: "s3cret"}))
	if src, _ := r3.SetIdentitySecret(env(nil)); src != "" || r3.IdentitiesSecret() {
		t.Fatalf("no key and no variable: source %q", src)
	}
	k1, k2, k3 := r1.OwnerKeys(0).PubKey(), r2.OwnerKeys(0).PubKey(), r3.OwnerKeys(0).PubKey()
	if k1 == k2 || k1 == k3 || k2 != a.OwnerKeys(0).PubKey() {
		t.Fatalf("owner keys: operator %s, variable %s, none %s", k1, k2, k3)
	}
}
