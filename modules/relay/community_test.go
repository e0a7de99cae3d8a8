package relay

import (
	"testing"
	"time"
)

// "presence 20001 (WebSocket only, in memory, offline when the last
// connection closes)": closing one of two sockets keeps the status.
func TestPresenceOfflineOnlyAfterLastConnection(t *testing.T) {
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
