package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// The commands below are k6-operator v1.6.0's (read in its source, tag
// cf0ae21, 6 Dec 2026 — the same as main at e2c9571; docs k6-operator.md),
// rendered for loopback: the initializer's `sh -c` script
// (pkg/resources/jobs/initializer.go, the .spec.arguments form), the
// runner's command line (runner.go, segmentation.go) and the starter's curl
// (containers/curl_start.go). Only the address differs: 127.0.0.1:<port>
// per runner in place of every pod's 0.0.0.0:6565.

const missingK6 = `level=error msg="k6 executable not found in PATH; initializer image must contain k6"`

// initializerScript is the initializer's shell program for an archive at
// archive made by archiveCmd.
func initializerScript(archive, archiveCmd string) string {
	return fmt.Sprintf(`if ! command -v k6 >/dev/null 2>&1; then
  echo '%[1]s' >&2
  exit 127
fi

logs=/tmp/k6logs

if ! mkdir -p "$(dirname %[2]s)"; then
  exit 1
fi

if ! %[3]s 2> "${logs}"; then
  cat "${logs}"
  exit 1
fi

if ! k6 inspect --execution-requirements %[2]s 2> "${logs}"; then
  cat "${logs}"
  exit 1
fi

if grep 'level.*error' "${logs}"; then
  exit 1
fi`, missingK6, archive, archiveCmd)
}

// runnerArgs is runner n of p's command line after `k6`.
func runnerArgs(n, p int, arguments []string, script, addr, name string) []string {
	point := func(i int) string {
		switch i {
		case 0:
			return "0"
		case p:
			return "1"
		}
		return fmt.Sprintf("%d/%d", i, p)
	}
	seq := []string{}
	for i := 0; i <= p; i++ {
		seq = append(seq, point(i))
	}
	args := []string{"run", "--quiet",
		"--execution-segment=" + point(n-1) + ":" + point(n),
		"--execution-segment-sequence=" + strings.Join(seq, ",")}
	args = append(args, arguments...)
	return append(args, script, "--address="+addr, "--paused",
		"--tag", fmt.Sprintf("instance_id=%d", n), "--tag", "testrun_name="+name)
}

// starterScript is the starter's `sh -c` program for the runners at addrs.
func starterScript(addrs []string) string {
	body := `{"data":{"attributes":{"paused":false,"stopped":false},"id":"default","type":"status"}}`
	var parts []string
	for _, a := range addrs {
		parts = append(parts, fmt.Sprintf(`curl --retry 3 -X PATCH -H 'Content-Type: application/json' http://%s/v1/status -d '%s' -s -w '`+"\n"+
			`{"http_code":%%{http_code},"time_total":%%{time_total},"time_starttransfer":%%{time_starttransfer},"url":"%%{url_effective}","remote_ip":"%%{remote_ip}","errormsg":"%%{errormsg}"}'`, a, body))
	}
	return strings.Join(parts, ";")
}

// oneJSONDocument decodes out as exactly one JSON document (what the
// operator's common.go does with the initializer's stdout).
func oneJSONDocument(out string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(out))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("stdout is not a JSON document: %v", err)
	}
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("stdout holds more than one JSON document (%v)", err)
	}
	return doc, nil
}

// writeScripts lays out the "ConfigMap": the script and its TOML aimed at
// the relay at addr.
func writeScripts(t *testing.T, dir, addr string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	js, toml := operatorScripts(t, addr)
	write(t, filepath.Join(dir, "distributed.js"), []byte(js))
	write(t, filepath.Join(dir, "distributed.toml"), []byte(toml))
	return filepath.Join(dir, "distributed.js")
}

