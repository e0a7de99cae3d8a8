package relay

import (
	"fmt"
	"testing"
)

// "Rate limits per (community, pubkey)": a pubkey out of quota in one
// community is not throttled in another.
func TestRateLimitBucketsArePerCommunity(t *testing.T) {
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
func TestRateLimitSwitchOff(t *testing.T) {
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
