package relay

import (
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

// opCall signs an operator request with u on the operator origin.
func opCall(t *testing.T, r *Relay, k *nostr.Keys, method, pathQuery string, body any) httpResp {
	t.Helper()
	var b []byte
	if body != nil {
		b = toJSON(t, body)
	}
	auth := nip98(t, k, method, r.OperatorOrigin()+pathQuery, b, body != nil, time.Now())
	return doHTTP(t, r, method, "any.host.example", pathQuery, b, map[string]string{"Authorization": auth})
}

func field(t *testing.T, resp httpResp, name string) any {
	t.Helper()
	var m map[string]any
	resp.json(t, &m)
	return m[name]
}

// §3.9: provisioning, listing, availability, archive and deletion.
func TestOperatorAPI(t *testing.T) {
	r := startRelay(t, nil)
	op := r.OperatorKeys()
	owner, stranger := key("owner"), key("stranger")
	host := "c1.localhost:7777"

	if resp := opCall(t, r, stranger, "GET", "/operator/communities?owner_pubkey="+owner.PubKey(), nil); resp.status != 403 ||
		resp.errorText(t) != "actor not authorized: not a relay operator" {
		t.Fatalf("non-operator: %d %s", resp.status, resp.body)
	}
	noPayload := nip98(t, op, "POST", r.OperatorOrigin()+"/operator/communities", []byte(`{}`), false, time.Now())
	if resp := doHTTP(t, r, "POST", "", "/operator/communities", []byte(`{}`), map[string]string{"Authorization": noPayload}); resp.status != 401 ||
		resp.errorText(t) != "NIP-98: missing payload tag" {
		t.Fatalf("missing payload: %d %s", resp.status, resp.body)
	}
	wrongOrigin := nip98(t, op, "GET", "http://elsewhere.example/operator/communities?owner_pubkey="+owner.PubKey(), nil, false, time.Now())
	if resp := doHTTP(t, r, "GET", "", "/operator/communities?owner_pubkey="+owner.PubKey(), nil, map[string]string{"Authorization": wrongOrigin}); resp.status != 401 {
		t.Fatalf("u on another origin: %d %s", resp.status, resp.body)
	}

	create := map[string]any{"host": host, "initial_owner_pubkey": owner.PubKey(), "create_only": true}
	resp := opCall(t, r, op, "POST", "/operator/communities", create)
	if resp.status != 200 || field(t, resp, "status") != "created" || field(t, resp, "owner_pubkey") != owner.PubKey() {
		t.Fatalf("create: %d %s", resp.status, resp.body)
	}
	id := field(t, resp, "community_id")
	if resp := opCall(t, r, op, "POST", "/operator/communities", create); resp.status != 409 || resp.errorText(t) != "community already exists" {
		t.Fatalf("create_only again: %d %s", resp.status, resp.body)
	}
	resp = opCall(t, r, op, "POST", "/operator/communities", map[string]any{"host": host, "initial_owner_pubkey": owner.PubKey()})
	if resp.status != 200 || field(t, resp, "status") != "existed" || field(t, resp, "community_id") != id {
		t.Fatalf("idempotent create: %d %s", resp.status, resp.body)
	}
	// Buzz validates the raw host on create: a spelling that only
	// normalises to a canonical host is refused, not converged.
	for _, bad := range []string{"C1.localhost:7777", "c2.example:443", "c2.example.", "c_2.example"} {
		resp = opCall(t, r, op, "POST", "/operator/communities", map[string]any{"host": bad, "initial_owner_pubkey": owner.PubKey()})
		if resp.status != 400 || !strings.HasPrefix(resp.errorText(t), "invalid host") {
			t.Fatalf("non-canonical host %q: %d %s", bad, resp.status, resp.body)
		}
	}
	if resp := opCall(t, r, op, "POST", "/operator/communities", map[string]any{"host": "x.example", "create_only": true}); resp.status != 400 ||
		resp.errorText(t) != "initial_owner_pubkey is required when create_only is true" {
		t.Fatalf("create_only without owner: %d %s", resp.status, resp.body)
	}
	resp = opCall(t, r, op, "GET", "/operator/communities?owner_pubkey="+owner.PubKey(), nil)
	if resp.status != 200 || field(t, resp, "quota_used") != float64(1) {
		t.Fatalf("list: %d %s", resp.status, resp.body)
	}
	resp = opCall(t, r, op, "GET", "/operator/communities/availability?host="+url.QueryEscape("C1.LOCALHOST:7777"), nil)
	if resp.status != 200 || field(t, resp, "available") != false || field(t, resp, "normalized_host") != host {
		t.Fatalf("availability: %d %s", resp.status, resp.body)
	}

	// The new community is served on its host.
	c := dialHost(t, r, host)
	c.auth(owner, nil)

	// Deletion needs an archived community.
	del := map[string]any{"host": host, "owner_pubkey": owner.PubKey(), "request_id": newUUID(), "acknowledgement_version": 1}
	if resp := opCall(t, r, op, "POST", "/operator/communities/delete", del); resp.status != 409 || field(t, resp, "code") != "community_not_archived" {
		t.Fatalf("delete before archive: %d %s", resp.status, resp.body)
	}
	if resp := opCall(t, r, op, "POST", "/operator/communities/archive", map[string]any{"host": r.URLs().Host, "owner_pubkey": owner.PubKey()}); resp.status != 409 {
		t.Fatalf("archive the deployment community: %d %s", resp.status, resp.body)
	}
	if resp := opCall(t, r, op, "POST", "/operator/communities/archive", map[string]any{"host": host, "owner_pubkey": stranger.PubKey()}); resp.status != 404 {
		t.Fatalf("archive by a non-owner: %d %s", resp.status, resp.body)
	}
	resp = opCall(t, r, op, "POST", "/operator/communities/archive", map[string]any{"host": host, "owner_pubkey": owner.PubKey()})
	if resp.status != 200 || field(t, resp, "status") != "archived" {
		t.Fatalf("archive: %d %s", resp.status, resp.body)
	}
	if _, err := c.tryRead(2 * time.Second); err == nil {
		t.Fatal("archiving did not close the community's socket")
	}
	if _, resp, err := tryDial(r, host); err == nil || resp.StatusCode != 404 {
		t.Fatal("an archived community still accepts sockets")
	}
	if resp := opCall(t, r, op, "POST", "/operator/communities/delete", map[string]any{"host": "C1.localhost:7777", "owner_pubkey": owner.PubKey(), "request_id": newUUID(), "acknowledgement_version": 1}); resp.status != 400 || field(t, resp, "code") != "invalid_request" {
		t.Fatalf("non-canonical host: %d %s", resp.status, resp.body)
	}
	if resp := opCall(t, r, op, "POST", "/operator/communities/delete", map[string]any{"host": host, "owner_pubkey": owner.PubKey(), "request_id": newUUID(), "acknowledgement_version": 2}); resp.status != 400 || field(t, resp, "code") != "unsupported_acknowledgement_version" {
		t.Fatalf("version 2: %d %s", resp.status, resp.body)
	}
	resp = opCall(t, r, op, "POST", "/operator/communities/delete", del)
	if resp.status != 202 || field(t, resp, "status") != "submitted" || field(t, resp, "community_id") != id {
		t.Fatalf("delete: %d %s", resp.status, resp.body)
	}
	// Same request id: 202 with the current stage; different parameters: conflict.
	var replay httpResp
	waitfor.Until(t, "the deletion past its submitted stage", 10*time.Second, func() bool {
		replay = opCall(t, r, op, "POST", "/operator/communities/delete", del)
		return replay.status != 202 || field(t, replay, "status") != "submitted"
	})
	if replay.status != 202 {
		t.Fatalf("replayed request id: %d %s", replay.status, replay.body)
	}
	other := map[string]any{"host": host, "owner_pubkey": stranger.PubKey(), "request_id": del["request_id"], "acknowledgement_version": 1}
	if resp := opCall(t, r, op, "POST", "/operator/communities/delete", other); resp.status != 409 || field(t, resp, "code") != "deletion_request_conflict" {
		t.Fatalf("request id reused: %d %s", resp.status, resp.body)
	}
	if resp := opCall(t, r, op, "POST", "/operator/communities/unarchive", map[string]any{"host": host, "owner_pubkey": owner.PubKey()}); resp.status != 409 || field(t, resp, "code") != "deletion_lifecycle_conflict" {
		t.Fatalf("unarchive while deleting: %d %s", resp.status, resp.body)
	}
	// Tombstone: the host can never be created again.
	if resp := opCall(t, r, op, "POST", "/operator/communities", map[string]any{"host": host, "initial_owner_pubkey": owner.PubKey()}); resp.status != 409 {
		t.Fatalf("recreate a deleted host: %d %s", resp.status, resp.body)
	}
	resp = opCall(t, r, op, "GET", "/operator/communities/availability?host="+host, nil)
	if field(t, resp, "available") != false {
		t.Fatalf("a tombstoned host is available: %s", resp.body)
	}
	// Operator replay guard.
	auth := nip98(t, op, "GET", r.OperatorOrigin()+"/operator/communities?owner_pubkey="+owner.PubKey(), nil, false, time.Now())
	doHTTP(t, r, "GET", "", "/operator/communities?owner_pubkey="+owner.PubKey(), nil, map[string]string{"Authorization": auth})
	if resp := doHTTP(t, r, "GET", "", "/operator/communities?owner_pubkey="+owner.PubKey(), nil, map[string]string{"Authorization": auth}); resp.status != 401 ||
		resp.errorText(t) != "NIP-98: replay detected" {
		t.Fatalf("operator replay: %d %s", resp.status, resp.body)
	}
}

// §3.9: unarchive brings an archived community back.
func TestOperatorUnarchive(t *testing.T) {
	r := startRelay(t, nil)
	op, owner := r.OperatorKeys(), key("owner")
	host := "c2.localhost"
	opCall(t, r, op, "POST", "/operator/communities", map[string]any{"host": host, "initial_owner_pubkey": owner.PubKey(), "create_only": true})
	opCall(t, r, op, "POST", "/operator/communities/archive", map[string]any{"host": host, "owner_pubkey": owner.PubKey()})
	resp := opCall(t, r, op, "POST", "/operator/communities/unarchive", map[string]any{"host": host, "owner_pubkey": owner.PubKey()})
	if resp.status != 200 || field(t, resp, "status") != "active" || field(t, resp, "archived_at") != nil {
		t.Fatalf("unarchive: %d %s", resp.status, resp.body)
	}
	c := dialHost(t, r, host)
	c.auth(owner, nil)

	// Transfer: the expected owner must match; then the new owner owns it.
	newOwner := key("new-owner")
	tr := map[string]any{"community_id": field(t, resp, "community_id"), "new_owner_pubkey": newOwner.PubKey(), "expected_owner_pubkey": newOwner.PubKey()}
	if resp := opCall(t, r, op, "POST", "/operator/communities/transfer", tr); resp.status != 409 {
		t.Fatalf("transfer with the wrong expected owner: %d %s", resp.status, resp.body)
	}
	tr["expected_owner_pubkey"] = owner.PubKey()
	if resp := opCall(t, r, op, "POST", "/operator/communities/transfer", tr); resp.status != 200 || field(t, resp, "status") != "transferred" {
		t.Fatalf("transfer: %d %s", resp.status, resp.body)
	}
	if resp := opCall(t, r, op, "POST", "/operator/communities/archive", map[string]any{"host": host, "owner_pubkey": owner.PubKey()}); resp.status != 404 {
		t.Fatalf("the previous owner can still archive: %d %s", resp.status, resp.body)
	}
}

// Configuration: an operator secret generated at start-up is written 0600,
// the relay reports the mode the file has, and Close removes the file.
func TestOperatorSecretFile(t *testing.T) {
	path := t.TempDir() + "/op.key"
	r := startRelay(t, func(c *Config) { c.OperatorSecretFile = path })
	if p, mode := r.OperatorSecretFile(); p != path || mode != 0o600 {
		t.Fatalf("secret file %q mode %o", p, mode)
	}
	st, err := osStat(path)
	if err != nil || st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Fatalf("secret file: %v %v", err, st)
	}
	b, _ := osReadFile(path)
	k, err := nostr.NewKeys(string(b))
	if err != nil || k.PubKey() != r.OperatorPubKey() {
		t.Fatalf("secret file does not hold the operator key: %v", err)
	}
	r.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("secret file left after Close: %v", err)
	}
}

