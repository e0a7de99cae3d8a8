package relay

import "testing"

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
