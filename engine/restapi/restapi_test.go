package restapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/internal/waitfor"
)

// starterBody is exactly what k6-operator's starter sends (curl_start.go).
const starterBody = `{"data":{"attributes":{"paused":false,"stopped":false},"id":"default","type":"status"}}`

// stopperBody is what its stopper sends (curl_stop.go).
const stopperBody = `{"data":{"attributes":{"paused":false,"stopped":true},"id":"default","type":"status"}}`

// live is a real engine run served by the API on an httptest server.
type live struct {
	t      *testing.T
	srv    *httptest.Server
	ctl    *engine.Control
	done   chan engine.Result
	stderr logFile
	dir    string
}

func startRun(t *testing.T, src string, paused bool, mut func(*engine.RunConfig)) *live {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "script.js")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	l := &live{t: t, ctl: engine.NewControl(paused), done: make(chan engine.Result, 1), stderr: logFile{logf}, dir: dir}
	cfg := engine.RunConfig{Script: p, Registry: jshost.NewRegistry(), Quiet: true, SummaryMode: "compact",
		Stdout: io.Discard, Stderr: l.stderr, Control: l.ctl, ScriptEnv: map[string]string{"DIR": dir}}
	if mut != nil {
		mut(&cfg)
	}
	l.srv = httptest.NewServer(Handler(l.ctl))
	t.Cleanup(l.srv.Close)
	go func() { l.done <- engine.Run(context.Background(), cfg) }()
	return l
}

