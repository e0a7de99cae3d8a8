package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/report"
)

// A distributed run on three runners (execution segments) against one
// relay: each runner journals its ledger beside its result file and merge
// joins them, so a message published on one runner and due to members on
// the others is judged once. The relay drops chosen live deliveries (a
// test fault): the merged ledger's missed pairs are exactly the dropped
// ones (none it delivered, every one unless counted unjudged), and it
// holds more pairs than the runners' own ledgers together (the pairs that
// cross runners). Fails without the journal and its join (merge adds up
// the runners' own ledgers, which miss the crossing drops).
func TestMergeJoinsTheRunnersLedgers(t *testing.T) {
	r := seedRelay(t)
	dir := t.TempDir()
	addr := r.Addr()
	toml := fmt.Sprintf(`run_id = "ledger3"
[target]
ws_url = "ws://%s"
http_url = "http://%s"
connect_addr = %q
community_host_template = "c{n}.{run}.test"
operator_key_env = "TEST_OP_KEY"
[shape]
communities = 1
channels_per_community = 2
history_messages_per_channel = 0
thread_roots_per_channel = 0
[population]
humans = 6
agents = 0
channels_per_member = 2
connect_rate_per_sec = 100
[human]
history_limit = 0
presence_interval_secs = 1
messages_per_hour = 3600
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 6
[abort]
max_p99_ms = 1000
`, addr, addr, addr)
	path := filepath.Join(dir, "ledger3.toml")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TEST_OP_KEY=" + r.OperatorKeys().SecretHex()}
	if code, out, errs := runWith(t, env, "seed", "-q", path); code != 0 {
		t.Fatalf("seed: %d\n%s\n%s", code, out, errs)
	}
	r.Faults().DropDeliveries(nostr.KindStreamMessage, 4, 5)
	segs := []string{"0:1/3", "1/3:2/3", "2/3:1"}
	codes, errs := runTogether(t, env, dir, path, "0,1/3,2/3,1", segs, 4*time.Second)
	drops := r.Faults().Dropped()
	if len(drops) != 5 {
		t.Fatalf("the relay dropped %d deliveries (runner exits %v)", len(drops), codes)
	}
	var own int64
	for i := range segs {
		if codes[i] != 0 && codes[i] != ExitRelayEvidence {
			t.Fatalf("runner %d: exit %d\n%s", i, codes[i], errs[i])
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("r%d.json.ledger", i))); err != nil {
			t.Fatalf("runner %d wrote no journal: %v", i, err)
		}
		var rep report.Report
		if err := json.Unmarshal(readResult(t, filepath.Join(dir, fmt.Sprintf("r%d.json", i))).Buzz, &rep); err != nil || rep.Ledger == nil {
			t.Fatalf("runner %d: no ledger (%v)", i, err)
		}
		own += rep.Ledger.Expected
	}
	code, out, stderr := runWith(t, nil, "merge", "-o", filepath.Join(dir, "merged.json"),
		filepath.Join(dir, "r0.json"), filepath.Join(dir, "r1.json"), filepath.Join(dir, "r2.json"))
	var m report.Report
	if err := json.Unmarshal(readResult(t, filepath.Join(dir, "merged.json")).Buzz, &m); err != nil {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, stderr)
	}
	lg := m.Ledger
	if lg == nil || lg.Joined != 3 {
		t.Fatalf("merged ledger not joined: %+v (warnings %v)", lg, m.Warnings)
	}
	if lg.Expected <= own {
		t.Errorf("joined ledger holds %d pairs, the runners' own %d: no pair crosses runners", lg.Expected, own)
	}
	want := map[[2]string]bool{}
	for _, d := range drops {
		want[[2]string{d.Event, d.Recipient}] = true
	}
	found := 0
	for _, ms := range lg.Missed {
		if !want[[2]string{ms.Event, ms.Recipient}] {
			t.Errorf("missed %s → %s, which the relay delivered", ms.Event, ms.Recipient)
			continue
		}
		found++
	}
	if int64(found)+lg.Unjudged < int64(len(want)) || found == 0 {
		t.Errorf("missed %d of %d dropped deliveries (%d unjudged): %+v", found, len(want), lg.Unjudged, lg.Missed)
	}
	if m.OK || code != ExitRelayEvidence || !strings.Contains(out, "ledger: reach") {
		t.Errorf("merge passed a run with lost deliveries: exit %d ok %v\n%s", code, m.OK, out)
	}
	// The page: the ledger per step and the lost pairs by id.
	page := filepath.Join(dir, "merged.html")
	if code, _, stderr := runWith(t, nil, "report", "-o", page, filepath.Join(dir, "merged.json")); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	ps := loadPage(t, page, "", 1600, 6000)
	if !strings.Contains(ps.dom, "<h2>Delivery ledger</h2>") || !strings.Contains(ps.dom, "3 runners joined") ||
		(len(lg.Missed) > 0 && !strings.Contains(ps.dom, lg.Missed[0].Event)) {
		t.Errorf("the page lacks the ledger, the join or the lost pair")
	}
}

// runTogether runs path's execution segments (of sequence) in process,
// together from delay from now, without setup, each writing dir/r<i>.json,
// and returns their exit codes and stderrs.
func runTogether(t *testing.T, env []string, dir, path, sequence string, segs []string, delay time.Duration) ([]int, []string) {
	t.Helper()
	at := time.Now().Add(delay).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	codes, errs := make([]int, len(segs)), make([]string, len(segs))
	for i, seg := range segs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = runWith(t, env, "run", "-q", "--no-setup", "--execution-segment", seg,
				"--execution-segment-sequence", sequence, "--start-at", at,
				"--result", filepath.Join(dir, fmt.Sprintf("r%d.json", i)), path)
		}()
	}
	wg.Wait()
	return codes, errs
}
