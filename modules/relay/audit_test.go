package relay

// Audit tests for issue 3 bullets the conformance files did not pin: each
// names the bullet it checks. Raw client only (client_test.go helpers).

import (
	"fmt"
	"testing"
	"time"
)

// "presence 20001 (WebSocket only, in memory, offline when the last
// connection closes)": closing one of two sockets keeps the status.
func TestAuditPresenceOfflineOnlyAfterLastConnection(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	a1 := authed(t, r, alice)
	a2 := authed(t, r, alice)
	a1.mustPublish(ev(t, alice, 20001, "away"))
	status := func() string {
		got := queryEvents(t, r, bob, map[string]any{"kinds": []int{20001}, "authors": []string{alice.PubKey()}})
		if len(got) != 1 {
			t.Fatalf("synthetic presence: %d events", len(got))
		}
		return got[0].Content
	}
	a1.close()
	// Wait until the relay has seen the close, then the status must hold.
	for deadline := time.Now().Add(3 * time.Second); r.Stats().Connections != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("relay still counts %d connections", r.Stats().Connections)
		}
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(30 * time.Millisecond) {
		if s := status(); s != "away" {
			t.Fatalf("status %q after one of two connections closed, want away", s)
		}
	}
	a2.close()
	deadline := time.Now().Add(3 * time.Second)
	for status() != "offline" {
		if time.Now().After(deadline) {
			t.Fatal("still not offline after the last connection closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// "9021, 9022": a member who leaves (9022) a private channel loses
// read and write access like a removed one.
func TestAuditLeaveChannel(t *testing.T) {
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

// "profiles 0, status 30315, emoji 30030 and 10030, read state 30078,
// ... project home 30621 and repos 30617": each is accepted and readable.
func TestAuditAllowListedProfileKinds(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	cases := []struct {
		kind    int
		content string
		tags    [][]string
	}{
		{0, `{"name":"alice"}`, nil},
		{30315, "busy", [][]string{{"d", "general"}}},
		{30030, "", [][]string{{"d", "party"}, {"emoji", "tada", "https://example.com/tada.png"}}},
		{10030, "", [][]string{{"emoji", "tada", "https://example.com/tada.png"}}},
		{30078, "{}", [][]string{{"d", "read-state"}}},
		{30621, "", [][]string{{"d", "home"}}},
		{30617, "", [][]string{{"d", "repo"}, {"name", "repo"}}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint("kind ", tc.kind), func(t *testing.T) {
			c.t = t
			e := ev(t, alice, tc.kind, tc.content, tc.tags...)
			if ok, reason := c.publish(e); !ok {
				t.Fatalf("kind %d refused: %q", tc.kind, reason)
			}
			evs, reason := c.req(fmt.Sprint("k", tc.kind), map[string]any{"kinds": []int{tc.kind}, "authors": []string{alice.PubKey()}})
			if reason != "" || len(evs) != 1 || evs[0].ID != e.ID {
				t.Fatalf("kind %d read back: %d events, closed %q", tc.kind, len(evs), reason)
			}
		})
	}
}

// "relay-signed 39000": creating a channel (9007) makes the relay publish
// a 39000 group-metadata event for it, signed with the relay key.
func TestAuditChannelCreateEmitsRelaySigned39000(t *testing.T) {
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

// "Rate limits per (community, pubkey)": a pubkey out of quota in one
// community is not throttled in another.
func TestAuditRateLimitBucketsArePerCommunity(t *testing.T) {
	const other = "acme.example"
	r := startRelay(t, func(c *Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 2
		c.WSFramesPerWindow = 1000
		c.Communities = []string{other}
	})
	alice := key("alice")
	a := authed(t, r, alice)
	for i := 0; i < 2; i++ {
		a.mustPublish(ev(t, alice, 0, fmt.Sprintf(`{"i":%d}`, i)))
	}
	if ok, reason := a.publish(ev(t, alice, 0, `{"i":2}`)); ok || reason == "" {
		t.Fatalf("third message in the deployment community: %v %q (want throttled)", ok, reason)
	}
	b := dialHost(t, r, other)
	b.auth(alice, nil)
	if ok, reason := b.publish(ev(t, alice, 0, `{"i":3}`)); !ok {
		t.Fatalf("first message in %s refused: %q", other, reason)
	}
}

// "limits can be switched off for capacity runs": with RateLimit false,
// even tiny quotas throttle nothing.
func TestAuditRateLimitSwitchOff(t *testing.T) {
	r := startRelay(t, func(c *Config) {
		c.RateLimit = false
		c.HumanMessagesPerMin = 1
		c.HumanAPICallsPerMin = 1
		c.WSFramesPerWindow = 1
	})
	alice := key("alice")
	a := authed(t, r, alice)
	for i := 0; i < 5; i++ {
		a.mustPublish(ev(t, alice, 0, fmt.Sprintf(`{"i":%d}`, i)))
	}
	for i := 0; i < 3; i++ {
		if resp := post(t, r, alice, "/count", []any{map[string]any{"kinds": []int{0}}}); resp.status != 200 {
			t.Fatalf("HTTP call %d with limits off: %d %s", i, resp.status, resp.body)
		}
	}
}

// "Rate limits per (community, pubkey) and tier with docs/buzz-protocol.md's
// defaults" and the §1.3 limits: DefaultConfig is docs/buzz-protocol.md's table.
func TestAuditDefaultsAreTheDigests(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"§2.1 human messages/min", c.HumanMessagesPerMin, 60},
		{"§2.1 human API calls/min", c.HumanAPICallsPerMin, 300},
		{"§2.1 agent messages/min", c.AgentMessagesPerMin, 120},
		{"§2.1 agent API calls/min", c.AgentAPICallsPerMin, 600},
		{"§2.1 WS frames per window", c.WSFramesPerWindow, 50},
		{"§2.1 WS frame window", c.WSFrameWindow, 5 * time.Second},
		{"rate limits on by default", c.RateLimit, true},
		{"§1.3 frame bytes", c.MaxFrameBytes, 524288},
		{"§1.3 content bytes", c.MaxContentBytes, 262144},
		{"§1.3 created_at skew", c.CreatedAtSkew, 900 * time.Second},
		{"§1.3 filters per REQ", c.MaxFilters, 10},
		{"§1.3 subscriptions per connection", c.MaxSubscriptions, 1024},
		{"§1.3 historical limit", c.MaxHistoricalLimit, 2000},
		{"§1.5 AUTH skew", c.AuthSkew, 60 * time.Second},
		{"§1.1 AUTH deadline", c.AuthTimeout, 5 * time.Second},
		{"§3.2 NIP-98 replay window", c.ReplayWindow, 120 * time.Second},
		{"signatures verified", c.VerifySignatures, true},
		{"X-Pubkey fallback off", c.AllowDevPubkey, false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// "an optional cap on retained events": Config.MaxEventsPerCommunity
// reaches the store; the newest events stay, the earliest go.
func TestAuditRetentionCapThroughTheRelay(t *testing.T) {
	const capN = 20
	r := startRelay(t, func(c *Config) { c.MaxEventsPerCommunity = capN })
	alice := key("alice")
	c := authed(t, r, alice)
	ch := c.createChannel("capped", "open")
	var last string
	base := time.Now().Add(-time.Minute)
	for i := 0; i < 3*capN; i++ {
		e := evAt(t, alice, 9, base.Add(time.Duration(i)*time.Second), fmt.Sprint("m", i), []string{"h", ch})
		c.mustPublish(e)
		last = e.ID
	}
	evs, reason := c.req("all", map[string]any{"kinds": []int{9}, "#h": []string{ch}})
	if reason != "" || len(evs) == 0 || len(evs) > capN {
		t.Fatalf("%d messages kept with a cap of %d (closed %q)", len(evs), capN, reason)
	}
	found := false
	for _, e := range evs {
		found = found || e.ID == last
		if e.Content == "m0" {
			t.Error("the earliest message survived the cap")
		}
	}
	if !found {
		t.Error("the newest message was evicted")
	}
}
