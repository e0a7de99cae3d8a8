package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/report"
)

// --relay-metrics URL reads a separate relay's Prometheus series through
// the run (issue 45): the console's line, the JSON report's relay_metrics
// (per series the start, end and delta, the clients' counts beside them)
// and the HTML page's section; the relay's stored events at least those
// it acknowledged. A relay that acknowledges events it does not store
// (the LoseAcked fault) fails "relay stored events", naming the kind,
// with exit 112.
func TestRelayMetricsBesideTheClients(t *testing.T) {
	for _, c := range []struct {
		name      string
		lose      bool
		wantCode  int
		wantLevel string
	}{
		{"stores what it acknowledged", false, 0, report.CheckPass},
		{"under-stores", true, ExitRelayEvidence, report.CheckFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := seedRelay(t)
			if c.lose {
				r.Faults().LoseAcked(9, 2) // the second chat message stored from now on: the seed's
			}
			path := writeScenario(t, r, "relmet", false)
			// No threads: every seeded chat message is a leaf, so the one
			// lost leaves the rest of the seed whole.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			flat := strings.NewReplacer("thread_roots_per_channel = 1", "thread_roots_per_channel = 0", "seed_replies = 3", "seed_replies = 0").Replace(string(raw))
			if err := os.WriteFile(path, []byte(flat), 0o600); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Dir(path)
			secret := r.OperatorKeys().SecretHex()
			url := "http://" + r.Addr() + "/metrics"
			code, out, errs := runBin(t, dir, []string{"TEST_OP_KEY=" + secret}, "run", "-q", "--report", filepath.Join(dir, "rep.json"),
				"--report-html", filepath.Join(dir, "rep.html"), "--relay-metrics", url, path)
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.wantCode, out, errs)
			}
			raw, err = os.ReadFile(filepath.Join(dir, "rep.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			m := rep.RelayMetrics
			if m == nil || len(m.Sources) != 1 || m.Sources[0].Source != url || m.Sources[0].Scrapes < 2 {
				t.Fatalf("relay_metrics %+v", m)
			}
			stored, _ := m.Delta(report.SeriesStored)
			if stored == 0 || m.Run.AcknowledgedByKind["9"] == 0 || m.Run.Connections == 0 {
				t.Fatalf("stored delta %v, clients %+v", stored, m.Run)
			}
			var check *report.Check
			for i := range rep.Checks {
				if rep.Checks[i].Name == "relay stored events" {
					check = &rep.Checks[i]
				}
			}
			if check == nil || check.Level != c.wantLevel || c.lose && !strings.Contains(check.Detail, "kind 9: ") {
				t.Fatalf("check %+v", check)
			}
			for _, ch := range rep.Checks {
				if (ch.Name == "relay connections" || ch.Name == "relay rejections") && ch.Level != report.CheckPass {
					t.Errorf("a finding on a relay the run has alone: %+v", ch) // every socket and refusal is the run's
				}
			}
			if !strings.Contains(out, "relay metrics ("+url+", ") || !strings.Contains(out, "events_stored_total +") {
				t.Errorf("the console lacks the relay metrics line:\n%s", out)
			}
			if c.lose {
				return
			}
			// The page (headless Chromium): the section, its table and the
			// two plots of the relay's numbers beside the clients'.
			ps := loadPage(t, filepath.Join(dir, "rep.html"), "", 1600, 8000)
			for _, want := range []string{"<h2>The relay's own numbers</h2>", "buzz_events_stored_total", `data-plot="relay-events-0"`, `data-plot="relay-conns-0"`, "clients: publishes acknowledged/s"} {
				if !strings.Contains(ps.dom, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
		})
	}
	// A source that is neither a URL nor kubectl:NS/SELECTOR:PORT is
	// refused before the run (104), naming the flag.
	dir := copyTestdata(t, "ops-tiny.toml")
	code, _, errs := runBin(t, dir, nil, "run", "--relay-metrics", "relay:9102", "ops-tiny.toml")
	if code != 104 || !strings.Contains(errs, "--relay-metrics") {
		t.Errorf("exit %d\n%s", code, errs)
	}
}
