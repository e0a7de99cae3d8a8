package main

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/output/cloud/capture"
)

// --out cloud against a capture server, compared with what real k6 v1.8.1
// sent for the same script (testdata/cloud: k6's create and finish bodies
// and its metric push, captured from /work/tools/k6 with K6_CLOUD_HOST on
// 127.0.0.1; probe.js says how).

// probeTotals are the series of the script's own metrics (probe_*, checks)
// summed over periods; the built-ins carry timings that differ per run.
func probeTotals(t *testing.T, sets []capture.MetricSet) map[string]*capture.Total {
	t.Helper()
	out := map[string]*capture.Total{}
	for k, v := range capture.Totals(sets) {
		if strings.HasPrefix(k, "probe_") || strings.HasPrefix(k, "checks{") {
			out[k] = v
		}
	}
	return out
}

func TestCloudOutputSendsWhatK6Sends(t *testing.T) {
	srv := capture.StartT(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "probe.js")
	src, err := os.ReadFile("testdata/cloud/probe.js")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "tok-3f9a-never-printed"
	code, out, errs := runCLIEnv(t, []string{"K6_CLOUD_HOST=" + srv.URL, "K6_CLOUD_TOKEN=" + token,
		"K6_CLOUD_AGGREGATION_PERIOD=1s", "K6_CLOUD_AGGREGATION_WAIT_PERIOD=1s"},
		"run", "-q", "--out", "cloud", script)
	// k6 exits 99: p(95)<1000 on probe_trend is crossed.
	if code != 99 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, token) {
		t.Fatalf("the token was printed:\n%s\n%s", out, errs)
	}
	reqs := srv.Requests()
	if len(reqs) < 3 || reqs[0].Path != "/v1/tests" || reqs[len(reqs)-1].Path != "/v1/tests/4242" {
		t.Fatalf("requests: %v", paths(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "Token "+token || !strings.HasPrefix(r.Header.Get("User-Agent"), "k6cloud/2.2.0 (buzzload/") ||
			len(r.Header.Get("K6-Idempotency-Key")) != 16 {
			t.Fatalf("%s headers: %v", r.Path, r.Header)
		}
	}
	for _, x := range []struct {
		body   []byte
		golden string
	}{{reqs[0].Body, "k6-create.json"}, {reqs[len(reqs)-1].Body, "k6-finish.json"}} {
		want, err := os.ReadFile(filepath.Join("testdata/cloud", x.golden))
		if err != nil {
			t.Fatal(err)
		}
		if !equalJSONText(t, x.body, want) {
			t.Errorf("%s: got %s\nk6 sent %s", x.golden, x.body, want)
		}
	}
	var sets []capture.MetricSet
	for _, p := range srv.Pushes() {
		if p.Err != nil {
			t.Fatalf("push did not decode: %v", p.Err)
		}
		h := p.Header
		if h.Get("Content-Encoding") != "snappy" || h.Get("Content-Type") != "application/x-protobuf" || h.Get("K6-Metrics-Protocol-Version") != "2.0" {
			t.Fatalf("push headers: %v", h)
		}
		if p.Set.TestRunID != "4242" || p.Set.AggregationPeriod != 1 {
			t.Fatalf("push: test run %q, period %d", p.Set.TestRunID, p.Set.AggregationPeriod)
		}
		sets = append(sets, *p.Set)
	}
	k6raw, err := os.ReadFile("testdata/cloud/k6-push-1.bin")
	if err != nil {
		t.Fatal(err)
	}
	k6set, err := capture.Decode(k6raw)
	if err != nil {
		t.Fatalf("k6's push: %v", err)
	}
	got, want := probeTotals(t, sets), probeTotals(t, []capture.MetricSet{k6set})
	if len(want) < 8 {
		t.Fatalf("k6's push has only %d probe series", len(want))
	}
	// Sums of a Trend's values over periods differ in the last bits with
	// the order of addition: equal to 1e-12 is equal.
	for k, g := range got {
		if w := want[k]; w != nil && math.Abs(g.Sum-w.Sum) <= 1e-12*math.Abs(w.Sum) {
			g.Sum = w.Sum
		}
	}
	if !reflect.DeepEqual(got, want) {
		for _, k := range unionKeys(got, want) {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("%s:\n got  %+v\n k6's %+v", k, got[k], want[k])
			}
		}
	}
}

