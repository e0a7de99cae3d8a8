// The relay's EVENT handling and what reads see, over WebSocket, against
// docs/buzz-protocol.md (the § numbers below are that document's): OK
// reasons, channel fan-out and membership, gated reads, threads, ephemeral,
// deletion, replaceable kinds, rate limits and signatures.

package relay

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// §1.8 and §4: the OK reason catalogue, word for word.
func TestEventOKReasons(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	c := authed(t, r, alice)
	open := c.createChannel("general", "open")
	private := c.createChannel("secret", "private")
	msg := ev(t, alice, 9, "hello", []string{"h", open})
	c.mustPublish(msg)
	react := ev(t, alice, 7, "+", []string{"e", msg.ID})
	c.mustPublish(react)
	bc := authed(t, r, bob)
	archived := c.createChannel("old", "open")
	c.mustPublish(ev(t, alice, 9002, "", []string{"h", archived}, []string{"archived", "true"}))

	cases := []struct {
		name   string
		client *wsClient
		event  *nostr.Event
		ok     bool
		reason string
	}{
		{"duplicate regular event is accepted", c, msg, true, "duplicate:"},
		{"event signed by another key", c, ev(t, bob, 9, "x", []string{"h", open}), false, "invalid: event pubkey does not match authenticated identity"},
		{"relay-only kind 39006", c, ev(t, alice, 39006, "{}"), false, "restricted: relay-only kind"},
		{"relay-signed group state 39000", c, ev(t, alice, 39000, "", []string{"d", open}), false, "restricted: relay-only kind"},
		{"membership notice 44100", c, ev(t, alice, 44100, "", []string{"p", bob.PubKey()}), false, "invalid: membership notifications are relay-signed only"},
		{"kind outside the allow-list", c, ev(t, alice, 1, "note"), false, "restricted: unknown event kind"},
		{"AUTH through EVENT", c, ev(t, alice, 22242, ""), false, "invalid: AUTH events cannot be submitted"},
		{"timestamp 16 minutes old", c, evAt(t, alice, 9, time.Now().Add(-16*time.Minute), "x", []string{"h", open}), false, "invalid: event timestamp too far from server time"},
		{"content over 256 KiB", c, ev(t, alice, 9, strings.Repeat("a", 262145), []string{"h", open}), false, "invalid: content exceeds maximum size of 262144 bytes (got 262145)"},
		{"channel kind without h", c, ev(t, alice, 9, "x"), false, "invalid: channel-scoped events must include an h tag"},
		{"private channel non-member", bc, ev(t, bob, 9, "x", []string{"h", private}), false, "restricted: not a channel member"},
		{"open channel non-member may post", bc, ev(t, bob, 9, "x", []string{"h", open}), true, ""},
		{"archived channel", c, ev(t, alice, 9, "x", []string{"h", archived}), false, "invalid: channel is archived"},
		{"reaction without e", c, ev(t, alice, 7, "+"), false, "invalid: reaction must reference a target event via e tag"},
		{"reaction to a missing event", c, ev(t, alice, 7, "+", []string{"e", strings.Repeat("ab", 32)}), false, "invalid: reaction target event not found"},
		{"duplicate reaction", c, ev(t, alice, 7, "+", []string{"e", msg.ID}, []string{"p", alice.PubKey()}), false, "duplicate: reaction already exists"},
		{"deletion with two targets", c, ev(t, alice, 5, "", []string{"e", msg.ID}, []string{"e", react.ID}), false, "invalid: deletion events must reference exactly one target via e or a tag (got e=2, a=0)"},
		{"deletion with no target", c, ev(t, alice, 5, ""), false, "invalid: deletion events must reference exactly one target via e or a tag (got e=0, a=0)"},
		{"channel without a name", c, ev(t, alice, 9007, "", []string{"h", newUUID()}), false, "invalid: channel name is required"},
		{"channel id reused", c, ev(t, alice, 9007, "", []string{"h", open}, []string{"name", "again"}), false, "duplicate: channel already exists"},
		{"join a private channel", bc, ev(t, bob, 9021, "", []string{"h", private}), false, "restricted: channel is private"},
		{"profile content must be JSON", c, ev(t, alice, 0, "not json"), false, "invalid: kind:0 content must be valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.client.t = t
			ok, reason := tc.client.publish(tc.event)
			if ok != tc.ok || reason != tc.reason {
				t.Errorf("got OK %v %q, want %v %q", ok, reason, tc.ok, tc.reason)
			}
		})
	}
}