// operatorScripts is the play's script and its TOML aimed at the relay at
// addr (testdata/operator).
func operatorScripts(t *testing.T, addr string) (js, toml string) {
	t.Helper()
	rawJS, err := os.ReadFile(filepath.Join("testdata", "operator", "distributed.js"))
	if err != nil {
		t.Fatal(err)
	}
	rawTOML, err := os.ReadFile(filepath.Join("testdata", "operator", "distributed.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(rawJS), strings.ReplaceAll(string(rawTOML), "RELAY_ADDR", addr)
}

// seededOnce checks the relay holds exactly one copy of each post of the
// fixture, and the probes besides them.
func seededOnce(t *testing.T, tomlPath string, probes int) {
	t.Helper()
	raw, err := os.ReadFile(tomlPath)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse(tomlPath, raw)
	if err != nil {
		t.Fatal(err)
	}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{WSURL: sc.Target.WSURL, HTTPURL: sc.Target.HTTPURL},
		Keys: sc.OwnerKeys(0)})
	if err != nil {
		t.Fatal(err)
	}
	copies := map[string]int{}
	for _, ch := range sc.Channels() {
		evs, res := h.Query(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage},
			Tags: map[string][]string{"h": {sc.ChannelID(ch)}}, Limit: 5000}}, relayclient.CallOptions{})
		if res.Outcome != relayclient.OutcomeOK {
			t.Fatalf("reading channel %v: %s", ch, res.Error)
		}
		for _, e := range evs {
			copies[e.Content]++
		}
	}
	var want []string
	for _, ch := range sc.Channels() {
		for j := range sc.Shape.HistoryMessagesPerChannel {
			want = append(want, seed.HistoryContent(ch, j))
		}
		for r := range sc.Shape.ThreadRootsPerChannel {
			want = append(want, scenario.ThreadRootContent(sc.RunID, ch, r))
			for k := 1; k <= sc.Shape.ThreadDepth; k++ {
				want = append(want, seed.ReplyContent(ch, r, k))
			}
		}
	}
	for _, c := range want {
		if copies[c] != 1 {
			t.Errorf("the relay holds %d copies of seeded post %q, want 1", copies[c], c)
		}
	}
	total := 0
	for _, n := range copies {
		total += n
	}
	if total != len(want)+probes {
		t.Errorf("the relay holds %d posts, want %d seeded + %d probes", total, len(want), probes)
	}
}

func iterations(t *testing.T, f *result.File) float64 {
	t.Helper()
	m := f.Metrics.Metric("iterations")
	if m == nil {
		t.Fatal("no iterations metric")
	}
	c, ok := m.Sink.(*metrics.CounterSink)
	if !ok {
		t.Fatalf("iterations is a %T", m.Sink)
	}
	return c.Sum()
}

// pods is where the operator's pods run: as processes on this machine, or
// as containers of the image (host network, the "ConfigMap" at /test, the
// results volume at /results).
type pods struct {
	t       *testing.T
	image   bool
	bin     string // the host's binary directory (k6, buzzload)
	dir     string
	scripts string // host directory of the script and TOML
	results string // host directory of the result files
	// runnerEnv is what the operator adds to the runners' environment (the
	// cloud output's K6_CLOUD_* variables).
	runnerEnv []string
}

// script is the script's path as the pods see it.
func (p pods) script() string {
	if p.image {
		return "/test/distributed.js"
	}
	return filepath.Join(p.scripts, "distributed.js")
}

// resultPattern is BUZZLOAD_RESULT as the pods see it.
func (p pods) resultPattern() string {
	dir := p.results
	if p.image {
		dir = "/results"
	}
	return filepath.Join(dir, "result-{instance_id}.json")
}

