package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/fitoken/fitokentest"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// tokens is a fixed FederatedIdentity: pubkey → token.
type tokens map[string]string

func (t tokens) Assertion(_ context.Context, pk string) (string, error) { return t[pk], nil }

// Issue 41 item 2: with BUZZ_NIP_FI_MODE=enforce the relay refuses an
// upgrade and a protected bridge call without a valid
// Nostr-Federated-Identity assertion (401 "authentication required", 403
// "evidence rejected"), binds the assertion's nostr_pubkey to the NIP-42
// AUTH ("restricted: evidence rejected" for another key), and ends the
// session at its lease with the lease's close. relayclient sends the field
// from Target.Identity.
func TestNIPFIEnforce(t *testing.T) {
	is := fitokentest.New("https://login.test", "https://relay.test")
	r := startRelay(t, func(c *Config) {
		c.NIPFIMode, c.NIPFIIssuers, c.NIPFIMaxAssertionAgeSecs = "enforce", is.IssuersJSON(), 3600
		c.NIPFIMaxConnectionLifetimeSecs = 1
	})
	alice, bob := key("alice"), key("bob")
	u := r.URLs()
	ctx := context.Background()
	connect := func(k string, id relayclient.FederatedIdentity) (*relayclient.Conn, error) {
		keys := map[string]bool{"alice": true}[k]
		kk := bob
		if keys {
			kk = alice
		}
		return relayclient.Connect(ctx, relayclient.Config{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP, Identity: id}, Keys: kk, ConnectTimeout: 5 * time.Second})
	}
	if _, err := connect("alice", nil); err == nil || !strings.Contains(err.Error(), `HTTP 401: "authentication required`) {
		t.Errorf("no assertion: %v", err)
	}
	if _, err := connect("alice", tokens{alice.PubKey(): "a.b.c"}); err == nil || !strings.Contains(err.Error(), `HTTP 403: "evidence rejected`) {
		t.Errorf("a junk assertion: %v", err)
	}
	other := fitokentest.New("https://login.test", "https://relay.test") // same name, another key
	if _, err := connect("alice", tokens{alice.PubKey(): other.Mint(alice.PubKey(), time.Hour)}); err == nil || !strings.Contains(err.Error(), `HTTP 403: "evidence rejected`) {
		t.Errorf("an assertion signed by another key: %v", err)
	}
	if _, err := connect("bob", tokens{bob.PubKey(): is.Mint(alice.PubKey(), time.Hour)}); err == nil || !strings.Contains(err.Error(), "restricted: evidence rejected") {
		t.Errorf("alice's assertion on bob's AUTH: %v", err)
	}
	good := tokens{alice.PubKey(): is.Mint(alice.PubKey(), time.Hour)}
	c, err := connect("alice", good)
	if err != nil {
		t.Fatalf("a valid assertion: %v", err)
	}
	select {
	case <-c.Done():
		if err := c.Err(); err == nil || !strings.Contains(err.Error(), relayclient.LeaseReason) || !strings.Contains(err.Error(), "1008") {
			t.Errorf("the lease's end: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the 1 s lease did not end the socket")
	}
	// The bridge: 401 without, 200 with, 403 for another signer.
	for _, c := range []struct {
		id   relayclient.FederatedIdentity
		want string
	}{{nil, "HTTP 401"}, {good, ""}} {
		h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP, Identity: c.id}, Keys: alice})
		if err != nil {
			t.Fatal(err)
		}
		_, res := h.Query(ctx, []relayclient.Filter{{Kinds: []int{9}, Limit: 1}}, relayclient.CallOptions{})
		if (c.want == "") != (res.Outcome == relayclient.OutcomeOK) || !strings.Contains(res.Error, c.want) {
			t.Errorf("/query with %v: %v %q", c.id != nil, res.Outcome, res.Error)
		}
	}
	// Buzz's config errors.
	for _, c := range []struct {
		mode, issuers string
		age           int64
		want          string
	}{
		{"enforced", "", 0, `BUZZ_NIP_FI_MODE must be "enforce", "deny_protected", or "off"; got "enforced"`},
		{"enforce", is.IssuersJSON(), 0, "BUZZ_NIP_FI_MAXIMUM_ASSERTION_AGE_SECS"},
		{"enforce", "[]", 60, "BUZZ_NIP_FI_ISSUERS"},
	} {
		if _, err := parseNIPFI(c.mode, c.issuers, c.age, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %.20s %d: %v, want %q", c.mode, c.issuers, c.age, err, c.want)
		}
	}
}