// §1.6: channel events go only to channel-scoped subscriptions, other
// events only to global ones.
func TestChannelScopedFanout(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch1 := a.createChannel("one", "open")
	ch2 := a.createChannel("two", "open")
	b := authed(t, r, bob)
	b.req("global", map[string]any{"kinds": []int{9, 0}})
	b.req("chan", map[string]any{"kinds": []int{9}, "#h": []string{ch1}})
	b.req("multi", map[string]any{"kinds": []int{9}, "#h": []string{ch1, ch2}})
	b.req("mixed", map[string]any{"kinds": []int{9}, "#h": []string{ch1}}, map[string]any{"kinds": []int{9}})

	m := ev(t, alice, 9, "to one", []string{"h", ch1})
	a.mustPublish(m)
	got := map[string]bool{}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		f, err := b.tryRead(time.Until(deadline))
		if err != nil {
			break
		}
		if str(f[0]) == "EVENT" {
			got[str(f[1])] = true
		}
	}
	if !got["chan"] || !got["multi"] || got["global"] || got["mixed"] {
		t.Errorf("channel message delivered to %v; want chan and multi only", got)
	}
	p := ev(t, alice, 0, `{"name":"alice"}`)
	a.mustPublish(p)
	if e := b.nextEvent("global", 2*time.Second); e == nil || e.ID != p.ID {
		t.Errorf("global subscription did not receive the profile")
	}
}

// §1.6, §4.6: private channels — REQ membership, adds, and fan-out re-check.
func TestPrivateChannelMembership(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch := a.createChannel("secret", "private")
	b := authed(t, r, bob)
	if _, reason := b.req("s", map[string]any{"#h": []string{ch}}); reason != "restricted: not a channel member" {
		t.Fatalf("non-member REQ: %q", reason)
	}
	a.mustPublish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", bob.PubKey()}))
	if _, reason := b.req("s", map[string]any{"kinds": []int{9}, "#h": []string{ch}}); reason != "" {
		t.Fatalf("member REQ: %q", reason)
	}
	m := ev(t, alice, 9, "hi bob", []string{"h", ch})
	a.mustPublish(m)
	if e := b.nextEvent("s", 2*time.Second); e == nil || e.ID != m.ID {
		t.Fatal("member did not receive the live message")
	}
	a.mustPublish(ev(t, alice, 9001, "", []string{"h", ch}, []string{"p", bob.PubKey()}))
	a.mustPublish(ev(t, alice, 9, "bob is gone", []string{"h", ch}))
	if e := b.nextEvent("s", 500*time.Millisecond); e != nil && e.Kind == 9 {
		t.Fatalf("removed member still receives messages: %q", e.Content)
	}
	// A 9000 adds its first p only (Buzz's extract_p_tag); the others are
	// ignored and the event is still accepted.
	carol, dave := key("carol"), key("dave")
	a.mustPublish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", carol.PubKey()}, []string{"p", dave.PubKey()}))
	// The relay-signed member list names bob no more and alice as owner.
	evs, _ := a.req("roster", map[string]any{"kinds": []int{39002}, "#d": []string{ch}})
	if len(evs) != 1 || evs[0].PubKey != r.RelayPubKey() || evs[0].Verify() != nil {
		t.Fatalf("39002: %+v", evs)
	}
	if !hasTagValue(evs[0], "p", alice.PubKey()) || hasTagValue(evs[0], "p", bob.PubKey()) ||
		!hasTagValue(evs[0], "p", carol.PubKey()) || hasTagValue(evs[0], "p", dave.PubKey()) {
		t.Errorf("39002 tags %v", evs[0].Tags)
	}
}

