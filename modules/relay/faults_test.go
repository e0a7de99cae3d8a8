package relay

import (
	"os"
	"testing"
	"time"
)

var (
	osStat     = os.Stat
	osReadFile = os.ReadFile
)

// Fault injection through the Go API.
func TestFaultInjection(t *testing.T) {
	r := startRelay(t, nil)
	alice, bob := key("alice"), key("bob")
	f := r.Faults()

	t.Run("withheld EOSE", func(t *testing.T) {
		f.WithholdEOSE("slow-")
		defer f.Reset()
		c := authed(t, r, alice)
		c.send("REQ", "slow-1", map[string]any{"kinds": []int{0}})
		if fr, err := c.tryRead(300 * time.Millisecond); err == nil {
			t.Fatalf("got %s, want nothing", frameString(fr))
		}
		if _, reason := c.req("fast-1", map[string]any{"kinds": []int{0}}); reason != "" {
			t.Fatal(reason)
		}
	})
	t.Run("delayed EOSE", func(t *testing.T) {
		f.DelayEOSE("", 200*time.Millisecond)
		defer f.Reset()
		c := authed(t, r, alice)
		start := time.Now()
		c.req("d", map[string]any{"kinds": []int{0}})
		if time.Since(start) < 150*time.Millisecond {
			t.Fatal("EOSE was not delayed")
		}
	})
	t.Run("drop after frames", func(t *testing.T) {
		f.DropAfterFrames("", 3) // AUTH challenge, AUTH OK, then one more
		defer f.Reset()
		c := authed(t, r, alice)
		c.send("CLOSE", "a")
		c.read()
		if _, err := c.tryRead(2 * time.Second); err == nil {
			t.Fatal("connection not dropped")
		}
	})
	t.Run("HTTP failure once and latency", func(t *testing.T) {
		f.FailHTTPOnce("/query", 503)
		f.SetHTTPLatency(100 * time.Millisecond)
		defer f.Reset()
		if resp := post(t, r, alice, "/query", []any{map[string]any{"kinds": []int{0}}}); resp.status != 503 {
			t.Fatalf("first /query: %d", resp.status)
		}
		start := time.Now()
		if resp := post(t, r, alice, "/query", []any{map[string]any{"kinds": []int{0}}}); resp.status != 200 {
			t.Fatalf("second /query: %d", resp.status)
		}
		if time.Since(start) < 90*time.Millisecond {
			t.Fatal("no latency added")
		}
	})
	t.Run("refused members", func(t *testing.T) {
		f.RefuseMembers("", bob.PubKey())
		defer f.Reset()
		c := authed(t, r, alice)
		ch := c.createChannel("p", "private")
		ok, reason := c.publish(ev(t, alice, 9000, "", []string{"h", ch}, []string{"p", bob.PubKey()}))
		if ok || reason != "restricted: member refused" {
			t.Fatalf("9000 naming a refused member: %v %q", ok, reason)
		}
	})
}
