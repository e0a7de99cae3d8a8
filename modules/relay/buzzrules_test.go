package relay

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Page limits clamp at buzz-db's DEFAULT_MAX_PAGE_LIMIT (1000), on
// historical REQs and /query alike, and NIP-11 advertises the same ceiling.
func TestPageLimitClampsAtBuzzMaxPageLimit(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.RateLimit = false })
	alice := key("alice")
	a := authed(t, r, alice)
	ch := a.createChannel("pages", "open")
	for i := 0; i < 1003; i++ {
		a.send("EVENT", ev(t, alice, 9, fmt.Sprintf("m%d", i), []string{"h", ch}))
	}
	for i := 0; i < 1003; i++ {
		if f := a.expect("OK"); str(f[2]) != "true" {
			t.Fatalf("publish %d refused: %s", i, frameString(f))
		}
	}
	filter := map[string]any{"kinds": []int{9}, "#h": []string{ch}, "limit": 5000}
	evs, closed := a.req("page", filter)
	if closed != "" || len(evs) != 1000 {
		t.Fatalf("REQ limit 5000: %d events (closed %q), want the 1000 clamp", len(evs), closed)
	}
	if got := queryEvents(t, r, alice, filter); len(got) != 1000 {
		t.Fatalf("/query limit 5000: %d events, want the 1000 clamp", len(got))
	}
	var info struct {
		Limitation struct {
			MaxLimit int `json:"max_limit"`
		} `json:"limitation"`
	}
	nip11(t, r, "").json(t, &info)
	if info.Limitation.MaxLimit != 1000 {
		t.Fatalf("NIP-11 max_limit %d, want 1000", info.Limitation.MaxLimit)
	}
}

// nip11 reads the relay information document for host ("" = the deployment community).
func nip11(t testing.TB, r *Relay, host string) httpResp {
	t.Helper()
	return doHTTP(t, r, "GET", host, "/", nil, map[string]string{"Accept": "application/nostr+json"})
}

// Kind 9000 as Buzz applies it (handlers/side_effects.rs validate_admin_event,
// handle_put_user, emit_system_message, emit_membership_notification): the
// first p only, the role from a ["role", r] tag, a 40099 member_joined system
// message in the channel, a 44100 notice to the target; channel creation
// writes a 40099 channel_created.
func TestAddMemberFollowsBuzz(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob, carol, dave := key("alice"), key("bob"), key("carol"), key("dave")
	a := authed(t, r, alice)
	ch := a.createChannel("buzz-9000", "private")
	a.mustPublish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", bob.PubKey()}, []string{"p", carol.PubKey()}, []string{"role", "admin"}))

	members, _ := a.req("m", map[string]any{"kinds": []int{39002}, "#d": []string{ch}})
	if len(members) != 1 {
		t.Fatalf("39002: %d events", len(members))
	}
	roles := map[string]string{}
	for _, tg := range members[0].Tags {
		if len(tg) >= 4 && tg[0] == "p" {
			roles[tg[1]] = tg[3]
		}
	}
	if roles[bob.PubKey()] != "admin" || roles[carol.PubKey()] != "" || roles[alice.PubKey()] != "owner" {
		t.Fatalf("roles after a 9000 with p bob, p carol, role admin: %v", roles)
	}
	sys, _ := a.req("sys", map[string]any{"kinds": []int{40099}, "#h": []string{ch}})
	var types []string
	for _, e := range sys {
		if e.PubKey != r.RelayPubKey() || e.Verify() != nil {
			t.Fatalf("40099 not signed by the relay: %s", e.PubKey)
		}
		var c map[string]string
		if err := json.Unmarshal([]byte(e.Content), &c); err != nil {
			t.Fatalf("40099 content %q: %v", e.Content, err)
		}
		types = append(types, c["type"]+":"+c["target"])
	}
	sort.Strings(types)
	if want := []string{"channel_created:", "member_joined:" + bob.PubKey()}; !reflect.DeepEqual(types, want) {
		t.Fatalf("system messages %v, want %v", types, want)
	}
	// bob (admin now) may add dave; the role tag must name a role; carol,
	// not a member, cannot write a 9000 in the private channel at all.
	b := authed(t, r, bob)
	notices, _ := b.req("n", map[string]any{"kinds": []int{44100}, "#p": []string{bob.PubKey()}})
	if len(notices) != 1 || notices[0].TagValue("h") != ch {
		t.Fatalf("bob's 44100 notices: %+v", notices)
	}
	b.mustPublish(ev(t, bob, 9000, "", []string{"h", ch}, []string{"p", dave.PubKey()}))
	if ok, reason := b.publish(ev(t, bob, 9000, "", []string{"h", ch}, []string{"p", dave.PubKey()}, []string{"role", "boss"})); ok || reason != "invalid: invalid role: boss" {
		t.Fatalf("a 9000 with role boss: %v %q", ok, reason)
	}
	c := authed(t, r, carol)
	if ok, reason := c.publish(ev(t, carol, 9000, "", []string{"h", ch}, []string{"p", carol.PubKey()})); ok || reason != "restricted: not a channel member" {
		t.Fatalf("a non-member's 9000 in a private channel: %v %q", ok, reason)
	}
	d := authed(t, r, dave)
	if ok, reason := d.publish(ev(t, dave, 9000, "", []string{"h", ch}, []string{"p", carol.PubKey()})); ok || reason != "invalid: only owners/admins may add private-channel members" {
		t.Fatalf("a plain member adding another to a private channel: %v %q", ok, reason)
	}
	// Open channels: any authenticated user may add (Buzz's rule; the
	// embedded relay used to require an admin).
	open := a.createChannel("buzz-open", "open")
	c.mustPublish(ev(t, carol, 9000, "", []string{"h", open}, []string{"p", dave.PubKey()}))
}

