package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// These tests run the real binary under the command lines of
// grafana/k6-operator (docs/k6-operator.md): the initializer's archive and
// inspect, a runner's `run ... --address --paused --tag`, the starter's
// and the stopper's PATCHes. The binary is called as `k6`, as the
// operator's pods call it.

// k6Bin links the built binary as k6 in a directory of its own, for PATH.
func k6Bin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(buzzloadBin(t), filepath.Join(dir, "k6")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sh runs a shell script with k6 on PATH, in dir.
func sh(t *testing.T, binDir, dir, script string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// archiveScript imports a module, open()s a data file, loads a Buzz
// scenario and needs an -e value: an archive that misses any of them fails
// its run.
var archiveScript = map[string]string{
	"test.js": `
import buzz from "k6/x/buzz";
import { check } from "./lib/check.js";
const data = open("./data/words.txt");
const sc = buzz.load("./shape.toml");
export const options = { vus: 2, duration: "2s" };
export default function () { check(data, __ENV.WORD); }`,
	"lib/check.js": `export function check(data, word) {
  if (!word || data.indexOf(word) < 0) throw new Error("word " + word + " not in the data");
}`,
	"data/words.txt": "alpha beta gamma",
}

func withShape(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	toml, err := os.ReadFile(filepath.Join("testdata", "ops-tiny.toml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"shape.toml": string(toml)}
	for k, v := range files {
		out[k] = v
	}
	return out
}

// TestInitializerArchiveAndInspect runs the initializer's script: archive
// with -e and the TestRun's arguments, inspect the archive, fail on any
// level=error line; stdout must be one JSON document with k6's fields.
func TestInitializerArchiveAndInspect(t *testing.T) {
	bin := k6Bin(t)
	dir := writeFiles(t, withShape(t, archiveScript))
	script := `command -v k6 >/dev/null || exit 127
k6 archive test.js -e WORD="beta" -O /tmp/` + filepath.Base(dir) + `.archived.tar --execution-segment=0:1/2 --execution-segment-sequence=0,1/2,1 2> ` + dir + `/k6logs || { cat ` + dir + `/k6logs; exit 1; }
k6 inspect --execution-requirements /tmp/` + filepath.Base(dir) + `.archived.tar 2> ` + dir + `/k6logs || { cat ` + dir + `/k6logs; exit 1; }
! grep 'level.*error' ` + dir + `/k6logs`
	t.Cleanup(func() { os.Remove("/tmp/" + filepath.Base(dir) + ".archived.tar") })
	code, out, errs := sh(t, bin, dir, script)
	if code != 0 {
		t.Fatalf("initializer exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("the initializer's stdout is not one JSON document: %v\n%s", err, out)
	}
	// 2 VUs for 2s on half the test: 1 VU, 2s + the 30s gracefulStop.
	if doc["maxVUs"] != float64(1) || doc["totalDuration"] != "32s" || doc["executionSegment"] != "0:1/2" {
		t.Fatalf("inspect: maxVUs %v totalDuration %v segment %v", doc["maxVUs"], doc["totalDuration"], doc["executionSegment"])
	}
	// The archive of an archive's inspect has k6's defaults filled in.
	if _, ok := doc["summaryTrendStats"].([]any); !ok {
		t.Errorf("inspect of an archive lacks summaryTrendStats: %v", doc["summaryTrendStats"])
	}
	names := tarNames(t, "/tmp/"+filepath.Base(dir)+".archived.tar")
	for _, want := range []string{"test.js", "lib/check.js", "data/words.txt", "shape.toml"} {
		if !names[filepath.Join(dir, want)] {
			t.Errorf("the archive lacks %s: %v", want, names)
		}
	}
}

func tarNames(t *testing.T, p string) map[string]bool {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names["/"+strings.TrimPrefix(h.Name, "file/")] = true
	}
}

// TestArchiveRunsFromAnEmptyDirectory: the archive alone carries the
// imports, the open()ed file, the scenario TOML and the -e value.
func TestArchiveRunsFromAnEmptyDirectory(t *testing.T) {
	bin := k6Bin(t)
	src := writeFiles(t, withShape(t, archiveScript))
	tarPath := filepath.Join(t.TempDir(), "x.tar")
	if code, _, errs := sh(t, bin, src, `k6 archive test.js -e WORD=gamma -O `+tarPath); code != 0 {
		t.Fatalf("archive: %d\n%s", code, errs)
	}
	// Moving the sources away proves nothing is read from the disk.
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	code, _, errs := sh(t, bin, empty, `k6 run -q --address "" --no-setup --no-teardown `+tarPath+` -d 1s --summary-mode disabled`)
	if code != 0 || strings.Contains(errs, "not in the data") {
		t.Fatalf("run x.tar from an empty directory: exit %d\n%s", code, errs)
	}
	// This run's -e wins over the archived one.
	code, _, errs = sh(t, bin, empty, `k6 run -q --address "" --no-setup --no-teardown `+tarPath+` -e WORD=delta -i 2 --summary-mode disabled`)
	if !strings.Contains(errs, "word delta not in the data") {
		t.Fatalf("run -e over the archive: exit %d, stderr:\n%s", code, errs)
	}
}

// TestBrokenScriptIsOneErrorLine: archive, inspect and run of a script
// that does not compile exit 107 with nothing on stdout and one logfmt
// error line naming the script; no tar is written.
func TestBrokenScriptIsOneErrorLine(t *testing.T) {
	bin := k6Bin(t)
	dir := writeFiles(t, map[string]string{"broken.js": "export default function ( {\n"})
	for _, cmd := range []string{"k6 archive broken.js -O out.tar", "k6 inspect --execution-requirements broken.js", `k6 run --address "" broken.js`} {
		code, out, errs := sh(t, bin, dir, cmd)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 107 || out != "" || len(lines) != 1 || !strings.Contains(lines[0], "level=error") || !strings.Contains(lines[0], "broken.js") || !strings.HasPrefix(lines[0], "time=") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 107, nothing, one level=error line naming broken.js", cmd, code, out, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.tar")); err == nil {
		t.Error("archive wrote a tar for a broken script")
	}
}

// runner is a `k6 run` started with a runner pod's command line.
type runner struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	errb *bytes.Buffer
	done chan int
}

func startRunner(t *testing.T, bin, dir, script string, extra ...string) *runner {
	t.Helper()
	addr := freeAddr(t)
	// k6-operator's runner: flags after the positional script.
	args := append([]string{"run", "--quiet", script}, extra...)
	args = append(args, "--address="+addr, "--paused", "--tag", "instance_id=1", "--tag", "testrun_name=contract")
	r := &runner{t: t, addr: addr, errb: &bytes.Buffer{}, done: make(chan int, 1)}
	r.cmd = exec.Command(filepath.Join(bin, "k6"), args...)
	r.cmd.Dir = dir
	r.cmd.Stderr = r.errb
	r.cmd.Stdout = io.Discard
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := r.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.done <- ee.ExitCode()
			return
		}
		r.done <- 0
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
		}
	})
	return r
}

