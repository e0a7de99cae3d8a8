package relay

import (
	"testing"
	"time"
)

// "Rate limits per (community, pubkey) and tier with docs/buzz-protocol.md's
// defaults" and the §1.3 limits: DefaultConfig is docs/buzz-protocol.md's table.
func TestDefaultConfigIsTheProtocolDocsTable(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"§2.1 human messages/min", c.HumanMessagesPerMin, 60},
		{"§2.1 human API calls/min", c.HumanAPICallsPerMin, 300},
		{"§2.1 agent messages/min", c.AgentMessagesPerMin, 120},
		{"§2.1 WS frames per window", c.WSFramesPerWindow, 50},
		{"§2.1 WS frame window", c.WSFrameWindow, 5 * time.Second},
		{"rate limits on by default", c.RateLimit, true},
		{"§1.3 frame bytes", c.MaxFrameBytes, 524288},
		{"§1.3 content bytes", c.MaxContentBytes, 262144},
		{"§1.3 created_at skew", c.CreatedAtSkew, 900 * time.Second},
		{"§1.3 filters per REQ", c.MaxFilters, 10},
		{"§1.3 subscriptions per connection", c.MaxSubscriptions, 1024},
		{"§1.3 historical limit (buzz-db DEFAULT_MAX_PAGE_LIMIT)", c.MaxHistoricalLimit, 1000},
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