// §1.6, §1.7, §4.13: p-gated and author-only reads.
func TestGatedReads(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	cases := []struct {
		name   string
		verb   string
		filter map[string]any
		reason string
	}{
		{"observer frames without #p", "REQ", map[string]any{"kinds": []int{24200}}, "restricted: p-gated events require #p matching your pubkey"},
		{"membership notices for someone else", "REQ", map[string]any{"kinds": []int{44100}, "#p": []string{key("bob").PubKey()}}, "restricted: p-gated events require #p matching your pubkey"},
		{"own membership notices", "REQ", map[string]any{"kinds": []int{44100, 44101}, "#p": []string{alice.PubKey()}}, ""},
		{"COUNT wording", "COUNT", map[string]any{"kinds": []int{1059}}, "restricted: p-gated kinds require #p tag matching your pubkey"},
		{"someone else's reminders", "REQ", map[string]any{"kinds": []int{30300}}, "restricted: author-only kinds require authors=[self]"},
		{"own reminders", "REQ", map[string]any{"kinds": []int{30300}, "authors": []string{alice.PubKey()}}, ""},
		{"engram", "REQ", map[string]any{"kinds": []int{30174}}, "restricted: agent-engram reads require authors=[self] or #p=[self]"},
	}
	for i, tc := range cases {
		sub := fmt.Sprint("g", i)
		c.send(tc.verb, sub, tc.filter)
		f := c.read()
		got := ""
		if str(f[0]) == "CLOSED" {
			got = str(f[2])
		}
		if got != tc.reason {
			t.Errorf("%s: got %s, want CLOSED %q", tc.name, frameString(f), tc.reason)
		}
	}
}

// §4.3: NIP-10 thread rules.
func TestThreadReplies(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	ch := c.createChannel("t", "open")
	other := c.createChannel("o", "open")
	root := ev(t, alice, 9, "root", []string{"h", ch})
	c.mustPublish(root)
	r1 := ev(t, alice, 9, "r1", []string{"h", ch}, []string{"e", root.ID, "", "reply"})
	c.mustPublish(r1)
	elsewhere := ev(t, alice, 9, "x", []string{"h", other})
	c.mustPublish(elsewhere)
	cases := []struct {
		name   string
		e      *nostr.Event
		reason string
	}{
		{"nested reply with root and reply markers", ev(t, alice, 9, "r2", []string{"h", ch}, []string{"e", root.ID, "", "root"}, []string{"e", r1.ID, "", "reply"}), ""},
		{"parent missing", ev(t, alice, 9, "x", []string{"h", ch}, []string{"e", strings.Repeat("cd", 32), "", "reply"}), "invalid: reply parent not found"},
		{"parent in another channel", ev(t, alice, 9, "x", []string{"h", ch}, []string{"e", elsewhere.ID, "", "reply"}), "invalid: reply parent event belongs to a different channel"},
		{"wrong root", ev(t, alice, 9, "x", []string{"h", ch}, []string{"e", r1.ID, "", "root"}, []string{"e", r1.ID, "", "reply"}), "invalid: root tag does not match thread ancestry"},
	}
	for _, tc := range cases {
		ok, reason := c.publish(tc.e)
		if reason != tc.reason || ok != (tc.reason == "") {
			t.Errorf("%s: got %v %q, want %q", tc.name, ok, reason, tc.reason)
		}
	}
	// Depth ≤ 100: a chain of 100 replies is fine, the 101st is refused.
	parent := root
	for d := 1; d <= 101; d++ {
		tags := [][]string{{"h", ch}, {"e", parent.ID, "", "reply"}}
		if d > 1 {
			tags = append(tags, []string{"e", root.ID, "", "root"})
		}
		e := ev(t, alice, 9, fmt.Sprint("d", d), tags...)
		ok, reason := c.publish(e)
		if d <= 100 && !ok {
			t.Fatalf("depth %d refused: %q", d, reason)
		}
		if d == 101 && (ok || reason != "invalid: thread depth limit exceeded") {
			t.Fatalf("depth 101: %v %q", ok, reason)
		}
		parent = e
	}
}