// status polls GET /v1/status as the operator's readiness check does,
// until it answers below 400 and cond holds.
func (r *runner) status(cond func(map[string]any) bool) map[string]any {
	r.t.Helper()
	var got map[string]any
	if waitfor.WithinEvery(30*time.Second, 50*time.Millisecond, func() bool {
		resp, err := http.Get("http://" + r.addr + "/v1/status")
		if err != nil {
			return false
		}
		var doc struct {
			Data struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"data"`
		}
		ok := resp.StatusCode < 400 && json.NewDecoder(resp.Body).Decode(&doc) == nil
		resp.Body.Close()
		got = doc.Data.Attributes
		return ok && cond(got)
	}) {
		return got
	}
	r.t.Fatalf("GET /v1/status never showed the wanted state; stderr:\n%s", r.errb.String())
	return nil
}

// curl sends the operator's exact starter (or stopper) command.
func (r *runner) curl(stopped bool) {
	r.t.Helper()
	body := fmt.Sprintf(`{"data":{"attributes":{"paused":false,"stopped":%v},"id":"default","type":"status"}}`, stopped)
	cmd := exec.Command("curl", "--retry", "3", "-X", "PATCH", "-H", "Content-Type: application/json", "http://"+r.addr+"/v1/status", "-d", body)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"type":"status"`) {
		r.t.Fatalf("curl PATCH: %v\n%s", err, out)
	}
}

// pageCannotDrive sends what a web page can: a cross-origin form POST to
// /v1/teardown and a DNS-rebinding-shaped PATCH (a foreign Host). Both are
// refused and the runner is still paused (reliability.md F2).
func (r *runner) pageCannotDrive() {
	r.t.Helper()
	send := func(method, path, body string, hdr map[string]string, host string) int {
		req, err := http.NewRequest(method, "http://"+r.addr+path, strings.NewReader(body))
		if err != nil {
			r.t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			r.t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := send("POST", "/v1/teardown", "x=1", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, ""); c != http.StatusForbidden {
		r.t.Fatalf("cross-origin POST /v1/teardown: status %d, want 403", c)
	}
	stop := `{"data":{"attributes":{"stopped":true},"id":"default","type":"status"}}`
	if c := send("PATCH", "/v1/status", stop, map[string]string{"Content-Type": "application/json"}, "rebind.evil.example:6565"); c != http.StatusForbidden {
		r.t.Fatalf("PATCH with a foreign Host: status %d, want 403", c)
	}
	if a := r.status(func(map[string]any) bool { return true }); a["paused"] != true || a["stopped"] == true {
		r.t.Fatalf("a refused request changed the run: %v", a)
	}
}

func (r *runner) exit() int {
	r.t.Helper()
	select {
	case code := <-r.done:
		return code
	case <-time.After(60 * time.Second):
		r.t.Fatalf("the runner did not exit; stderr:\n%s", r.errb.String())
	}
	return -1
}

func TestRunnerWaitsPausedUntilTheStarterAndTagsEverySample(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed: the operator's starter is curl")
	}
	bin := k6Bin(t)
	dir := writeFiles(t, map[string]string{"test.js": `
import { Counter } from "k6/metrics";
const setups = new Counter("setups");
export const options = { vus: 2, iterations: 6 };
export function setup() { setups.add(1); }
export default function () {}`})
	r := startRunner(t, bin, dir, "test.js", "--out", "json=samples.json")
	a := r.status(func(a map[string]any) bool { return a["status"] == float64(4) })
	if a["paused"] != true || a["vus-max"] != float64(2) || a["running"] != false {
		t.Fatalf("paused runner: %v", a)
	}
	r.pageCannotDrive()
	r.curl(false)
	if code := r.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, r.errb.String())
	}
	byMetric := taggedSamples(t, filepath.Join(dir, "samples.json"))
	if byMetric["iterations"] != 6 || byMetric["setups"] != 1 {
		t.Fatalf("samples by metric %v; want 6 iterations and one setup after the resume", byMetric)
	}
}

// jsonOutputLine is one line of the JSON output (--out json).
type jsonOutputLine struct {
	Type   string `json:"type"`
	Metric string `json:"metric"`
	Data   struct {
		Tags map[string]string `json:"tags"`
	} `json:"data"`
}

// taggedSamples counts a JSON output's samples by metric, failing on one
// without the runner's --tag values.
func taggedSamples(t *testing.T, p string) map[string]int {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byMetric := map[string]int{}
	dec := json.NewDecoder(f)
	for {
		var line jsonOutputLine
		if err := dec.Decode(&line); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if line.Type != "Point" {
			continue
		}
		byMetric[line.Metric]++
		if line.Data.Tags["instance_id"] != "1" || line.Data.Tags["testrun_name"] != "contract" {
			t.Fatalf("a %s sample lacks the runner's --tag values: %v", line.Metric, line.Data.Tags)
		}
	}
	return byMetric
}

// TestRunnerTagsTheBuzzModulesSamples: the Buzz module's samples (setup's
// seeding, the clients' operations) carry --tag too.
func TestRunnerTagsTheBuzzModulesSamples(t *testing.T) {
	bin := k6Bin(t)
	dir := copyTestdata(t, "ops-tiny.toml")
	r := startRunner(t, bin, dir, "ops-tiny.toml", "--out", "json=samples.json")
	r.status(func(a map[string]any) bool { return a["status"] == float64(4) })
	r.curl(false)
	if code := r.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, r.errb.String())
	}
	byMetric := taggedSamples(t, filepath.Join(dir, "samples.json"))
	if byMetric["buzz_op_duration"] == 0 {
		t.Fatalf("no Buzz operation samples: %v", byMetric)
	}
}

