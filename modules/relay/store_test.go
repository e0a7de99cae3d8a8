package relay

import (
	"fmt"
	"testing"
	"time"
)

// "an optional cap on retained events": Config.MaxEventsPerCommunity
// reaches the store; the newest events stay, the earliest go.
func TestRetentionCapThroughTheRelay(t *testing.T) {
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
