package seed

import (
	"context"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// On a relay that enforces NIP-43 relay membership (NIP-11 lists 43) the
// seed has each community's owner add the run's identities with kind 9030,
// so every client authenticates; a rerun adds nobody; on an open relay the
// phase sends nothing.
func TestSeedMakesTheRunsIdentitiesRelayMembers(t *testing.T) {
	r := startRelay(t, func(c *relay.Config) { c.RequireRelayMembership = true })
	sc := scenarioFor(t, r, "closed", privateShape)
	// Before the seed, a client of the run is refused.
	g := sc.GlobalIndex(scenario.KindHuman, 1)
	if err := authAs(t, sc, g); err == nil {
		t.Fatal("a client authenticated on a closed relay before the seed")
	}
	res, err := runSeed(t, r, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 6 humans, 2 agents in 2 communities, and 2 hot-thread authors.
	if !res.RelayMembershipRequired || res.RelayMembers.Created != 10 {
		t.Fatalf("relay members %+v (required %v), want 10 added", res.RelayMembers, res.RelayMembershipRequired)
	}
	for _, k := range []scenario.Kind{scenario.KindHuman, scenario.KindAgent, scenario.KindHotAuthor} {
		for _, g := range sc.Clients(k, 1, scenario.Shard{Count: 1}) {
			if err := authAs(t, sc, g); err != nil {
				t.Fatalf("%v %d after the seed: %v", k, g, err)
			}
		}
	}
	again, err := runSeed(t, r, sc, nil)
	if err != nil || again.RelayMembers.Created != 0 || again.RelayMembers.Existing != 10 {
		t.Fatalf("rerun: %v %+v", err, again.RelayMembers)
	}
	open := startRelay(t, nil)
	res, err = runSeed(t, open, scenarioFor(t, open, "open", privateShape), nil)
	if err != nil || res.RelayMembershipRequired || res.RelayMembers.Created != 0 {
		t.Fatalf("open relay: %v required %v %+v", err, res.RelayMembershipRequired, res.RelayMembers)
	}
}

// authAs connects and authenticates as client g at its community.
func authAs(t *testing.T, sc *scenario.Scenario, g int) error {
	t.Helper()
	cl, _ := sc.Client(g)
	ep := sc.Endpoint(cl.Community)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := relayclient.Connect(ctx, relayclient.Config{Keys: sc.Keys(g),
		Target: relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr}})
	if err != nil {
		return err
	}
	c.Close()
	return nil
}