func (l *live) do(method, path, body string) (int, map[string]any, string) {
	l.t.Helper()
	req, err := http.NewRequest(method, l.srv.URL+path, strings.NewReader(body))
	if err != nil {
		l.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &doc); err != nil {
			l.t.Fatalf("%s %s: body %q is not JSON: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, doc, string(b)
}

func attrs(doc map[string]any) map[string]any {
	d, _ := doc["data"].(map[string]any)
	a, _ := d["attributes"].(map[string]any)
	return a
}

// waitStatus polls GET /v1/status until cond holds (bounded).
func (l *live) waitStatus(cond func(a map[string]any) bool) map[string]any {
	l.t.Helper()
	var got map[string]any
	waitfor.Until(l.t, "the expected status", 20*time.Second, func() bool {
		code, doc, _ := l.do(http.MethodGet, "/v1/status", "")
		got = attrs(doc)
		return code == http.StatusOK && cond(got)
	})
	return got
}

func (l *live) result() engine.Result {
	l.t.Helper()
	select {
	case r := <-l.done:
		return r
	case <-time.After(60 * time.Second):
		l.t.Fatal("the run did not end")
	}
	return engine.Result{}
}

// logFile is the run's stderr: a file, which the run writes and the test
// reads at any time without a lock.
type logFile struct{ *os.File }

func (f logFile) String() string {
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

const pausedScript = `
import { Counter } from "k6/metrics";
import { group, check } from "k6";
const ran = new Counter("setup_ran");
export const options = { vus: 2, iterations: 4 };
export function setup() { ran.add(1); return { from: "setup" }; }
export default function (data) {
  group("g", () => { check(data, { "has from": (d) => d.from === "setup" }); });
}`

func TestPausedRunInitialisesVUsAndWaitsForTheStartersPatch(t *testing.T) {
	l := startRun(t, pausedScript, true, nil)
	a := l.waitStatus(func(a map[string]any) bool { return a["status"] == float64(engine.StatusPausedBeforeRun) })
	if a["paused"] != true || a["vus-max"] != float64(2) || a["vus"] != float64(0) || a["running"] != false || a["stopped"] != false || a["tainted"] != false {
		t.Fatalf("paused status %v: want paused, both VUs initialised, none active, not running", a)
	}
	// Setup has not run while paused.
	if code, _, _ := l.do(http.MethodGet, "/v1/metrics/setup_ran", ""); code != http.StatusNotFound {
		t.Fatalf("setup_ran answered %d while paused: setup must wait for the resume", code)
	}
	code, doc, _ := l.do(http.MethodPatch, "/v1/status", starterBody)
	if code != http.StatusOK || attrs(doc)["paused"] != false {
		t.Fatalf("resume: %d %v", code, doc)
	}
	res := l.result()
	if res.ExitCode != engine.ExitOK {
		t.Fatalf("exit %d (%v)", res.ExitCode, res.Err)
	}
	a = l.waitStatus(func(a map[string]any) bool { return true })
	if a["status"] != float64(engine.StatusEnded) || a["running"] != false {
		t.Fatalf("after the end: %v", a)
	}
	// A second resume is k6's "Pause error" (500).
	if code, doc, _ := l.do(http.MethodPatch, "/v1/status", starterBody); code != http.StatusInternalServerError || !strings.Contains(docErr(doc), "Pause error") {
		t.Fatalf("second resume: %d %v", code, doc)
	}
	// Metrics: setup ran once, iterations counted, trends as k6 shows them.
	code, doc, _ = l.do(http.MethodGet, "/v1/metrics/setup_ran", "")
	if s := attrs(doc)["sample"].(map[string]any); code != http.StatusOK || s["count"] != float64(1) || attrs(doc)["type"] != "counter" {
		t.Fatalf("setup_ran: %d %v", code, doc)
	}
	code, doc, _ = l.do(http.MethodGet, "/v1/metrics", "")
	list, _ := doc["data"].([]any)
	found := map[string]map[string]any{}
	for _, m := range list {
		mm := m.(map[string]any)
		found[mm["id"].(string)] = mm["attributes"].(map[string]any)
	}
	if it := found["iterations"]; code != http.StatusOK || it == nil || it["sample"].(map[string]any)["count"] != float64(4) {
		t.Fatalf("iterations in /v1/metrics: %v", found["iterations"])
	}
	if d := found["iteration_duration"]; d == nil || d["contains"] != "time" || len(d["sample"].(map[string]any)) != 6 || d["tainted"] != nil {
		t.Fatalf("iteration_duration: %v", d)
	}
}

func docErr(doc map[string]any) string {
	b, _ := json.Marshal(doc["errors"])
	return string(b)
}

func TestGroupsAreListedWithMD5IdsAndTheirChecks(t *testing.T) {
	l := startRun(t, pausedScript, false, nil)
	if res := l.result(); res.ExitCode != 0 {
		t.Fatalf("exit %d %v", res.ExitCode, res.Err)
	}
	code, doc, _ := l.do(http.MethodGet, "/v1/groups", "")
	list, _ := doc["data"].([]any)
	if code != http.StatusOK || len(list) != 2 {
		t.Fatalf("groups: %d %v", code, doc)
	}
	root, g := list[0].(map[string]any), list[1].(map[string]any)
	// md5("") and md5("::g"), as k6 names groups.
	if root["id"] != "d41d8cd98f00b204e9800998ecf8427e" || g["id"] != md5Hex("::g") {
		t.Fatalf("ids %v %v", root["id"], g["id"])
	}
	ga := g["attributes"].(map[string]any)
	checks, _ := ga["checks"].([]any)
	if ga["path"] != "::g" || ga["name"] != "g" || len(checks) != 1 || checks[0].(map[string]any)["passes"] != float64(4) {
		t.Fatalf("group ::g: %v", ga)
	}
	parent := g["relationships"].(map[string]any)["parent"].(map[string]any)["data"].(map[string]any)
	if parent["id"] != root["id"] {
		t.Fatalf("parent of ::g: %v", parent)
	}
	if code, doc, _ := l.do(http.MethodGet, "/v1/groups/"+md5Hex("::g"), ""); code != http.StatusOK || attrs(doc)["path"] != "::g" {
		t.Fatalf("one group: %d %v", code, doc)
	}
	if code, _, _ := l.do(http.MethodGet, "/v1/groups/nope", ""); code != http.StatusNotFound {
		t.Fatalf("unknown group: %d", code)
	}
}

func TestStopEndsTheRunWith103AndStillRunsTeardownAndSummary(t *testing.T) {
	src := `
export const options = { vus: 1, duration: "30s" };
export default function () {}
export function teardown() { console.log("teardown ran"); }
export function handleSummary(data) { return { [__ENV.DIR + "/summary.json"]: JSON.stringify(data) }; }`
	l := startRun(t, src, true, nil)
	l.waitStatus(func(a map[string]any) bool { return a["status"] == float64(engine.StatusPausedBeforeRun) })
	if code, _, _ := l.do(http.MethodPatch, "/v1/status", starterBody); code != http.StatusOK {
		t.Fatalf("resume: %d", code)
	}
	l.waitStatus(func(a map[string]any) bool { return a["running"] == true })
	// The documents are read while the VUs run (go test -race covers it).
	for _, p := range []string{"/v1/metrics", "/v1/groups", "/v1/setup"} {
		if code, _, body := l.do(http.MethodGet, p, ""); code != http.StatusOK {
			t.Fatalf("GET %s while running: %d %s", p, code, body)
		}
	}
	code, doc, _ := l.do(http.MethodPatch, "/v1/status", stopperBody)
	if code != http.StatusOK || attrs(doc)["stopped"] != true {
		t.Fatalf("stop: %d %v", code, doc)
	}
	res := l.result()
	if res.ExitCode != engine.ExitStoppedByAPI || res.Err == nil || res.Err.Error() != "test run stopped from REST API" {
		t.Fatalf("exit %d (%v), want 103", res.ExitCode, res.Err)
	}
	if !strings.Contains(l.stderr.String(), "teardown ran") {
		t.Errorf("teardown did not run after the stop; stderr:\n%s", l.stderr.String())
	}
	if !strings.Contains(l.stderr.String(), `level=error msg="test run stopped from REST API"`) {
		t.Errorf("stderr lacks k6's stop line:\n%s", l.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(l.dir, "summary.json")); err != nil {
		t.Errorf("handleSummary did not run after the stop: %v", err)
	}
}

func TestStopWhilePausedEndsWith103WithoutSetup(t *testing.T) {
	l := startRun(t, pausedScript, true, nil)
	l.waitStatus(func(a map[string]any) bool { return a["status"] == float64(engine.StatusPausedBeforeRun) })
	l.do(http.MethodPatch, "/v1/status", stopperBody)
	if res := l.result(); res.ExitCode != engine.ExitStoppedByAPI {
		t.Fatalf("exit %d (%v)", res.ExitCode, res.Err)
	}
	if code, _, _ := l.do(http.MethodGet, "/v1/metrics/setup_ran", ""); code != http.StatusNotFound {
		t.Fatalf("setup ran although the run was stopped before its start")
	}
}

func TestStatusCodesOfBadRequests(t *testing.T) {
	l := startRun(t, pausedScript, true, nil)
	defer func() { l.do(http.MethodPatch, "/v1/status", stopperBody); l.result() }()
	l.waitStatus(func(a map[string]any) bool { return a["status"] == float64(engine.StatusPausedBeforeRun) })
	cases := []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPatch, "/v1/status", `{"data":`, http.StatusBadRequest},
		{http.MethodPatch, "/v1/status", `{"data":{"attributes":{"vus":3}}}`, http.StatusInternalServerError}, // no externally-controlled scenario
		{http.MethodPatch, "/v1/status", `{"data":{"attributes":{"vus-max":3}}}`, http.StatusInternalServerError},
		{http.MethodPost, "/v1/status", "", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/v1/setup", "", http.StatusMethodNotAllowed},
		{http.MethodGet, "/v1/teardown", "", http.StatusMethodNotAllowed},
		{http.MethodPost, "/v1/metrics", "", http.StatusMethodNotAllowed},
		{http.MethodGet, "/v2/status", "", http.StatusNotFound},
		{http.MethodGet, "/v1/metrics/no_such_metric", "", http.StatusNotFound},
		{http.MethodPut, "/v1/setup", `{not json`, http.StatusBadRequest},
		// A paused runner answers the probes; a pause of it is k6 v2.2's
		// 500 "execution is already paused" (observed).
		{http.MethodGet, "/v1/status", "", http.StatusOK},
		{http.MethodPatch, "/v1/status", `{"data":{"attributes":{"paused":true}}}`, http.StatusInternalServerError},
	}
	for _, c := range cases {
		code, doc, body := l.do(c.method, c.path, c.body)
		if code != c.want {
			t.Errorf("%s %s %s: %d, want %d (%s)", c.method, c.path, c.body, code, c.want, body)
		}
		if code >= 400 && len(doc["errors"].([]any)) != 1 {
			t.Errorf("%s %s: error document %s", c.method, c.path, body)
		}
	}
}

// TestSetupEndpointsForThePLZFlow plays the cloud mode: the runner starts
// with --no-setup --no-teardown, POST /v1/setup runs setup() on it, PUT
// gives every runner the data, the VUs see it, POST /v1/teardown ends it.
func TestSetupEndpointsForThePLZFlow(t *testing.T) {
	src := `
import { Counter } from "k6/metrics";
const seen = new Counter("seen_b");
export const options = { vus: 1, iterations: 2, noSetup: true, noTeardown: true };
export function setup() { return { a: 1 }; }
export default function (data) { if (data && data.b === 2) seen.add(1); }
export function teardown(data) { console.log("teardown got " + JSON.stringify(data)); }`
	l := startRun(t, src, true, nil)
	l.waitStatus(func(a map[string]any) bool { return a["status"] == float64(engine.StatusPausedBeforeRun) })
	// k6 v1.8.1's body, byte for byte, when no setup data exists: no "data"
	// inside attributes (a setup that returned null has "data": null).
	if code, _, body := l.do(http.MethodGet, "/v1/setup", ""); code != http.StatusOK ||
		strings.TrimSpace(body) != `{"data":{"type":"setupData","id":"default","attributes":{}}}` {
		t.Fatalf("GET /v1/setup before setup: %d %s", code, body)
	}
	code, doc, _ := l.do(http.MethodPost, "/v1/setup", "")
	if d, _ := attrs(doc)["data"].(map[string]any); code != http.StatusOK || d["a"] != float64(1) {
		t.Fatalf("POST /v1/setup: %d %v", code, doc)
	}
	code, doc, _ = l.do(http.MethodPut, "/v1/setup", `{"a": 1, "b": 2}`)
	if d, _ := attrs(doc)["data"].(map[string]any); code != http.StatusOK || d["b"] != float64(2) {
		t.Fatalf("PUT /v1/setup: %d %v", code, doc)
	}
	if code, doc, _ := l.do(http.MethodGet, "/v1/setup", ""); code != http.StatusOK || attrs(doc)["data"].(map[string]any)["b"] != float64(2) {
		t.Fatalf("GET /v1/setup after PUT: %d %v", code, doc)
	}
	l.do(http.MethodPatch, "/v1/status", starterBody)
	if res := l.result(); res.ExitCode != 0 {
		t.Fatalf("exit %d %v", res.ExitCode, res.Err)
	}
	code, doc, _ = l.do(http.MethodGet, "/v1/metrics/seen_b", "")
	if code != http.StatusOK || attrs(doc)["sample"].(map[string]any)["count"] != float64(2) {
		t.Fatalf("the VUs did not get the PUT data: %d %v", code, doc)
	}
	code, _, body := l.do(http.MethodPost, "/v1/teardown", "")
	if code != http.StatusOK || body != "" || !strings.Contains(l.stderr.String(), `teardown got {\"a\":1,\"b\":2}`) {
		t.Fatalf("POST /v1/teardown: %d %q; stderr:\n%s", code, body, l.stderr.String())
	}
}

// clockScript records, in setup and in every iteration, how long the test
// has run by its own clock (exec.instance.currentTestRunDuration, ms).
const clockScript = `
import exec from "k6/execution";
import { Trend } from "k6/metrics";
const clock = new Trend("clock_ms");
export const options = { vus: 1, iterations: 3 };
export function setup() { clock.add(exec.instance.currentTestRunDuration); }
export default function () { clock.add(exec.instance.currentTestRunDuration); }`

// A paused runner's clock starts at the resume (docs/k6-operator.md), not
// when its VUs were initialised: after a second paused, setup and the
// iterations still see a test that has run for well under that second.
func TestPausedRunsClockStartsAtTheResume(t *testing.T) {
	const paused = 1500 * time.Millisecond
	l := startRun(t, clockScript, true, nil)
	l.waitStatus(func(a map[string]any) bool { return a["status"] == float64(engine.StatusPausedBeforeRun) })
	time.Sleep(paused) // the paused interval is what the test measures: time passing, no condition
	if code, doc, _ := l.do(http.MethodPatch, "/v1/status", starterBody); code != http.StatusOK {
		t.Fatalf("resume: %d %v", code, doc)
	}
	if res := l.result(); res.ExitCode != engine.ExitOK {
		t.Fatalf("exit %d (%v)", res.ExitCode, res.Err)
	}
	code, doc, _ := l.do(http.MethodGet, "/v1/metrics/clock_ms", "")
	s, _ := attrs(doc)["sample"].(map[string]any)
	if code != http.StatusOK || s == nil {
		t.Fatalf("clock_ms: %d %v", code, doc)
	}
	// max: the latest of setup's and the iterations' readings.
	if max, _ := s["max"].(float64); max >= float64(paused.Milliseconds())-500 {
		t.Fatalf("the test's clock read %.0f ms after a %s pause: it started before the resume", max, paused)
	}
}

// k6 v2.2's answers once a run has started (observed against k6 v2.2.0,
// 6 Dec 2026, a constant-vus scenario "a"): VU changes are 500 "Execution
// config error" "live VU configuration updates are not supported", and a
// pause or a resume is 500 "Pause error" naming the first scenario's
// executor. Fails with v1.8.1's answers ("an externally-controlled executor
// needs to be configured…", "execution is not paused").
func TestV2AnswersAfterTheStart(t *testing.T) {
	src := `
import { sleep } from "k6";
export const options = { scenarios: { a: { executor: "constant-vus", vus: 1, duration: "3s" } } };
export default function () { sleep(0.1); }`
	l := startRun(t, src, false, nil)
	l.waitStatus(func(a map[string]any) bool { return a["running"] == true })
	for body, want := range map[string][2]string{
		`{"data":{"attributes":{"vus":2}}}`:        {"Execution config error", "live VU configuration updates are not supported"},
		`{"data":{"attributes":{"vus-max":3}}}`:    {"Execution config error", "live VU configuration updates are not supported"},
		`{"data":{"attributes":{"paused":false}}}`: {"Pause error", "constant-vus executor 'a' doesn't support pause and resume operations after its start"},
		`{"data":{"attributes":{"paused":true}}}`:  {"Pause error", "constant-vus executor 'a' doesn't support pause and resume operations after its start"},
	} {
		code, doc, _ := l.do(http.MethodPatch, "/v1/status", body)
		errs, _ := doc["errors"].([]any)
		if code != http.StatusInternalServerError || len(errs) != 1 || errs[0].(map[string]any)["title"] != want[0] || errs[0].(map[string]any)["detail"] != want[1] {
			t.Errorf("%s: %d %v", body, code, doc)
		}
	}
	if res := l.result(); res.ExitCode != 0 {
		t.Fatalf("exit %d %v", res.ExitCode, res.Err)
	}
}
