package seed

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relay/relaytest"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// startRelay runs an in-process relay for one test (relaytest.Start). Rate
// limits are off unless mutate turns them on: the shapes here are small, but
// the owner signs every 9007 and 9000 of its community.
func startRelay(t *testing.T, mutate func(*relay.Config)) *relay.Relay {
	return relaytest.Start(t, mutate)
}

// shape is the TOML body after [target]; the default is small and private.
const privateShape = `
[shape]
communities = 2
channels_per_community = 3
history_messages_per_channel = 4
thread_roots_per_channel = 2
thread_depth = 3
private_channels = true
seed_concurrency = 4

[population]
humans = 6
agents = 2
channels_per_member = 2

[hot_thread]
seed_replies = 5
authors = 2

[[ramp]]
users = 1
hold_secs = 10
`

// scenarioFor builds a scenario aimed at r with a host template, run id and
// the given shape.
func scenarioFor(t *testing.T, r *relay.Relay, runID, shape string) *scenario.Scenario {
	t.Helper()
	addr := r.Addr()
	src := fmt.Sprintf(`run_id = %q
[target]
ws_url = "ws://%s"
http_url = "http://%s"
connect_addr = %q
community_host_template = "c{n}.{run}.test"
`, runID, addr, addr, addr) + shape
	sc, err := scenario.Parse("test.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// ownerHTTP is community c's owner as an HTTP client (reads as a member).
func ownerHTTP(t *testing.T, sc *scenario.Scenario, c int) *relayclient.HTTP {
	t.Helper()
	ep := sc.Endpoint(c)
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{
		Target: relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr},
		Keys:   sc.OwnerKeys(c)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// operatorHTTP is the relay's operator as an HTTP client.
func operatorHTTP(t *testing.T, r *relay.Relay, k *nostr.Keys) *relayclient.HTTP {
	t.Helper()
	u := r.URLs()
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: u.WS, HTTPURL: u.HTTP}, Keys: k,
		OperatorOrigin: r.OperatorOrigin()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func query(t *testing.T, h *relayclient.HTTP, f relayclient.Filter) []nostr.Event {
	t.Helper()
	if f.Limit == 0 {
		f.Limit = 2000
	}
	evs, res := h.Query(context.Background(), []relayclient.Filter{f}, relayclient.CallOptions{})
	if res.Outcome != relayclient.OutcomeOK {
		t.Fatalf("query: %s", res.Error)
	}
	return evs
}

// members reads a channel's 39002 member list as its owner.
func members(t *testing.T, sc *scenario.Scenario, ch scenario.Channel) map[string]bool {
	t.Helper()
	evs := query(t, ownerHTTP(t, sc, ch.Community), relayclient.Filter{Kinds: []int{nostr.KindGroupMembers},
		Tags: map[string][]string{"d": {sc.ChannelID(ch)}}, Limit: 1})
	out := map[string]bool{}
	if len(evs) == 0 {
		return out
	}
	for _, tg := range evs[0].Tags {
		if len(tg) >= 2 && tg[0] == "p" {
			out[tg[1]] = true
		}
	}
	return out
}

// posts reads a channel's kind-9 events as its owner.
func posts(t *testing.T, sc *scenario.Scenario, ch scenario.Channel) []nostr.Event {
	t.Helper()
	return query(t, ownerHTTP(t, sc, ch.Community), relayclient.Filter{Kinds: []int{nostr.KindStreamMessage},
		Tags: map[string][]string{"h": {sc.ChannelID(ch)}}})
}

func runSeed(t *testing.T, r *relay.Relay, sc *scenario.Scenario, sink relayclient.Sink) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Seed(ctx, sc, Options{Operator: r.OperatorKeys(), Sink: sink})
}

// kindLog records the kinds a subscription receives, in arrival order.
type kindLog struct {
	mu    sync.Mutex
	kinds []int
}

func (l *kindLog) add(k int) {
	l.mu.Lock()
	l.kinds = append(l.kinds, k)
	l.mu.Unlock()
}

func (l *kindLog) snapshot() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.kinds...)
}

func countKind(ks []int, k int) int {
	n := 0
	for _, x := range ks {
		if x == k {
			n++
		}
	}
	return n
}

func mustContain(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, x := range subs {
		if !strings.Contains(s, x) {
			t.Errorf("%q does not contain %q", s, x)
		}
	}
}