func TestStopperEndsARunnerWith103(t *testing.T) {
	bin := k6Bin(t)
	dir := writeFiles(t, map[string]string{"test.js": `
export const options = { vus: 1, duration: "60s" };
export default function () {}
export function teardown() { console.log("teardown ran"); }
export function handleSummary() { return { "summary.txt": "summary ran" }; }`})
	r := startRunner(t, bin, dir, "test.js")
	r.status(func(a map[string]any) bool { return a["status"] == float64(4) })
	r.curl(false)
	r.status(func(a map[string]any) bool { return a["running"] == true })
	r.curl(true)
	if code := r.exit(); code != 103 {
		t.Fatalf("exit %d, want 103\n%s", code, r.errb.String())
	}
	errs := r.errb.String()
	if !strings.Contains(errs, `level=error msg="test run stopped from REST API"`) || !strings.Contains(errs, "teardown ran") {
		t.Errorf("stderr lacks the stop line or teardown's output:\n%s", errs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.txt")); err != nil || string(b) != "summary ran" {
		t.Errorf("handleSummary did not run after the stop: %v", err)
	}
}

// TestLingerKeepsTheAPIUntilAStop: the PLZ flow's runner (--linger) still
// answers after the test, with status 9, until a stop.
func TestLingerKeepsTheAPIUntilAStop(t *testing.T) {
	bin := k6Bin(t)
	dir := writeFiles(t, map[string]string{"test.js": `export const options = { iterations: 1 }; export default function () {}`})
	r := startRunner(t, bin, dir, "test.js", "--linger", "--no-setup", "--no-teardown")
	r.status(func(a map[string]any) bool { return a["status"] == float64(4) })
	r.curl(false)
	a := r.status(func(a map[string]any) bool { return a["status"] == float64(9) })
	if a["running"] != false {
		t.Fatalf("lingering status %v: want running false", a)
	}
	select {
	case code := <-r.done:
		t.Fatalf("a lingering runner exited (%d) before the stop", code)
	case <-time.After(300 * time.Millisecond):
	}
	r.curl(true)
	if code := r.exit(); code != 0 {
		t.Fatalf("exit %d after the linger, want the test's 0\n%s", code, r.errb.String())
	}
}

// A request body trickled a byte at a time does not hold the API's
// connection for the run: it is cut at the read timeout (30 s)
// (reliability.md F7: 50 such connections were all still open after 45 s).
func TestAPICutsSlowBodies(t *testing.T) {
	t.Parallel() // waits on the server's read timeout
	bin := k6Bin(t)
	dir := writeFiles(t, map[string]string{"test.js": `export const options = { vus: 1, iterations: 1 };
export default function () {}`})
	r := startRunner(t, bin, dir, "test.js")
	r.status(func(a map[string]any) bool { return a["paused"] == true })
	conn, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /v1/setup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n{")
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, conn) // returns when the server closes
		close(closed)
	}()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	deadline := time.After(50 * time.Second)
	for {
		select {
		case <-closed:
			r.curl(true)
			r.exit()
			return
		case <-tick.C:
			_, _ = conn.Write([]byte(" "))
		case <-deadline:
			t.Fatal("the slow body's connection was still open after 50 s")
		}
	}
}