// Keys in NIP-19 form are accepted wherever hex is: BUZZ_OPERATOR_SECRET and
// BUZZ_RELAY_SECRET as nsec1…, BUZZ_OPERATOR_PUBKEYS as npub1….
func TestRelayKeysInNIP19Form(t *testing.T) {
	op := nostr.DeriveKeys("nip19", nostr.RoleOperator, 0)
	rk := nostr.DeriveKeys("nip19", nostr.RoleOwner, 0)
	extra := nostr.DeriveKeys("nip19", nostr.RoleHuman, 1)
	r := startRelay(t, func(c *Config) {
		c.OperatorSecret = op.EncodeNsec()
		c.RelaySecret = rk.EncodeNsec()
		c.OperatorPubkeys = []string{extra.EncodeNpub()}
	})
	if r.OperatorPubKey() != op.PubKey() || r.RelayPubKey() != rk.PubKey() {
		t.Fatalf("keys from nsec: operator %s relay %s", r.OperatorPubKey(), r.RelayPubKey())
	}
	// The npub-configured signer is an operator: it may list communities.
	if resp := opCall(t, r, extra, "GET", "/operator/communities?owner_pubkey="+op.PubKey(), nil); resp.status != 200 {
		t.Fatalf("npub operator refused: %d %s", resp.status, resp.body)
	}
	bad := op.EncodeNsec()
	bad = bad[:len(bad)-1] + map[bool]string{true: "p", false: "q"}[bad[len(bad)-1] == 'q']
	cfg := DefaultConfig()
	cfg.OperatorSecret = bad
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "BUZZ_OPERATOR_SECRET") || strings.Contains(err.Error(), bad[5:25]) {
		t.Fatalf("bad nsec: %v", err)
	}
}