func paths(reqs []capture.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

func equalJSONText(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func unionKeys(a, b map[string]*capture.Total) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]*capture.Total{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// The test run's end as k6 v1.8.1 reports it (finish bodies observed with
// /work/tools/k6 against a capture server; the scripts are in
// testdata/cloud/status).
func TestCloudOutputFinishesTheRunAsK6Does(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		finish string
	}{
		{"abort-on-fail.js", 99, `{"result_status":1,"run_status":8,"thresholds":{"ab":{"count<3":true}}}`},
		{"test-abort.js", 108, `{"result_status":0,"run_status":5,"thresholds":{}}`},
		{"setup-throws.js", 107, `{"result_status":0,"run_status":7,"thresholds":{}}`},
		{"test-fail.js", 110, `{"result_status":1,"run_status":6,"thresholds":{"iterations":{"count>5":true}}}`},
	} {
		t.Run(c.script, func(t *testing.T) {
			srv := capture.StartT(t)
			code, out, errs := runCLIEnv(t, []string{"K6_CLOUD_HOST=" + srv.URL, "K6_CLOUD_TOKEN=x"},
				"run", "-q", "--out", "cloud", filepath.Join("testdata/cloud/status", c.script))
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, out, errs)
			}
			reqs := srv.Requests()
			last := reqs[len(reqs)-1]
			if last.Path != "/v1/tests/4242" || !equalJSONText(t, last.Body, []byte(c.finish)) {
				t.Fatalf("finish %s %s, k6 sends %s", last.Path, last.Body, c.finish)
			}
		})
	}
}

// A scenario file's test run is named after the file (not the script
// generated for it, <file>.toml.js), as k6 names it after the script.
func TestCloudOutputNamesAScenarioRunAfterItsFile(t *testing.T) {
	srv := capture.StartT(t)
	dir := copyTestdata(t, "ops-tiny.toml")
	code, _, errs := runBin(t, dir, []string{"K6_CLOUD_HOST=" + srv.URL, "K6_CLOUD_TOKEN=x"},
		"run", "-q", "-d", "2s", "--out", "cloud", "ops-tiny.toml")
	reqs := srv.Requests()
	if code != 0 || len(reqs) == 0 || reqs[0].Path != "/v1/tests" {
		t.Fatalf("exit %d, requests %v\n%s", code, paths(reqs), errs)
	}
	var create struct{ Name string }
	if err := json.Unmarshal(reqs[0].Body, &create); err != nil || create.Name != "ops-tiny.toml" {
		t.Fatalf("test run name %q (%v), want ops-tiny.toml", create.Name, err)
	}
}

// A cloud that takes no metrics leaves the run's exit alone but is a
// warning check in the Buzz report, with the totals (issue 43 L6). Fails
// without the fix: the report has no "output cloud" check.
func TestCloudThatGetsNoMetricsIsAWarningCheck(t *testing.T) {
	srv := capture.StartT(t)
	srv.RefusePushes(http.StatusInternalServerError, `{"error":{"code":9,"message":"no"}}`)
	dir := copyTestdata(t, "ops-tiny.toml")
	code, _, errs := runBin(t, dir, []string{"K6_CLOUD_HOST=" + srv.URL, "K6_CLOUD_TOKEN=x"},
		"run", "-q", "-d", "2s", "--out", "cloud", "--report", "rep.json", "ops-tiny.toml")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (the cloud's copy is not the run)\n%s", code, errs)
	}
	if !strings.Contains(errs, "no metrics reached the cloud") {
		t.Fatalf("stderr does not say it:\n%s", errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "rep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Checks []struct{ Name, Level, Detail string } `json:"checks"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.Name == "output cloud" {
			if c.Level != "warn" || !strings.Contains(c.Detail, "no metrics reached it") || !strings.Contains(c.Detail, "failed pushes") {
				t.Fatalf("check %+v", c)
			}
			return
		}
	}
	t.Fatalf("no output cloud check in %+v", rep.Checks)
}