// §1.6, §4.8: ephemeral kinds are fanned out live and never stored.
func TestEphemeralTyping(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch := a.createChannel("t", "open")
	b := authed(t, r, bob)
	b.req("s", map[string]any{"kinds": []int{20002}, "#h": []string{ch}})
	typing := ev(t, alice, 20002, "", []string{"h", ch})
	a.mustPublish(typing)
	if e := b.nextEvent("s", 2*time.Second); e == nil || e.ID != typing.ID {
		t.Fatal("typing not delivered live")
	}
	if evs, _ := b.req("s2", map[string]any{"kinds": []int{20002}, "#h": []string{ch}}); len(evs) != 0 {
		t.Fatalf("typing was stored: %d replayed", len(evs))
	}
}

// §4.4-4.5: deletions remove the target; a reaction can be removed and re-added.
func TestDeletionAndReactions(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch := a.createChannel("t", "open")
	m := ev(t, alice, 9, "m", []string{"h", ch})
	a.mustPublish(m)
	b := authed(t, r, bob)
	if ok, reason := b.publish(ev(t, bob, 5, "", []string{"e", m.ID})); ok {
		t.Fatalf("someone else's deletion accepted: %q", reason)
	}
	re := ev(t, bob, 7, "🔥", []string{"e", m.ID})
	b.mustPublish(re)
	b.mustPublish(ev(t, bob, 5, "", []string{"e", re.ID}))
	b.mustPublish(ev(t, bob, 7, "🔥", []string{"e", m.ID}, []string{"k", "9"}))
	a.mustPublish(ev(t, alice, 5, "", []string{"e", m.ID}))
	if evs, _ := a.req("q", map[string]any{"ids": []string{m.ID}}); len(evs) != 0 {
		t.Fatal("deleted event still served")
	}
}

// §4.10-4.11: replaceable and addressable kinds keep the newest version.
func TestReplaceableKinds(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	now := time.Now()
	old := evAt(t, alice, 0, now.Add(-10*time.Second), `{"name":"old"}`)
	newer := evAt(t, alice, 0, now, `{"name":"new"}`)
	c.mustPublish(old)
	c.mustPublish(newer)
	if ok, reason := c.publish(evAt(t, alice, 0, now.Add(-5*time.Second), `{"name":"stale"}`)); !ok || !strings.HasPrefix(reason, "duplicate:") {
		t.Errorf("stale replaceable: %v %q", ok, reason)
	}
	evs, _ := c.req("p", map[string]any{"kinds": []int{0}, "authors": []string{alice.PubKey()}})
	if len(evs) != 1 || evs[0].ID != newer.ID {
		t.Fatalf("profiles served: %v", kindsOf(evs))
	}
	s1 := evAt(t, alice, 30315, now.Add(-time.Second), "busy", []string{"d", "general"})
	s2 := evAt(t, alice, 30315, now, "free", []string{"d", "general"})
	s3 := evAt(t, alice, 30315, now, "music", []string{"d", "music"})
	c.mustPublish(s1)
	c.mustPublish(s2)
	c.mustPublish(s3)
	evs, _ = c.req("st", map[string]any{"kinds": []int{30315}, "authors": []string{alice.PubKey()}})
	if len(evs) != 2 {
		t.Fatalf("statuses: %d, want 2 (one per d)", len(evs))
	}
}