// BUZZ_REQUIRE_RELAY_MEMBERSHIP (handlers/auth.rs, api relay_members,
// relay_admin.rs, nip11.rs): NIP-11 lists NIP 43; a non-member's AUTH is
// refused with "restricted: not a relay member" and its HTTP calls with a 403
// relay_membership_required; the provisioned owner is a member and adds
// others with kind 9030 (an agent whose NIP-OA owner is a member passes too).
func TestRelayMembershipRequired(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.RequireRelayMembership = true })
	op, owner, bob := r.OperatorKeys(), key("owner"), key("bob")
	host := "members.localhost:7001"
	if resp := opCall(t, r, op, "POST", "/operator/communities", map[string]any{"host": host, "initial_owner_pubkey": owner.PubKey(), "create_only": true}); resp.status != 200 {
		t.Fatalf("provision: %d %s", resp.status, resp.body)
	}
	var info struct {
		NIPs []int `json:"supported_nips"`
	}
	nip11(t, r, host).json(t, &info)
	if !containsInt(info.NIPs, 43) {
		t.Fatalf("NIP-11 supported_nips %v lacks 43", info.NIPs)
	}
	b := dialHost(t, r, host)
	ae := b.authEvent(bob)
	b.send("AUTH", ae)
	b.expectOK(ae.ID, false, "restricted: not a relay member")
	resp := postHost(t, r, host, bob, "/query", []any{map[string]any{"kinds": []int{0}}})
	if resp.status != 403 || resp.errorText(t) != "relay_membership_required" {
		t.Fatalf("non-member /query: %d %s", resp.status, resp.body)
	}
	o := dialHost(t, r, host)
	o.auth(owner, nil)
	o.mustPublish(ev(t, owner, 9030, "", []string{"p", bob.PubKey()}))
	b2 := dialHost(t, r, host)
	b2.auth(bob, nil)
	if resp := postHost(t, r, host, bob, "/query", []any{map[string]any{"kinds": []int{0}}}); resp.status != 200 {
		t.Fatalf("member /query: %d %s", resp.status, resp.body)
	}
	// A member (not an admin) cannot add others.
	if ok, reason := b2.publish(ev(t, bob, 9030, "", []string{"p", key("carol").PubKey()})); ok || reason != "invalid: actor not authorized: must be admin or owner" {
		t.Fatalf("a member's 9030: %v %q", ok, reason)
	}
	// The open default advertises no NIP 43 and admits anyone.
	open := startRelay(t, nil)
	nip11(t, open, "").json(t, &info)
	if containsInt(info.NIPs, 43) {
		t.Fatalf("open relay advertises NIP 43: %v", info.NIPs)
	}
}

// With the snapshot extension absent (older tenant-aware bridges) NIP-11
// does not advertise it and a snapshot filter is a plain query: an array.
func TestReadStateSnapshotAbsent(t *testing.T) {
	for _, on := range []bool{true, false} {
		r := startRelay(t, func(c *Config) { c.ReadStateSnapshot = on })
		alice := key("alice")
		var doc map[string]json.RawMessage
		nip11(t, r, "").json(t, &doc)
		if _, ok := doc["read_state_snapshot"]; ok != on {
			t.Fatalf("extension %v: NIP-11 read_state_snapshot present %v", on, ok)
		}
		resp := post(t, r, alice, "/query", []any{map[string]any{"kinds": []int{30078}, "authors": []string{alice.PubKey()}, "read_state_snapshot": 1}})
		if resp.status != 200 {
			t.Fatalf("extension %v: %d %s", on, resp.status, resp.body)
		}
		if isObject := len(resp.body) > 0 && resp.body[0] == '{'; isObject != on {
			t.Fatalf("extension %v: answer %s", on, resp.body)
		}
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// postHost is post with the request addressed to host.
func postHost(t testing.TB, r *Relay, host string, k *nostr.Keys, path string, body any) httpResp {
	t.Helper()
	b := toJSON(t, body)
	auth := nip98(t, k, "POST", "http://"+host+path, b, true, time.Now())
	return doHTTP(t, r, "POST", host, path, b, map[string]string{"Authorization": auth, "Content-Type": "application/json"})
}

// A filter without kinds can match p-gated kinds: Buzz refuses it on the
// HTTP bridge and COUNT, and on a global WebSocket REQ, unless it names ids
// or #p=[self] (handlers/req.rs p_gated_filters_authorized).
func TestKindlessFiltersArePGated(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	a := authed(t, r, alice)
	ch := a.createChannel("kindless", "open")
	if _, reason := a.req("g", map[string]any{"authors": []string{alice.PubKey()}}); reason != "restricted: p-gated events require #p matching your pubkey" {
		t.Fatalf("global kindless REQ: %q", reason)
	}
	if _, reason := a.req("c", map[string]any{"#h": []string{ch}}); reason != "" {
		t.Fatalf("channel-scoped kindless REQ: %q", reason)
	}
	if _, reason := a.req("p", map[string]any{"#p": []string{alice.PubKey()}}); reason != "" {
		t.Fatalf("kindless REQ with #p=[self]: %q", reason)
	}
	resp := post(t, r, alice, "/query", []any{map[string]any{"#h": []string{ch}}})
	if resp.status != 403 || resp.errorText(t) != "restricted: p-gated kinds require #p tag matching your pubkey" {
		t.Fatalf("kindless /query: %d %s", resp.status, resp.body)
	}
}
