package seed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relayclient/relayclienttest"
	"github.com/buzzload/buzzload/modules/scenario"
)

const smallShape = `
[shape]
communities = 3
channels_per_community = 1
history_messages_per_channel = 1
thread_roots_per_channel = 0
[population]
humans = 3
channels_per_member = 1
[[ramp]]
users = 1
hold_secs = 1
`

func runTeardown(t *testing.T, r *relay.Relay, sc *scenario.Scenario, k *nostr.Keys) (*TeardownResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return Teardown(ctx, sc, TeardownOptions{Operator: k})
}

// Teardown archives and requests deletion of every seeded host, reports the
// relay's stage, replays with the same request ids, reports hosts it does
// not hold as absent and never touches another owner's host.
func TestTeardownStagesAndReplay(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "down", smallShape)
	op := operatorHTTP(t, r, r.OperatorKeys())
	// Community 2's host is held by someone else before the seed: seed
	// fails on it but provisions 0 and 1.
	stranger, _ := nostr.GenerateKeys()
	if _, res := op.ProvisionCommunity(context.Background(), sc.CommunityHost(2), stranger.PubKey(), true, relayclient.CallOptions{}); res.Outcome != relayclient.OutcomeOK {
		t.Fatal(res.Error)
	}
	if _, err := runSeed(t, r, sc, nil); err == nil {
		t.Fatal("seed should fail on community 2")
	}

	res, err := runTeardown(t, r, sc, r.OperatorKeys())
	if err != nil {
		t.Fatalf("teardown: %v", err)
	}
	stages := []string{res.Hosts[0].Stage, res.Hosts[1].Stage, res.Hosts[2].Stage}
	if !slices.Equal(stages, []string{"submitted", "submitted", StageAbsent}) {
		t.Fatalf("stages %v (%+v)", stages, res.Hosts)
	}
	for i, h := range res.Hosts {
		if h.RequestID != DeletionRequestID("down", sc.CommunityHost(i)) || h.Host != sc.CommunityHost(i) {
			t.Errorf("host %d: %+v", i, h)
		}
		if h.Archived != (i < 2) {
			t.Errorf("host %d archived = %v", i, h.Archived)
		}
	}
	if res.Failed() != 0 || res.ByStage()["submitted"] != 2 {
		t.Fatalf("by stage %v", res.ByStage())
	}
	// The stranger's community is untouched.
	list, lr := op.ListCommunities(context.Background(), stranger.PubKey(), relayclient.CallOptions{})
	if lr.Outcome != relayclient.OutcomeOK || len(list.Communities) != 1 || archived(list.Communities[0].ArchivedAt) {
		t.Fatalf("the stranger's community changed: %+v %s", list, lr.Error)
	}
	// The seeded hosts are gone from their owners' lists.
	for i := range 2 {
		l, _ := op.ListCommunities(context.Background(), sc.OwnerKeys(i).PubKey(), relayclient.CallOptions{})
		if len(l.Communities) != 0 {
			t.Errorf("owner %d still lists %+v", i, l.Communities)
		}
	}

	// A replay reports the requests' progress with the same ids, no conflict.
	time.Sleep(100 * time.Millisecond) // the local relay walks a stage every 20 ms
	again, err := runTeardown(t, r, sc, r.OperatorKeys())
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	for i := range 2 {
		h := again.Hosts[i]
		if h.Stage == "submitted" || h.Stage == StageAbsent || h.Stage == StageFailed || h.RequestID != res.Hosts[i].RequestID {
			t.Errorf("replay host %d: %+v", i, h)
		}
	}
	if again.Hosts[2].Stage != StageAbsent {
		t.Errorf("replay host 2: %+v", again.Hosts[2])
	}

	// A torn-down run id cannot be seeded again: the tombstone stays.
	if _, err := runSeed(t, r, scenarioFor(t, r, "down", smallShape), nil); err == nil {
		t.Fatal("seeded a torn-down run id")
	}
	// A run that never seeded finds everything absent.
	never, err := runTeardown(t, r, scenarioFor(t, r, "never", smallShape), r.OperatorKeys())
	if err != nil || never.ByStage()[StageAbsent] != 3 {
		t.Fatalf("never seeded: %v %+v", err, never)
	}
}

// A teardown the relay refuses (a key that is not an operator) fails every
// host and says why.
func TestTeardownFailureReported(t *testing.T) {
	r := startRelay(t, nil)
	sc := scenarioFor(t, r, "denied", smallShape)
	if _, err := runSeed(t, r, sc, nil); err != nil {
		t.Fatal(err)
	}
	notOp, _ := nostr.GenerateKeys()
	res, err := runTeardown(t, r, sc, notOp)
	if err == nil || res.Failed() != 3 {
		t.Fatalf("err %v, %+v", err, res)
	}
	mustContain(t, err.Error(), "3 of 3 communities failed", "not a relay operator")
	// Nothing was archived: a seed rerun still finds its communities.
	again, err := runSeed(t, r, sc, nil)
	if err != nil || again.Communities[0].Status != "existed" {
		t.Fatalf("rerun after a failed teardown: %v", err)
	}
}

// Teardown refuses a scenario without a host template.
func TestTeardownNeedsHostTemplate(t *testing.T) {
	r := startRelay(t, nil)
	u := r.URLs()
	sc, err := scenario.Parse("nt.toml", []byte(fmt.Sprintf("run_id = \"nt\"\n[target]\nws_url = %q\nhttp_url = %q\n[[ramp]]\nusers = 1\nhold_secs = 1\n", u.WS, u.HTTP)))
	if err != nil {
		t.Fatal(err)
	}
	var sink relayclienttest.CollectSink
	_, err = Teardown(context.Background(), sc, TeardownOptions{Operator: r.OperatorKeys(), Sink: &sink})
	if !errors.Is(err, ErrNoHostTemplate) {
		t.Fatalf("err = %v", err)
	}
	if len(sink.Results()) != 0 {
		t.Fatal("teardown without a template sent requests")
	}
}