// §2.2, §2.3: quota rejection strings and the v0.2.1 NOTICE form.
func TestRateLimits(t *testing.T) {
	quota := regexp.MustCompile(`^rate-limited: quota exceeded; retry in [1-9][0-9]*s$`)
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("legacy=", legacy), func(t *testing.T) {
			r := startRelay(t, func(c *Config) {
				c.RateLimit = true
				c.HumanMessagesPerMin = 3
				c.WSFramesPerWindow = 1000
				c.LegacyRateLimitNotice = legacy
			})
			alice := key("alice")
			c := authed(t, r, alice)
			for i := 0; i < 3; i++ {
				c.mustPublish(ev(t, alice, 0, fmt.Sprintf(`{"i":%d}`, i)))
			}
			e := ev(t, alice, 0, `{"i":4}`)
			c.send("EVENT", e)
			f := c.read()
			if legacy {
				if str(f[0]) != "NOTICE" || !quota.MatchString(str(f[1])) {
					t.Fatalf("legacy throttle: %s", frameString(f))
				}
				c.send("CLOSE", "probe")
				if f := c.read(); str(f[0]) != "CLOSED" {
					t.Fatalf("an OK followed the NOTICE: %s", frameString(f))
				}
			} else if str(f[0]) != "OK" || string(f[2]) != "false" || !quota.MatchString(str(f[3])) {
				t.Fatalf("throttle: %s", frameString(f))
			}
			// Ephemeral kinds do not use the message bucket.
			ch := newUUID()
			_ = ch
			// HTTP API bucket: 429 with a JSON error.
		})
	}
	r := startRelay(t, func(c *Config) { c.RateLimit = true; c.HumanAPICallsPerMin = 2; c.WSFramesPerWindow = 2 })
	alice := key("alice")
	for i := 0; i < 2; i++ {
		if resp := post(t, r, alice, "/count", []any{map[string]any{"kinds": []int{0}}}); resp.status != 200 {
			t.Fatalf("/count %d: %d %s", i, resp.status, resp.body)
		}
	}
	resp := post(t, r, alice, "/count", []any{map[string]any{"kinds": []int{0}}})
	if resp.status != 429 || !quota.MatchString(resp.errorText(t)) {
		t.Fatalf("third API call: %d %s", resp.status, resp.body)
	}
	c := authed(t, r, alice)
	c.req("a", map[string]any{"kinds": []int{0}})
	c.req("b", map[string]any{"kinds": []int{0}})
	if _, reason := c.req("c", map[string]any{"kinds": []int{0}}); !quota.MatchString(reason) {
		t.Fatalf("third REQ in the frame window: %q", reason)
	}
}

// §1.2: the relay checks the id hash and the Schnorr signature, unless
// verification is switched off for a capacity run.
func TestSignatureVerification(t *testing.T) {
	for _, verify := range []bool{true, false} {
		r := startRelay(t, func(c *Config) { c.VerifySignatures = verify })
		alice := key("alice")
		c := authed(t, r, alice)
		badID := ev(t, alice, 0, `{"name":"a"}`)
		badID.Content = `{"name":"b"}`
		badSig := ev(t, alice, 0, `{"name":"c"}`)
		badSig.Sig = strings.Repeat("1", 128)
		for _, tc := range []struct {
			e    *nostr.Event
			want string
		}{{badID, "invalid: event id does not match its content"}, {badSig, "invalid: signature verification failed"}} {
			ok, reason := c.publish(tc.e)
			if verify && (ok || reason != tc.want) {
				t.Errorf("verify on: %v %q, want %q", ok, reason, tc.want)
			}
			if !verify && !ok {
				t.Errorf("verify off: refused %q", reason)
			}
		}
		// Another key's event (a gift wrap) is verified without the cached key.
		bob := key("bob")
		gw := ev(t, bob, 1059, "sealed", []string{"p", alice.PubKey()})
		gw.Sig = strings.Repeat("2", 128)
		if ok, reason := c.publish(gw); verify && (ok || reason != "invalid: signature verification failed") {
			t.Errorf("gift wrap with a bad signature: %v %q", ok, reason)
		}
	}
}

// Config.RequireChannelMembership: open channels need a join or an add to write.
func TestRequireChannelMembership(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.RequireChannelMembership = true })
	alice, bob := key("alice"), key("bob")
	a := authed(t, r, alice)
	ch := a.createChannel("open", "open")
	b := authed(t, r, bob)
	if ok, reason := b.publish(ev(t, bob, 9, "hi", []string{"h", ch})); ok || reason != "restricted: not a channel member" {
		t.Fatalf("non-member write: %v %q", ok, reason)
	}
	if _, reason := b.req("s", map[string]any{"#h": []string{ch}}); reason != "" {
		t.Fatalf("reading an open channel: %q", reason)
	}
	b.mustPublish(ev(t, bob, 9021, "", []string{"h", ch}))
	b.mustPublish(ev(t, bob, 9, "hi", []string{"h", ch}))
}