// What k6 v2 removed is refused as k6 v2.2.0 refuses it (observed 6 Dec
// 2026): --no-summary is an unknown flag and --summary-mode=legacy (or
// K6_SUMMARY_MODE=legacy) an invalid summary mode, both exit 255 before
// anything runs; a script with the externally-controlled executor stops
// at the start with 104 and no summary. K6_NO_SUMMARY is ignored.
func TestWhatK6V2Removed(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"ok.js": `export default function () {}`,
		"ec.js": `export const options = { scenarios: { x: { executor: "externally-controlled", vus: 1, maxVUs: 2, duration: "2s" } } };
export default function () {}`,
	})
	for _, c := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{nil, []string{"run", "--no-summary", "ok.js"}, 255, "unknown flag: --no-summary"},
		{nil, []string{"run", "--summary-mode=legacy", "ok.js"}, 255, "invalid summary mode"},
		{[]string{"K6_SUMMARY_MODE=legacy"}, []string{"run", "ok.js"}, 255, "invalid summary mode"},
		{nil, []string{"run", "ec.js"}, 104, `unknown executor type \"externally-controlled\"`},
		{[]string{"K6_NO_SUMMARY=true"}, []string{"run", "--iterations", "1", "ok.js"}, 0, "TOTAL RESULTS"},
	} {
		code, out, errs := runBin(t, dir, c.env, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v %v: exit %d, want %d and %q\n%s%s", c.env, c.args, code, c.code, c.want, out, errs)
		}
		if c.code == 104 && strings.Contains(out, "TOTAL RESULTS") {
			t.Errorf("%v: a summary after a refused start", c.args)
		}
	}
}

