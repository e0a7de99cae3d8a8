package relay

import (
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
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
	waitfor.Until(t, "the relay to see the close", 3*time.Second, func() bool { return r.Stats().Connections == 1 })
	// The relay has handled the close (the count is its connection's end):
	// the status must still hold.
	if s := status(); s != "away" {
		t.Fatalf("status %q after one of two connections closed, want away", s)
	}
	a2.close()
	waitfor.Until(t, "offline after the last connection closed", 3*time.Second, func() bool { return status() == "offline" })
}