// podmanArgs are `podman run` flags and the image for a pod whose
// command is entrypoint.
func (p pods) podmanArgs(name, entrypoint string, env ...string) []string {
	args := []string{"podman", "--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager=cgroupfs", "run", "--rm",
		"--name", name, "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"-v", p.scripts + ":/test:ro", "-v", p.results + ":/results", "--entrypoint", entrypoint}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	return append(args, imageTag)
}

// initializer runs the initializer's script and returns its exit code,
// stdout and stderr.
func (p pods) initializer(script string) (int, string, string) {
	if p.image {
		podman, _ := exec.LookPath("podman")
		return run(p.t, 2*time.Minute, os.Environ(), podman, append(p.podmanArgs(fmt.Sprintf("buzzload-test-init-%d", os.Getpid()), "sh"), "-c", script)...)
	}
	// The script's log file; removed after the test (no other pod here).
	p.t.Cleanup(func() { os.Remove("/tmp/k6logs") })
	return run(p.t, 2*time.Minute, testEnv(p.bin), "/bin/sh", "sh", "-c", script)
}

// runner starts runner n with the command line args (after `k6`).
func (p pods) runner(n int, args []string) *proc {
	name := fmt.Sprintf("runner-%d", n)
	if p.image {
		podman, _ := exec.LookPath("podman")
		cname := fmt.Sprintf("buzzload-test-%s-%d", name, os.Getpid())
		p.t.Cleanup(func() { _ = exec.Command(podman, "--storage-driver", "vfs", "rm", "-f", cname).Run() })
		env := append([]string{"BUZZLOAD_RESULT=" + p.resultPattern()}, p.runnerEnv...)
		return start(p.t, p.dir, name, podman, append(p.podmanArgs(cname, "k6", env...), args...), os.Environ())
	}
	return start(p.t, p.dir, name, filepath.Join(p.bin, "k6"), append([]string{"k6"}, args...),
		testEnv(p.bin, append([]string{"BUZZLOAD_RESULT=" + p.resultPattern()}, p.runnerEnv...)...))
}

// newPods lays out the script for the relay at relay and a results
// directory writable by the image's UID 10001.
func newPods(t *testing.T, image bool, bin, relay string) pods {
	dir := t.TempDir()
	p := pods{t: t, image: image, bin: bin, dir: dir, scripts: filepath.Join(dir, "test"), results: filepath.Join(dir, "results")}
	writeScripts(t, p.scripts, relay)
	if err := os.Mkdir(p.results, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p.results, 0o777); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	testRunName = "buzz-operator"
	parallelism = 3
)

var testArguments = []string{"-e", "RUN_LABEL=operator"}

// initialize runs the initializer and checks its stdout is the one JSON
// document the operator reads maxVUs and totalDuration from.
func initialize(t *testing.T, p pods) {
	t.Helper()
	// The operator's archive name is /tmp/<file>.archived.tar; in
	// processes a pid keeps concurrent test runs apart (the script's
	// /tmp/k6logs they share; it holds only stderr).
	archive := "/tmp/distributed.js.archived.tar"
	if !p.image {
		archive = fmt.Sprintf("/tmp/distributed-%d.js.archived.tar", os.Getpid())
		t.Cleanup(func() { os.Remove(archive) })
	}
	code, out, errs := p.initializer(initializerScript(archive,
		"k6 archive "+p.script()+" -O "+archive+" "+strings.Join(testArguments, " ")))
	if code != 0 {
		t.Fatalf("initializer: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	doc, err := oneJSONDocument(out)
	if err != nil {
		t.Fatalf("initializer: %v:\n%s", err, out)
	}
	if v, _ := doc["maxVUs"].(float64); v < parallelism {
		t.Fatalf("inspect: maxVUs %v below parallelism %d (the operator refuses that):\n%s", doc["maxVUs"], parallelism, out)
	}
	if d, _ := doc["totalDuration"].(string); d == "" {
		t.Fatalf("inspect: no totalDuration:\n%s", out)
	}
}

// startRunners starts the runners with the operator's command lines
// (spec.arguments then the script) plus extra and waits until each answers
// GET /v1/status below 400.
func startRunners(t *testing.T, p pods, arguments []string, extra ...string) ([]*proc, []string) {
	t.Helper()
	var runners []*proc
	var addrs []string
	for n := 1; n <= parallelism; n++ {
		addr := freePort(t)
		args := append(runnerArgs(n, parallelism, arguments, p.script(), addr, testRunName), extra...)
		if len(extra) > 0 { // PLZ: the reserved instance id variable
			args = append(args, "-e", fmt.Sprintf("K6_CLOUDRUN_INSTANCE_ID=%d", n))
		}
		runners = append(runners, p.runner(n, args))
		addrs = append(addrs, addr)
	}
	for i, r := range runners {
		waitStatus(t, r, addrs[i], 90*time.Second)
	}
	return runners, addrs
}

// starter PATCHes every runner with the operator's curl.
func starter(t *testing.T, bin string, addrs []string) {
	t.Helper()
	code, out, errs := run(t, time.Minute, testEnv(bin), "/bin/sh", "sh", "-c", starterScript(addrs))
	if code != 0 || strings.Count(out, `"http_code":200`) != len(addrs) {
		t.Fatalf("starter: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// mergeJob runs the merge Job's entrypoint (merge-results.sh, in the
// image when the pods are containers) on the runners' result files and
// checks the whole run passes: 30 iterations pass count>=30 although no
// runner's share does. It returns the merged result file.
func mergeJob(t *testing.T, p pods) string {
	t.Helper()
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"INSTANCES=" + fmt.Sprint(parallelism), "WAIT_SECS=30"}
	var code int
	var out, errs string
	if p.image {
		podman, _ := exec.LookPath("podman")
		args := p.podmanArgs(fmt.Sprintf("buzzload-test-merge-%d", os.Getpid()), "/bin/sh", append(env, "RESULT_DIR=/results")...)
		args = append(args[:len(args)-1], "-v", here+":/scripts:ro", imageTag, "/scripts/merge-results.sh")
		code, out, errs = run(t, time.Minute, os.Environ(), podman, args...)
	} else {
		code, out, errs = run(t, time.Minute, testEnv(p.bin, append(env, "RESULT_DIR="+p.results)...), "/bin/sh", "sh", "merge-results.sh")
	}
	if code != 0 {
		t.Fatalf("merge: exit %d, want 0 (30 iterations pass count>=30)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, f := range []string{"merged.json", "summary.json"} {
		if _, err := os.Stat(filepath.Join(p.results, f)); err != nil {
			t.Errorf("the merge Job wrote no %s: %v", f, err)
		}
	}
	return filepath.Join(p.results, "merged.json")
}

// sameAsOneInstance runs the script once, whole, on a fresh relay and
// checks merged has its iteration and per-op counts.
func sameAsOneInstance(t *testing.T, bin, merged string) {
	t.Helper()
	dir := t.TempDir()
	relay := startRelay(t, bin, dir, "relay-whole")
	script := writeScripts(t, filepath.Join(dir, "whole"), relay)
	ref := filepath.Join(dir, "whole.json")
	code, out, errs := run(t, 2*time.Minute, testEnv(bin), filepath.Join(bin, "k6"),
		append(append([]string{"k6", "run", "--quiet"}, testArguments...), script, "--result", ref)...)
	if code != 0 {
		t.Fatalf("one instance: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	mf, err := result.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := result.Read(ref)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := iterations(t, rf), iterations(t, mf); a != 30 || b != 30 {
		t.Fatalf("iterations: one instance %v, merged %v, want 30 both", a, b)
	}
	code, out, errs = run(t, time.Minute, testEnv(bin), filepath.Join(bin, "buzzload"), "buzzload", "compare", "--json", ref, merged)
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	var cmp struct {
		Ops []struct {
			Op   string `json:"op"`
			A, B *struct {
				Count, OK, Errors int64
			}
		} `json:"ops"`
	}
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatalf("compare output: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, o := range cmp.Ops {
		seen[o.Op] = true
		if o.A == nil || o.B == nil || o.A.Count != o.B.Count || o.A.OK != o.B.OK || o.A.Errors != o.B.Errors {
			t.Errorf("op %s: one instance %+v, merged %+v", o.Op, o.A, o.B)
		}
	}
	for _, op := range []string{"probe_post", "probe_read", seed.OpHistory, seed.OpChannel} {
		if !seen[op] {
			t.Errorf("compare lists no %s: %s", op, out)
		}
	}
}

// oneSeeder checks exactly one runner seeded and the others waited.
func oneSeeder(t *testing.T, runners []*proc) {
	t.Helper()
	waited := 0
	for _, r := range runners {
		if strings.Contains(r.output(), "waiting up to") {
			waited++
		}
	}
	if waited != len(runners)-1 {
		t.Errorf("%d of %d runners waited for the fixture, want all but the first", waited, len(runners))
	}
}
