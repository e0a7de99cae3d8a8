package scenario

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Keys is client g's identity: nostr.DeriveSecretKeys(identity secret,
// run_id, kind role, g), with
// desktop humans on human keys. It is nil for an index that is not a client.
// Deriving costs a hash and a scalar multiplication, so callers keep it.
func (s *Scenario) Keys(g int) *nostr.Keys {
	c, ok := s.Client(g)
	if !ok {
		return nil
	}
	return nostr.DeriveSecretKeys(s.identitySecret, s.RunID, c.Kind.Role(), g)
}

// PubKey is Keys(g).PubKey() without preparing a signer: what a client
// needs of the members it subscribes to (presence peers, co-members). It
// is "" for an index that is not a client.
func (s *Scenario) PubKey(g int) string {
	c, ok := s.Client(g)
	if !ok {
		return ""
	}
	return nostr.DeriveSecretPubKey(s.identitySecret, s.RunID, c.Kind.Role(), g)
}

// KeyMemo is s.Keys memoised and safe for concurrent use, with PubKey from
// the same keys: a client's own keys and the pubkeys of the co-members it
// subscribes to come from one derivation per client and run. Each is a
// scalar multiplication (~50 µs), and a connect ramp used to pay two per
// human: its own keys, and its pubkey again as another human's presence
// peer (issue 16); and one memo per loaded scenario spares every client
// re-deriving the same co-members' keys at each session (in a wide channel
// they are the same few members). Keys is safe for concurrent use, so
// clients share them.
type KeyMemo struct {
	s *Scenario
	m sync.Map // int → *nostr.Keys
}

// NewKeyMemo is an empty memo of s's keys.
func NewKeyMemo(s *Scenario) *KeyMemo { return &KeyMemo{s: s} }

// Keys is s.Keys(g), derived once.
func (m *KeyMemo) Keys(g int) *nostr.Keys {
	if v, ok := m.m.Load(g); ok {
		return v.(*nostr.Keys)
	}
	k := m.s.Keys(g)
	if k == nil {
		return nil
	}
	v, _ := m.m.LoadOrStore(g, k)
	return v.(*nostr.Keys)
}

// PubKey is s.PubKey(g) from the memo's keys.
func (m *KeyMemo) PubKey(g int) string {
	if k := m.Keys(g); k != nil {
		return k.PubKey()
	}
	return ""
}

// AgentOwnerKeys is the NIP-OA owner that attests agent g (and receives its
// observer frames); nil when g is not an agent.
func (s *Scenario) AgentOwnerKeys(g int) *nostr.Keys {
	if c, ok := s.Client(g); !ok || c.Kind != KindAgent {
		return nil
	}
	return nostr.DeriveSecretKeys(s.identitySecret, s.RunID, nostr.RoleAgentOwner, g)
}

// OwnerKeys is community n's fixture owner, which seed provisions the
// community for and which signs its channel and membership events.
func (s *Scenario) OwnerKeys(n int) *nostr.Keys {
	return nostr.DeriveSecretKeys(s.identitySecret, s.RunID, nostr.RoleOwner, n)
}

// CoMembers is up to limit other clients that share a channel with g among
// those running at a step with users: the members of g's channels in
// MemberChannels order, each once, g excluded. Humans pick their ten
// presence peers and desktop clients their co-members from it. It stops
// walking as soon as it has limit, so a wide channel costs little.
func (s *Scenario) CoMembers(g int, users float64, limit int) []int {
	if limit <= 0 {
		return nil
	}
	seen := map[int]bool{g: true}
	var out []int
	for _, ch := range s.MemberChannels(g) {
		for m := range s.ChannelMembersAt(ch, users) {
			if seen[m] {
				continue
			}
			seen[m] = true
			out = append(out, m)
			if len(out) == limit {
				return out
			}
		}
	}
	return out
}

// IdentitySecretEnv names the variable whose value is mixed into every
// derived identity; without it, the operator key is (docs/security.md).
const IdentitySecretEnv = "BUZZLOAD_IDENTITY_SECRET"

// SetIdentitySecret mixes a secret into every identity the run derives, so
// that the run id (in reports, host names, ConfigMaps) is not enough to sign
// as the run's members and community owners: $BUZZLOAD_IDENTITY_SECRET when
// set, else the operator key when one is configured (both are the same on
// every shard, runner, seed and teardown). It returns where the secret came
// from ("" when there is none: keys derive from run_id alone, as before).
// Call it before deriving any key.
func (s *Scenario) SetIdentitySecret(lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv != nil {
		if v, ok := lookupEnv(IdentitySecretEnv); ok && v != "" {
			s.identitySecret = []byte("env\x00" + v)
			return "$" + IdentitySecretEnv, nil
		}
	}
	if s.Embedded() {
		return "", nil // the embedded relay's operator derives from run_id too
	}
	k, err := s.OperatorKey(lookupEnv)
	if errors.Is(err, ErrNoOperatorKey) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	s.identitySecret = []byte("operator\x00" + k.SecretHex())
	return "the operator key", nil
}

// IdentitiesSecret reports whether a secret is mixed into the identities.
func (s *Scenario) IdentitiesSecret() bool { return len(s.identitySecret) > 0 }

// SharedTarget reports whether the target relay is not on this machine
// (ws_url's host is neither loopback nor localhost): identities without a
// secret are then a credential anyone holding the run id has.
func (s *Scenario) SharedTarget() bool {
	if s.Embedded() {
		return false
	}
	for _, raw := range []string{s.Target.WSURL, s.Target.HTTPURL} {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			continue
		}
		h := strings.ToLower(u.Hostname())
		if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
			continue
		}
		if h == "localhost" || strings.HasSuffix(h, ".localhost") {
			continue
		}
		return true
	}
	return false
}

// NoSecretWarning is what a run against a shared relay without an identity
// secret is told.
const NoSecretWarning = "identities derive from run_id alone: anyone who reads a report can sign as this run's members and community owners on the target; set " + IdentitySecretEnv + " (or an operator key) on every runner (docs/security.md)"

// PubKeys is every identity the run authenticates with pubkey-only NIP-42:
// each community's owner, then every client of every kind at the peak (an
// agent's own key too: its AUTH carries a NIP-OA tag, but a relay may still
// list it). An operator who turns on Buzz's BUZZ_PUBKEY_ALLOWLIST lists
// these (`buzzload plan --pubkeys`); the embedded relay lists them itself.
func (s *Scenario) PubKeys() []string {
	out := make([]string, 0, s.Shape.Communities)
	for n := range s.Shape.Communities {
		out = append(out, s.OwnerKeys(n).PubKey())
	}
	for k := range NumKinds {
		for _, g := range s.Clients(k, s.PeakUsers(), Shard{Count: 1}) {
			out = append(out, s.PubKey(g))
		}
	}
	return out
}