// k6 v2.1's feature flags, as k6 v2.2.0 was observed to run them (6 Dec
// 2026): `features` lists them (the same bytes), --features enables them
// (an unknown one is an error line and the run goes on), freeze-env makes
// __ENV refuse assignments, merge-run-tags merges the tags of the layers,
// every enabled flag is a k6_feature_<name> run tag, and K6_FEATURES
// carries the enabled ones into __ENV. Script options cannot enable them.
func TestFeatureFlags(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"fe.js": `export const options = { tags: { s: "1" } };
export default function () {
  console.log("K6_FEATURES=" + __ENV.K6_FEATURES + " frozen=" + Object.isFrozen(__ENV));
  try { __ENV.X = "1"; console.log("assigned"); } catch (e) { console.log("refused " + e.name); }
}`,
		"so.js":  `export const options = { features: ["freeze-env"] }; export default function () {}`,
		"c.json": `{"tags": {"f": "1"}}`,
	})
	code, out, _ := runBin(t, dir, nil, "features")
	want := "FEATURE             LIFECYCLE      DESCRIPTION\nfreeze-env          Experimental   Freeze __ENV object to prevent modifications from JS code\n" +
		"merge-run-tags      Experimental   Merge run tags across config layers instead of replacing\nnative-histograms   Experimental   Use native histograms for trend metrics\n"
	if code != 0 || out != want {
		t.Errorf("features: exit %d\n%s", code, out)
	}
	code, out, errs := runBin(t, dir, nil, "run", "-q", "--features", "freeze-env,bogus", "--features", "merge-run-tags",
		"-c", "c.json", "--tag", "c=1", "--iterations", "1", "--out", "json=o.json", "fe.js")
	for _, w := range []string{`msg="Unknown feature flag" feature=bogus outcome=unknown source=cli`,
		`msg="Experimental feature enabled" feature=freeze-env lifecycle=experimental`,
		`msg="K6_FEATURES=freeze-env,merge-run-tags frozen=true"`, `msg="refused TypeError"`} {
		if !strings.Contains(out+errs, w) {
			t.Errorf("run: exit %d, no %s in\n%s%s", code, w, out, errs)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "o.json"))
	if err != nil {
		t.Fatal(err)
	}
	tags := `"tags":{"c":"1","f":"1","group":"","k6_feature_freeze_env":"true","k6_feature_merge_run_tags":"true","s":"1","scenario":"default"}`
	if code != 0 || !strings.Contains(string(raw), tags) {
		t.Errorf("the samples' tags are not %s:\n%.600s", tags, raw)
	}
	if _, out, errs := runBin(t, dir, nil, "run", "-q", "--iterations", "1", "so.js"); !strings.Contains(out+errs, "Feature flags in script options are not supported; use --features, K6_FEATURES, or the JSON config") {
		t.Errorf("script options' features: no warning\n%s%s", out, errs)
	}
}

// The REST API starts only when --address (or K6_ADDRESS) names where, as
// in k6 v2 ("the server is disabled when not set"): with localhost:6565
// taken, a run without --address says nothing of it and passes, one that
// names it fails with 106. Fails with k6 v1's default (a warning that the
// API could not start on localhost:6565).
func TestRESTAPIOnlyWithAnAddress(t *testing.T) {
	l, err := net.Listen("tcp", "localhost:6565")
	if err != nil {
		t.Skipf("localhost:6565 is in use here: %v", err)
	}
	defer l.Close()
	dir := writeFiles(t, map[string]string{"s.js": `export default function () {}`})
	code, out, errs := runBin(t, dir, nil, "run", "-q", "--iterations", "1", "s.js")
	if code != 0 || strings.Contains(out+errs, "REST API") {
		t.Errorf("without --address: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runBin(t, dir, nil, "run", "-q", "--address", "localhost:6565", "--iterations", "1", "s.js"); code != ExitAPIFailed {
		t.Errorf("--address localhost:6565 while taken: exit %d, want %d\n%s", code, ExitAPIFailed, errs)
	}
}
