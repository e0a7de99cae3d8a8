package relay

import (
	"fmt"
	"testing"
)

// "profiles 0, status 30315, emoji 30030 and 10030, read state 30078,
// ... project home 30621 and repos 30617": each is accepted and readable.
func TestAllowListedProfileKindsAreAcceptedAndReadable(t *testing.T) {
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
