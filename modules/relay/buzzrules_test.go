package relay

import (
	"fmt"
	"testing"
)

// Page limits clamp at buzz-db's DEFAULT_MAX_PAGE_LIMIT (1000), on
// historical REQs and /query alike, and NIP-11 advertises the same ceiling.
func TestPageLimitClampsAtBuzzMaxPageLimit(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.RateLimit = false })
	alice := key("alice")
	a := authed(t, r, alice)
	ch := a.createChannel("pages", "open")
	for i := 0; i < 1003; i++ {
		a.send("EVENT", ev(t, alice, 9, fmt.Sprintf("m%d", i), []string{"h", ch}))
	}
	for i := 0; i < 1003; i++ {
		if f := a.expect("OK"); str(f[2]) != "true" {
			t.Fatalf("publish %d refused: %s", i, frameString(f))
		}
	}
	filter := map[string]any{"kinds": []int{9}, "#h": []string{ch}, "limit": 5000}
	evs, closed := a.req("page", filter)
	if closed != "" || len(evs) != 1000 {
		t.Fatalf("REQ limit 5000: %d events (closed %q), want the 1000 clamp", len(evs), closed)
	}
	if got := queryEvents(t, r, alice, filter); len(got) != 1000 {
		t.Fatalf("/query limit 5000: %d events, want the 1000 clamp", len(got))
	}
	var info struct {
		Limitation struct {
			MaxLimit int `json:"max_limit"`
		} `json:"limitation"`
	}
	nip11(t, r, "").json(t, &info)
	if info.Limitation.MaxLimit != 1000 {
		t.Fatalf("NIP-11 max_limit %d, want 1000", info.Limitation.MaxLimit)
	}
}

// nip11 reads the relay information document for host ("" = the deployment community).
func nip11(t testing.TB, r *Relay, host string) httpResp {
	t.Helper()
	return doHTTP(t, r, "GET", host, "/", nil, map[string]string{"Accept": "application/nostr+json"})
}
