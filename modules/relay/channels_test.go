package relay

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

// "9021, 9022": a member who leaves (9022) a private channel loses
// read and write access like a removed one.
func TestLeavingAPrivateChannelLosesAccessLikeRemoval(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch := a.createChannel("private", "private")
	a.mustPublish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", bob.PubKey()}))
	b := authed(t, r, bob)
	if _, reason := b.req("s1", map[string]any{"kinds": []int{9}, "#h": []string{ch}}); reason != "" {
		t.Fatalf("member REQ refused: %q", reason)
	}
	b.mustPublish(ev(t, bob, 9, "before leaving", []string{"h", ch}))
	b.mustPublish(ev(t, bob, 9022, "", []string{"h", ch}))
	if ok, reason := b.publish(ev(t, bob, 9, "after leaving", []string{"h", ch})); ok || reason != "restricted: not a channel member" {
		t.Fatalf("post after 9022: %v %q", ok, reason)
	}
	if _, reason := b.req("s2", map[string]any{"kinds": []int{9}, "#h": []string{ch}}); reason == "" {
		t.Fatal("REQ on a private channel after 9022 was accepted")
	}
}

// "relay-signed 39000": creating a channel (9007) makes the relay publish
// a 39000 group-metadata event for it, signed with the relay key.
func TestChannelCreateEmitsRelaySigned39000(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	ch := c.createChannel("general", "open")
	evs, reason := c.req("meta", map[string]any{"kinds": []int{39000}, "#d": []string{ch}})
	if reason != "" || len(evs) != 1 {
		t.Fatalf("39000 for a new channel: %d events, closed %q", len(evs), reason)
	}
	m := evs[0]
	if m.PubKey != r.RelayPubKey() || m.Verify() != nil || m.TagValue("d") != ch || m.TagValue("name") != "general" {
		t.Fatalf("39000 not relay-signed or wrong tags: pubkey %s d %q name %q", short(m.PubKey), m.TagValue("d"), m.TagValue("name"))
	}
}

// Issue 41 item 5: every 9000 re-signs and replaces 39000, 39001 and 39002,
// changed or not, dated strictly after the version it replaces, as Buzz's
// emit_group_discovery_events does; 39001 lists the owners and admins as
// ["p", pk, role]. Fails without the fix: a 9000 that changes nothing
// re-signed nothing, and no 39001 was written.
func TestPutUserReSignsTheWholeGroupState(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch := a.createChannel("general", "open")
	state := func() map[int]*nostr.Event {
		evs, reason := a.req("state", map[string]any{"kinds": []int{39000, 39001, 39002}, "#d": []string{ch}})
		if reason != "" {
			t.Fatalf("group state REQ closed: %q", reason)
		}
		out := map[int]*nostr.Event{}
		for _, e := range evs {
			if out[e.Kind] != nil {
				t.Fatalf("two %d for one channel: an addressable event was not replaced", e.Kind)
			}
			if e.PubKey != r.RelayPubKey() || e.Verify() != nil {
				t.Fatalf("%d not relay-signed", e.Kind)
			}
			out[e.Kind] = e
		}
		if len(out) != 3 {
			t.Fatalf("group state kinds %v, want 39000, 39001, 39002", out)
		}
		return out
	}
	a.mustPublish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", bob.PubKey()}, []string{"role", "admin"}))
	first := state()
	admins := first[39001].Tags
	want := [][]string{{"d", ch}, {"h", ch}}
	pks := []string{alice.PubKey(), bob.PubKey()}
	sort.Strings(pks)
	for _, pk := range pks {
		role := "owner"
		if pk == bob.PubKey() {
			role = "admin"
		}
		want = append(want, []string{"p", pk, role})
	}
	if !reflect.DeepEqual(admins, want) {
		t.Errorf("39001 tags %v, want %v", admins, want)
	}
	// The same member, the same role: nothing changes, all three again
	// (the content differs so the 9000 is not the same event twice).
	a.mustPublish(ev(t, alice, 9000, "again", []string{"h", ch}, []string{"p", bob.PubKey()}, []string{"role", "admin"}))
	second := state()
	for _, k := range []int{39000, 39001, 39002} {
		if second[k].ID == first[k].ID || second[k].CreatedAt <= first[k].CreatedAt {
			t.Errorf("%d not re-signed after an unchanged 9000: created_at %d then %d", k, first[k].CreatedAt, second[k].CreatedAt)
		}
	}
}

// Issue 41 item 3: with BUZZ_PUBKEY_ALLOWLIST on, a pubkey-only AUTH from
// a key not on the allowlist is refused with Buzz's text, the same as a
// bad signature (handlers/auth.rs); a listed key is admitted, and an
// invalid entry is refused by name.
func TestPubkeyAllowlistGatesAuth(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.PubkeyAllowlist = true })
	alice, bob := key("alice"), key("bob")
	if err := r.AllowPubkeys(alice.PubKey()); err != nil {
		t.Fatal(err)
	}
	authed(t, r, alice)
	c := dial(t, r)
	e := c.authEvent(bob)
	c.send("AUTH", e)
	c.expectOK(e.ID, false, "auth-required: verification failed")
	if err := r.AllowPubkeys("NPUB"); err == nil || !strings.Contains(err.Error(), `"NPUB"`) {
		t.Errorf("an invalid allowlist entry: %v", err)
	}
}

// buzz-contract.md rows 2 and 3: a 9000's target is its first VALID p
// (extract_p_tag skips a value that is not 32 bytes of hex), and a role tag
// with no value counts as absent. Fails without the fix: `[p "zz"], [p
// dave]` was refused "invalid: missing p tag" and `[role]` "invalid:
// invalid role: ".
func TestPutUserTakesTheFirstValidP(t *testing.T) {
	r := startRelay(t, nil)
	alice, dave, carol := key("alice"), key("dave"), key("carol")
	a := authed(t, r, alice)
	ch := a.createChannel("general", "private")
	a.mustPublish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", "zz"}, []string{"p", dave.PubKey()}))
	a.mustPublish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", carol.PubKey()}, []string{"role"}))
	evs, reason := a.req("m", map[string]any{"kinds": []int{39002}, "#d": []string{ch}})
	if reason != "" || len(evs) != 1 {
		t.Fatalf("39002: %d events, %q", len(evs), reason)
	}
	roles := map[string]string{}
	for _, tg := range evs[0].Tags {
		if len(tg) >= 4 && tg[0] == "p" {
			roles[tg[1]] = tg[3]
		}
	}
	if roles[dave.PubKey()] != "member" || roles[carol.PubKey()] != "member" {
		t.Errorf("members %v: want dave and carol added as members", roles)
	}
}
