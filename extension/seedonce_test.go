package extension_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/js"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relay/relaytest"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

func TestSeedRole(t *testing.T) {
	seg := func(s string) segment.Segment {
		t.Helper()
		g, err := segment.ParseSegment(s)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	none := scenario.Shard{}
	for _, c := range []struct {
		embedded bool
		seg      string
		shard    scenario.Shard
		want     string
	}{
		{false, "0:1", none, extension.RoleSeed},
		{false, "0:1/3", none, extension.RoleSeed},
		{false, "1/3:2/3", none, extension.RoleWait},
		{false, "2/3:1", none, extension.RoleWait},
		{true, "2/3:1", none, extension.RoleSeed}, // its own relay: nobody else seeds it
		{false, "0:1", scenario.Shard{Index: 0, Count: 4}, extension.RoleSeed},
		{false, "0:1", scenario.Shard{Index: 3, Count: 4}, extension.RoleWait},
	} {
		if got := extension.SeedRole(c.embedded, seg(c.seg), c.shard); got != c.want {
			t.Errorf("embedded=%v segment %s shard %+v: %s, want %s", c.embedded, c.seg, c.shard, got, c.want)
		}
	}
}

// sharedRelay runs one relay on loopback that several in-process runs
// target, as the runners of a distributed test share the deployment.
func sharedRelay(t *testing.T) *relay.Relay { return relaytest.Start(t, nil) }

const seedOnceTOML = `run_id = "seed-once"
[target]
ws_url = "ws://%[1]s"
http_url = "http://%[1]s"
[shape]
communities = 1
channels_per_community = 3
history_messages_per_channel = 6
thread_roots_per_channel = 1
thread_depth = 3
seed_concurrency = 2
[population]
humans = 4
agents = 0
channels_per_member = 3
[[ramp]]
users = 1
hold_secs = 5
`

const seedOnceJS = `import buzz from "k6/x/buzz";
const sc = buzz.load("./s.toml");
export const options = {
  scenarios: { s: { executor: "shared-iterations", vus: 2, iterations: 4, maxDuration: "20s" } },
  setupTimeout: "40s",
};
export function setup() {
  const r = sc.setup(__ENV.WAIT ? { waitTimeout: __ENV.WAIT } : undefined);
  console.log("SETUP role=" + r.role + " created=" + r.created + " existing=" + r.existing + " posts=" + r.posts);
  return r;
}
export default function () {}
`

// runSegment runs the script in-process as the instance of one execution
// segment of two.
func runSegment(t *testing.T, dir, seg string, env map[string]string) (engine.Result, string) {
	t.Helper()
	reg := jshost.NewRegistry()
	mod := extension.New(extension.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err := reg.Register(extension.ImportPath, mod); err != nil {
		t.Error(err)
		return engine.Result{}, ""
	}
	defer mod.Close()
	seq := "0,1/2,1"
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := engine.Run(ctx, engine.RunConfig{Script: filepath.Join(dir, "script.js"), Registry: reg, Helpers: js.FS, Quiet: true,
		SummaryMode: "disabled", Stdout: &out, Stderr: &errb, ScriptEnv: env,
		CLI: engine.Layer{Options: engine.Options{ExecutionSegment: &seg, ExecutionSegmentSequence: &seq}}})
	return res, errb.String()
}

// Two instances of one test on one relay: the second segment's instance,
// started first, waits; the first segment's seeds; both go on, and the relay
// holds one copy of each seeded post.
func TestSeedOnceAcrossSegments(t *testing.T) {
	r := sharedRelay(t)
	dir := t.TempDir()
	toml := fmt.Sprintf(seedOnceTOML, r.Addr())
	for name, body := range map[string]string{"s.toml": toml, "script.js": seedOnceJS} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type out struct {
		res    engine.Result
		stderr string
	}
	var wg sync.WaitGroup
	got := map[string]out{}
	var mu sync.Mutex
	for i, seg := range []string{"1/2:1", "0:1/2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 700 * time.Millisecond) // the waiter is well into its wait
			res, stderr := runSegment(t, dir, seg, nil)
			mu.Lock()
			got[seg] = out{res, stderr}
			mu.Unlock()
		}()
	}
	wg.Wait()
	seeder, waiter := got["0:1/2"], got["1/2:1"]
	if seeder.res.ExitCode != 0 || waiter.res.ExitCode != 0 {
		t.Fatalf("exits %d and %d\nseeder:\n%s\nwaiter:\n%s", seeder.res.ExitCode, waiter.res.ExitCode, seeder.stderr, waiter.stderr)
	}
	// 3 channels × (6 history + 1 root + 3 replies) = 30 posts, plus 3 channels.
	if !strings.Contains(seeder.stderr, "SETUP role=seed created=33 existing=0 posts=30") {
		t.Errorf("seeder's setup:\n%s", seeder.stderr)
	}
	if !strings.Contains(waiter.stderr, "SETUP role=wait created=0 existing=33 posts=30") ||
		!strings.Contains(waiter.stderr, "waiting up to") || !strings.Contains(waiter.stderr, "is complete") {
		t.Errorf("waiter's setup:\n%s", waiter.stderr)
	}

	sc, err := scenario.Parse("s.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: sc.Target.WSURL, HTTPURL: sc.Target.HTTPURL},
		Keys: sc.OwnerKeys(0)})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, ch := range sc.Channels() {
		evs, res := h.Query(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
			Tags: map[string][]string{"h": {sc.ChannelID(ch)}}, Limit: 1000}}, relayclient.CallOptions{})
		if res.Outcome != relayclient.OutcomeOK {
			t.Fatal(res.Error)
		}
		copies := map[string]int{}
		for _, e := range evs {
			copies[e.Content]++
		}
		for c, n := range copies {
			if n != 1 {
				t.Errorf("channel %v: %d copies of %q", ch, n, c)
			}
		}
		total += len(evs)
	}
	if total != 30 {
		t.Errorf("%d posts on the relay, want the 30 seeded once", total)
	}
}

// A waiting instance whose seeder never comes fails its setup at its bound,
// naming the gap and who should have seeded.
func TestSeedOnceWaiterIsBounded(t *testing.T) {
	r := sharedRelay(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"s.toml": fmt.Sprintf(seedOnceTOML, r.Addr()), "script.js": seedOnceJS} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res, stderr := runSegment(t, dir, "1/2:1", map[string]string{"WAIT": "1s"})
	if res.ExitCode == 0 || !strings.Contains(stderr, `waited 1s for the fixture of run_id \"seed-once\"`) ||
		!strings.Contains(stderr, "execution segment starts at 0") || !strings.Contains(stderr, "is not on the relay") {
		t.Fatalf("exit %d:\n%s", res.ExitCode, stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the bounded wait took %s", d)
	}
	if n := r.Stats().EventsAccepted; n != 0 {
		t.Errorf("the waiter wrote %d events", n)
	}
}
