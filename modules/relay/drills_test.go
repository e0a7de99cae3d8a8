package relay

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

// The drills through the Go API (issue 42), each with Buzz's answers.
func TestDrills(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")

	t.Run("restart", func(t *testing.T) {
		c1, c2 := authed(t, r, alice), authed(t, r, alice)
		if n := r.Restart(300*time.Millisecond, 0); n < 2 {
			t.Fatalf("closed %d sockets, 2 open", n)
		}
		for _, c := range []*wsClient{c1, c2} {
			_, err := c.tryRead(2 * time.Second)
			if err == nil || !strings.Contains(err.Error(), "1012") || !strings.Contains(err.Error(), "relay restarting") {
				t.Fatalf("close: %v", err)
			}
		}
		if resp := post(t, r, alice, "/query", []any{map[string]any{"kinds": []int{0}}}); resp.status != 503 {
			t.Fatalf("an HTTP request while down: %d", resp.status)
		}
		waitfor.Until(t, "the relay up again", 5*time.Second, func() bool { return !r.down() })
		c := authed(t, r, alice)
		if _, reason := c.req("after", map[string]any{"kinds": []int{0}}); reason != "" {
			t.Fatalf("after the restart: %s", reason)
		}
	})
	t.Run("limiter outage", func(t *testing.T) {
		c := authed(t, r, alice)
		r.LimiterOutage(time.Minute)
		defer r.LimiterOutage(0)
		ok, reason := c.publish(ev(t, alice, nostr.KindProfile, "{}"))
		if ok || reason != "rate-limited: shared admission unavailable" {
			t.Fatalf("WebSocket EVENT: %v %q", ok, reason)
		}
		resp := post(t, r, alice, "/events", ev(t, alice, nostr.KindProfile, `{"name":"a"}`))
		if resp.status != 503 || !strings.Contains(string(resp.body), "rate-limited: shared admission unavailable") {
			t.Fatalf("HTTP /events: %d %s", resp.status, resp.body)
		}
		if _, reason := c.req("reads", map[string]any{"kinds": []int{0}}); reason != "" {
			t.Fatalf("a read during the outage: %s", reason)
		}
	})
	t.Run("stall", func(t *testing.T) {
		c := authed(t, r, alice)
		r.Stall(400 * time.Millisecond)
		start := time.Now()
		c.send("REQ", "s", map[string]any{"kinds": []int{0}, "limit": 0})
		c.expect("EOSE")
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Fatalf("the EOSE came after %v during a 400 ms stall", d)
		}
	})
	t.Run("slow store", func(t *testing.T) {
		r.SlowStore(time.Minute, 150*time.Millisecond)
		defer r.SlowStore(0, 0)
		start := time.Now()
		post(t, r, alice, "/query", []any{map[string]any{"kinds": []int{0}}})
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Fatalf("a read took %v with a 150 ms slower store", d)
		}
	})
}

// `buzzload relay`'s drills at run time: POST /operator/drill, signed by
// the operator key (NIP-98) like every operator route.
func TestOperatorDrillRoute(t *testing.T) {
	r := startRelay(t, nil)
	alice := key("alice")
	c := authed(t, r, alice)
	if resp := opCall(t, r, alice, "POST", "/operator/drill", map[string]any{"kind": "restart"}); resp.status != 403 {
		t.Fatalf("a stranger's drill: %d", resp.status)
	}
	if resp := opCall(t, r, r.OperatorKeys(), "POST", "/operator/drill", map[string]any{"kind": "nap"}); resp.status != 400 {
		t.Fatalf("an unknown kind: %d", resp.status)
	}
	resp := opCall(t, r, r.OperatorKeys(), "POST", "/operator/drill", map[string]any{"kind": "restart", "duration_secs": 0.2})
	if n, _ := field(t, resp, "sockets").(float64); resp.status != 200 || n < 1 {
		t.Fatalf("restart: %d %s", resp.status, resp.body)
	}
	if _, err := c.tryRead(2 * time.Second); err == nil || !strings.Contains(err.Error(), "1012") {
		t.Fatalf("the socket after the drill: %v", err)
	}
}

// Replica read routing (issue 41 point 1, docs/buzz-names.md §a): with
// BUZZ_REPLICA_READ_MAX_AGE_MS a routed /query lags the caller's own
// write; "consistency":"strong" reads the present; any other value is
// Buzz's 400, except on a filter of a channel the caller cannot read.
func TestReplicaReadRouting(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.ReplicaReadMaxAgeMs = 60_000 })
	alice := key("alice")
	c := authed(t, r, alice)
	e := ev(t, alice, nostr.KindProfile, `{"name":"alice"}`)
	c.mustPublish(e)
	byID := func(extra map[string]any) httpResp {
		f := map[string]any{"ids": []string{e.ID}}
		for k, v := range extra {
			f[k] = v
		}
		return post(t, r, alice, "/query", []any{f})
	}
	var got []json.RawMessage
	if resp := byID(nil); resp.status != 200 {
		t.Fatalf("routed: %d", resp.status)
	} else if resp.json(t, &got); len(got) != 0 {
		t.Fatalf("a routed read saw the write at once: %s", resp.body)
	}
	if resp := byID(map[string]any{"consistency": "strong"}); resp.status != 200 {
		t.Fatalf("strong: %d", resp.status)
	} else if resp.json(t, &got); len(got) != 1 {
		t.Fatalf("a strong read missed the write: %s", resp.body)
	}
	for _, bad := range []any{"STRONG", true, nil, 1} {
		resp := byID(map[string]any{"consistency": bad})
		if resp.status != 400 || !strings.Contains(string(resp.body), `consistency must be \"strong\" when present`) {
			t.Fatalf("consistency %v: %d %s", bad, resp.status, resp.body)
		}
	}
}
