package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/archive"
	"github.com/buzzload/buzzload/engine/output/cloud/capture"
)

// `cloud run --local-execution` against the capture server's v6 and
// provisioning stand-in, compared with what real k6 v2.2.0 did against the
// same stand-in for testdata/cloud/probe.js: the same calls in the same
// order, the same start body (testdata/cloud/k6-v2.2.0-start-local-
// execution.json, archive size apart), pushes to the URL the cloud gave
// with the test run's token, log lines streamed before the notify.

func cloudRunEnv(srv *capture.Server, extra ...string) []string {
	return append([]string{"K6_CLOUD_TOKEN=tok-user-never-printed", "K6_CLOUD_STACK_ID=9", "K6_CLOUD_HOST=" + srv.URL,
		"K6_CLOUD_HOST_V6=" + srv.URL}, extra...)
}

func writeProbe(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probe.js")
	if src == "" {
		b, err := os.ReadFile("testdata/cloud/probe.js")
		if err != nil {
			t.Fatal(err)
		}
		src = string(b)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCloudRunLocalExecutionAsK6Does(t *testing.T) {
	srv := capture.StartT(t)
	srv.RunStatuses = []string{"created", "initializing"} // one poll before it is ready, as the cloud prepares it
	code, out, errs := runCLIEnv(t, cloudRunEnv(srv), "cloud", "run", "--local-execution", writeProbe(t, ""))
	if code != 99 { // the probe crosses a threshold: k6 exits 99 too
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, "never-printed") {
		t.Fatalf("a token was printed:\n%s\n%s", out, errs)
	}
	if !strings.Contains(out, "output: cloud ("+srv.URL+"/runs/4242)") {
		t.Errorf("banner:\n%s", out)
	}
	reqs := srv.Requests()
	var calls []string
	for _, r := range reqs {
		c := r.Method + " " + r.Path
		if len(calls) > 0 && calls[len(calls)-1] == c {
			continue // repeated polls and pushes
		}
		calls = append(calls, c)
	}
	want := []string{"POST /cloud/v6/projects/77/load_tests", "POST /provisioning/v1/load_tests/501/start_local_execution",
		"PUT /archive-upload/4242", "GET /cloud/v6/test_runs/4242", "POST /v2/metrics/4242", "POST /provisioning/v1/test_runs/4242/notify"}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls:\n%s\nk6 v2.2.0 made:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range reqs[:2] {
		if r.Header.Get("Authorization") != "Bearer tok-user-never-printed" || r.Header.Get("X-Stack-Id") != "9" {
			t.Errorf("%s: auth %q stack %q", r.Path, r.Header.Get("Authorization"), r.Header.Get("X-Stack-Id"))
		}
	}
	var got, k6 map[string]any
	if err := json.Unmarshal(reqs[1].Body, &got); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("testdata/cloud/k6-v2.2.0-start-local-execution.json")
	if err := json.Unmarshal(b, &k6); err != nil {
		t.Fatal(err)
	}
	delete(got, "archive_size")
	delete(k6, "archive_size")
	if !reflect.DeepEqual(got, k6) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(k6)
		t.Errorf("start body:\n%s\nk6 v2.2.0 sent:\n%s", g, w)
	}
	a, err := archive.Read(bytes.NewReader(reqs[2].Body))
	if err != nil || !strings.HasSuffix(a.Metadata.Script, "probe.js") {
		t.Errorf("the upload is not the test's archive: %v", err)
	}
	pushes := srv.Pushes()
	if len(pushes) == 0 || pushes[0].Set == nil {
		t.Fatal("no decodable push")
	}
	for _, p := range pushes {
		if p.Header.Get("Authorization") != "Bearer "+capture.TestRunToken || p.Header.Get("K6-Idempotency-Key") != "" {
			t.Errorf("push headers %v", p.Header)
		}
	}
	if totals := probeTotals(t, pushSets(pushes)); len(totals) == 0 {
		t.Errorf("the pushes carry no probe series")
	}
	if n := reqs[len(reqs)-1]; string(n.Body) != `{"error":null,"event_type":"script_execution_completed"}` ||
		n.Header.Get("Authorization") != "Bearer "+capture.TestRunToken {
		t.Errorf("notify %s %v", n.Body, n.Header)
	}
}

func pushSets(reqs []capture.Request) []capture.MetricSet {
	var out []capture.MetricSet
	for _, r := range reqs {
		if r.Set != nil {
			out = append(out, *r.Set)
		}
	}
	return out
}

// Log lines go to the cloud's log endpoint before the notify, each the
// message then its fields sorted, level among them (as k6 v2.2.0 sent
// them); an aborted run's notify carries k6's code and the reason.
func TestCloudRunStreamsLogsAndNotifiesAnAbort(t *testing.T) {
	srv := capture.StartT(t)
	script := writeProbe(t, `import exec from 'k6/execution';
export const options = { iterations: 2, cloud: { name: 'logs probe', projectID: 77 } };
export default function () {
  console.log('hello from', exec.vu.idInTest, 'run', __ENV.K6_CLOUDRUN_TEST_RUN_ID);
  if (exec.scenario.iterationInTest === 1) { exec.test.abort('enough'); }
}
`)
	code, out, errs := runCLIEnv(t, cloudRunEnv(srv), "cloud", "run", "--local-execution", "-q", script)
	if code != 108 {
		t.Fatalf("exit %d, want exec.test.abort's 108\n%s\n%s", code, out, errs)
	}
	reqs := srv.Requests()
	var logs []string
	notified := -1
	for i, r := range reqs {
		switch {
		case r.Path == "/loki/api/v1/push":
			if notified >= 0 {
				t.Errorf("log lines pushed after the notify")
			}
			var body struct {
				Streams []struct {
					Stream map[string]string `json:"stream"`
					Values [][2]string       `json:"values"`
				} `json:"streams"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Streams) != 1 || body.Streams[0].Stream["test_run_id"] != "4242" {
				t.Fatalf("log push %s (%v)", r.Body, err)
			}
			for _, v := range body.Streams[0].Values {
				logs = append(logs, v[1])
			}
		case strings.HasSuffix(r.Path, "/notify"):
			notified = i
			var n struct {
				Error *struct {
					Code   int    `json:"code"`
					Reason string `json:"reason"`
				} `json:"error"`
				EventType string `json:"event_type"`
			}
			if err := json.Unmarshal(r.Body, &n); err != nil || n.Error == nil || n.Error.Code != 8036 || !strings.Contains(n.Error.Reason, "enough") {
				t.Errorf("notify %s", r.Body)
			}
		}
	}
	if notified < 0 || !strings.Contains(strings.Join(logs, "\n"), "hello from 1 run 4242 level=info source=console") {
		t.Errorf("notified at %d; log lines %q", notified, logs)
	}
}

// A start without an upload URL: k6's warning, no upload, the run goes on.
func TestCloudRunWithoutAnUploadURLWarnsAndRuns(t *testing.T) {
	srv := capture.StartT(t)
	srv.NoArchiveUpload = true
	code, out, errs := runCLIEnv(t, cloudRunEnv(srv), "cloud", "run", "--local-execution", "-q", writeProbe(t, ""))
	if code != 99 || !strings.Contains(errs, "archive present but provisioning API returned no upload URL; skipping archive upload") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, r := range srv.Requests() {
		if r.Method == "PUT" {
			t.Errorf("uploaded to %s", r.Path)
		}
	}
}

func TestCloudRunRefusals(t *testing.T) {
	srv := capture.StartT(t)
	script := writeProbe(t, "")
	for _, tc := range []struct {
		rule string
		env  []string
		args []string
		code int
		want string
	}{
		{"no stack", []string{"K6_CLOUD_TOKEN=tok", "K6_CLOUD_HOST_V6=" + srv.URL}, []string{"--local-execution"}, 255,
			"Running cloud tests requires auth settings: stack ID not configured."},
		{"no token", []string{"K6_CLOUD_STACK_ID=9", "K6_CLOUD_HOST_V6=" + srv.URL}, []string{"--local-execution"}, 255,
			"Running cloud tests requires auth settings: access token not configured."},
		{"exit-on-running", cloudRunEnv(srv), []string{"--local-execution", "--exit-on-running"}, 104,
			"the --local-execution flag is not compatible with the --exit-on-running flag"},
	} {
		code, out, errs := runCLIEnv(t, tc.env, append(append([]string{"cloud", "run"}, tc.args...), script)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, want %d and %q\n%s\n%s", tc.rule, code, tc.code, tc.want, out, errs)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests for refused runs", n)
	}
	// A test run the cloud aborts before it starts: k6's text, exit 255;
	// an existing load test is found by its name after the 409.
	srv.LoadTestExists, srv.RunStatuses = true, []string{"aborted"}
	code, _, errs := runCLIEnv(t, cloudRunEnv(srv), "cloud", "run", "--local-execution", script)
	if code != 255 || !strings.Contains(errs, "could not create the cloud test run: wait for test run ready: test run aborted before starting") {
		t.Errorf("aborted before start: exit %d\n%s", code, errs)
	}
	reqs := srv.Requests()
	if len(reqs) < 2 || reqs[1].Method != "GET" || reqs[1].Path != "/cloud/v6/projects/77/load_tests" {
		t.Errorf("the existing load test was not looked up: %v", paths(reqs))
	}
}

// Without --local-execution the test runs on the cloud's k6, as k6 v2.2.0's
// `cloud run` does against the same stand-in: options validated, the
// archive uploaded as the load test's script, the load test started, its
// run followed to the end; the exit code from the cloud's result (k6:
// passed 0, failed 99 "Thresholds have been crossed", error 97 "The test
// has failed").
func TestCloudRunRemoteAsK6Does(t *testing.T) {
	script := writeProbe(t, "")
	for _, tc := range []struct {
		result string
		code   int
		want   string
	}{{"passed", 0, ""}, {"failed", 99, "Thresholds have been crossed"}, {"error", 97, "The test has failed"}} {
		srv := capture.StartT(t)
		srv.RunStatuses, srv.RunResult = []string{"running", "completed"}, tc.result
		code, out, errs := runCLIEnv(t, cloudRunEnv(srv), "cloud", "run", script)
		if code != tc.code || !strings.Contains(errs, tc.want) || !strings.Contains(out, "test status: Finished") {
			t.Errorf("result %s: exit %d, want %d and %q\n%s\n%s", tc.result, code, tc.code, tc.want, out, errs)
		}
		if strings.Contains(out+errs, "never-printed") {
			t.Errorf("a token was printed")
		}
		reqs := srv.Requests()
		var calls []string
		for _, r := range reqs {
			if c := r.Method + " " + r.Path; len(calls) == 0 || calls[len(calls)-1] != c {
				calls = append(calls, c)
			}
		}
		want := []string{"POST /cloud/v6/validate_options", "POST /cloud/v6/projects/77/load_tests", "POST /cloud/v6/load_tests/501/start", "GET /cloud/v6/test_runs/4242"}
		if !reflect.DeepEqual(calls, want) {
			t.Fatalf("calls %v, k6 v2.2.0 made %v", calls, want)
		}
		if strings.Contains(string(reqs[0].Body), "never-printed") || !strings.Contains(string(reqs[0].Body), `"is_local_execution":false`) {
			t.Errorf("validate body %s", reqs[0].Body)
		}
		if !bytes.Contains(reqs[1].Body, []byte(`name="script"; filename="script"`)) {
			t.Errorf("the archive is not the upload's script part")
		}
	}
}
