package relay

import (
	"fmt"
	"testing"
	"time"
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

// Buzz's limiter is a sliding-window log (buzz-pubsub/src/rate_limiter.rs):
// at most limit admissions in ANY trailing window, so a burst at the end of
// one window and another at the start of the next cannot both pass (a fixed
// window admits 2× limit across the boundary); a denied attempt is not
// logged, so retrying while refused does not extend the wait; the retry hint
// is the time until the oldest admission leaves the window.
func TestSlidingLogHasNoBoundaryBurst(t *testing.T) {
	const size, limit = 10 * time.Second, 3
	var s slidingLog
	at := func(d time.Duration) (time.Duration, bool) { return s.take(d, size, limit) }
	for _, d := range []time.Duration{9 * time.Second, 9500 * time.Millisecond, 9900 * time.Millisecond} {
		if _, ok := at(d); !ok {
			t.Fatalf("admission at %v refused under the limit", d)
		}
	}
	// 10.1 s: a fixed window starting at 0 s would have reset here.
	left, ok := at(10100 * time.Millisecond)
	if ok {
		t.Fatal("a fourth admission 1.1 s after the first three passed: the window is not sliding")
	}
	if want := 9*time.Second + size - 10100*time.Millisecond; left != want {
		t.Fatalf("retry after %v, want %v (until the oldest leaves)", left, want)
	}
	// Denied attempts are not logged: at 19 s exactly the 9 s admission has
	// left, and one slot is free even though three attempts were refused.
	at(12 * time.Second)
	at(15 * time.Second)
	if _, ok := at(19 * time.Second); !ok {
		t.Fatal("refused at 19 s: denied attempts were counted")
	}
	if _, ok := at(19 * time.Second); ok {
		t.Fatal("a second admission at 19 s passed: only the 9 s entry had left")
	}
	// The log keeps its order across growth and wrap-around.
	var big slidingLog
	for i := 0; i < 100; i++ {
		if _, ok := big.take(time.Duration(i)*time.Second, 50*time.Second, 50); !ok {
			t.Fatalf("step %d: admitted %v", i, ok)
		}
	}
	if left, ok := big.take(99*time.Second+time.Millisecond, 50*time.Second, 50); ok || left != 999*time.Millisecond {
		t.Fatalf("full log at 99.001 s: ok=%v left=%v, want refused for 999ms", ok, left)
	}
}

// An HTTP publish is charged to the API quota only (Buzz's
// submit_event_authed has no messages check), and the API quota is one rate
// for every caller.
func TestHTTPPublishIsChargedToTheAPIQuotaOnly(t *testing.T) {
	r := startRelay(t, func(c *Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 1
		c.HumanAPICallsPerMin = 4
		c.WSFramesPerWindow = 1000
	})
	alice := key("alice")
	a := authed(t, r, alice)
	ch := a.createChannel("quota", "open")
	for i := 0; i < 3; i++ {
		if resp := post(t, r, alice, "/events", ev(t, alice, 9, fmt.Sprintf("m%d", i), []string{"h", ch})); resp.status != 200 {
			t.Fatalf("HTTP publish %d beyond the messages quota: %d %s", i, resp.status, resp.body)
		}
	}
	if resp := post(t, r, alice, "/events", ev(t, alice, 9, "m3", []string{"h", ch})); resp.status != 200 {
		t.Fatalf("fourth HTTP call within the API quota: %d %s", resp.status, resp.body)
	}
	if resp := post(t, r, alice, "/events", ev(t, alice, 9, "m4", []string{"h", ch})); resp.status != 429 {
		t.Fatalf("fifth HTTP call over an API quota of 4: %d %s", resp.status, resp.body)
	}
}
