package models

import (
	"testing"

	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Issue 5, "agent (HTTP polling, HTTP publishing, ... NIP-OA auth ...)":
// the agent's NIP-OA attestation puts it in the relay's agent tier on the
// socket and on HTTP, so with human quotas of one per minute and generous
// agent quotas nothing the agent does is throttled.
func TestAuditAgentIsInTheAgentTierOverWSAndHTTP(t *testing.T) {
	r := startRelay(t, func(c *relay.Config) {
		c.RateLimit = true
		c.WSFramesPerWindow = 1000
		c.HumanMessagesPerMin, c.HumanAPICallsPerMin = 1, 1
		c.AgentMessagesPerMin, c.AgentAPICallsPerMin = 100000, 100000
	})
	u := r.URLs()
	sc := testScenario(t, u.WS, u.HTTP, func(sc *scenario.Scenario) {
		sc.Population.Humans, sc.Population.Agents = 1, 1
		sc.Agent = scenario.Agent{PresenceIntervalSecs: 1, QueryIntervalSecs: 0.05, EventsPerHour: 36000,
			Turn: scenario.AgentTurn{MeanSecs: 1, TypingSecs: 1, FrameSecs: 1, FrameBytes: 64}}
	})
	newSeeder(t, sc, sc.OwnerKeys(0)).channels()
	agent := &collect{}
	runUntil(t, sc, map[int]relayclient.Sink{sc.GlobalIndex(scenario.KindAgent, 0): agent},
		"agent polls, HTTP events and socket publishes beyond the human quotas", func() bool {
			return agent.ok(relayclient.OpHTTPQuery) >= 5 && agent.ok(relayclient.OpHTTPEvents) >= 3 && agent.ok(relayclient.OpPublish) >= 3
		})
	agent.noErrors(t)
	for _, op := range []string{relayclient.OpHTTPQuery, relayclient.OpHTTPEvents, relayclient.OpPublish} {
		if n := agent.throt(op); n != 0 {
			t.Errorf("%s throttled %d times: the agent was not in the agent tier", op, n)
		}
	}
}
