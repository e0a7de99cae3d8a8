package k8s

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/report"
)

// passAndFail are the two runs of a distributed example: the whole run's
// 30 iterations pass count>=30 (each runner's share fails it), and fail a
// threshold they cannot reach.
var passAndFail = []struct {
	name, threshold string
	pass            bool
}{
	{"pass", "count>=30", true},
	{"fail", "count>=1000", false},
}

// clusterFixture is what every cluster scenario shares: the relay, the
// results volume, the operator key Secret and the merge script.
func clusterFixture(t *testing.T) (dir, pv string) {
	t.Helper()
	dir = cluster(t)
	deployRelay(t)
	pv = resultsVolume(t, dir)
	kube(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"buzzload-operator"},"stringData":{"key":"`+e2eOperatorKey+`"}}`, "apply", "-f", "-")
	scriptsConfigMap(t, nil)
	return dir, pv
}

// scriptsConfigMap is the ConfigMap buzzload-scripts both examples mount:
// the wrapper scripts, plus files (the Indexed Job's script and fixture).
func scriptsConfigMap(t *testing.T, files map[string]string) {
	t.Helper()
	data := map[string]string{}
	for _, name := range []string{"merge-results.sh", "run-segment.sh"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		data[name] = string(b)
	}
	for k, v := range files {
		data[k] = v
	}
	configMap(t, "buzzload-scripts", data)
}

// TestClusterTestRun applies examples/k8s/testrun.yaml with parallelism 3
// (forCluster's changes only): the initializer's inspect passes, three
// runners start paused and the starter starts them, the fixture is seeded
// once, each runner fails its share (99) while the merge Job passes the
// whole — its counts those of one process running the whole script; and
// the same TestRun with a threshold the whole run fails ends with the
// merge Job failing with 99.
func TestClusterTestRun(t *testing.T) {
	_, pv := clusterFixture(t)
	bin := k6Bin(t)
	stamp := time.Now().Format("150405")
	for _, c := range passAndFail {
		t.Run(c.name, func(t *testing.T) {
			run := c.name + "-" + stamp
			js, toml := scriptFiles(t, "k8s-"+run, c.threshold)
			configMap(t, "buzzload-test", map[string]string{"buzz-test.js": js, "buzz-test.toml": toml})
			kube(t, forCluster(t, "testrun.yaml", map[string]string{"RUN_NAME": run, "INSTANCES": "3", "IMAGE": e2eImage}), "apply", "-f", "-")
			testrun := "buzzload-" + run
			passed := waitJob(t, "buzzload-merge-"+run, 8*time.Minute)
			logs := kube(t, "", "logs", "job/buzzload-merge-"+run)
			if passed != c.pass {
				t.Fatalf("merge job passed=%v, want %v:\n%s", passed, c.pass, logs)
			}
			if !waitJob(t, testrun+"-initializer", time.Minute) {
				t.Fatalf("the initializer failed:\n%s", kube(t, "", "logs", "job/"+testrun+"-initializer"))
			}
			if !waitJob(t, testrun+"-starter", time.Minute) {
				t.Fatalf("the starter failed:\n%s", kube(t, "", "logs", "job/"+testrun+"-starter"))
			}
			// The runners started paused (the operator's --paused) and
			// the starter resumed them.
			cmds := kube(t, "", "get", "pods", "-l", "runner=true,k6_cr="+testrun, "-o", "jsonpath={range .items[*]}{.spec.containers[0].command}{\"\\n\"}{end}")
			if strings.Count(cmds, "--paused") != 3 {
				t.Errorf("runner commands without --paused:\n%s", cmds)
			}
			exits := podExits(t, "runner=true,k6_cr="+testrun)
			if len(exits) != 3 {
				t.Fatalf("runner pods %v, want 3 that ended", exits)
			}
			for pod, code := range exits {
				if code != 99 { // each runner judges only its share: 10 iterations fail count>=30
					t.Errorf("%s exited %d, want 99:\n%s", pod, code, kube(t, "", "logs", pod))
				}
			}
			merged := filepath.Join(pv, run, "merged.json")
			if c.pass {
				if code := podExits(t, "job-name=buzzload-merge-"+run); len(code) != 1 {
					t.Fatalf("merge pod %v", code)
				}
				tomlPath := filepath.Join(t.TempDir(), "buzz-test.toml")
				write(t, tomlPath, []byte(toml))
				seededOnce(t, tomlPath, 30)
				sameAsOneInstance(t, bin, merged)
			} else {
				for pod, code := range podExits(t, "job-name=buzzload-merge-"+run) {
					if code != 99 {
						t.Errorf("merge pod %s exited %d, want 99 (a threshold failed on the merged data)", pod, code)
					}
				}
				if !strings.Contains(logs, "count>=1000") {
					t.Errorf("the merge's summary does not show the failed threshold:\n%s", logs)
				}
			}
			kube(t, "", "delete", "testrun", testrun, "--wait=false")
		})
	}
}

// TestClusterIndexedJob applies examples/k8s/buzzload-job.yaml (three
// instances started together with --start-at): every pod succeeds (99 of
// a share is 0), the fixture is seeded once and the merge Job passes; with
// a threshold the whole run fails, the merge Job fails with 99.
func TestClusterIndexedJob(t *testing.T) {
	_, pv := clusterFixture(t)
	stamp := time.Now().Format("150405")
	for _, c := range passAndFail {
		t.Run(c.name, func(t *testing.T) {
			run := "indexed-" + c.name + "-" + stamp
			js, toml := scriptFiles(t, "k8s-"+run, c.threshold)
			scriptsConfigMap(t, map[string]string{"test.js": js, "buzz-test.toml": toml})
			start := time.Now().Add(45 * time.Second).UTC().Format(time.RFC3339)
			kube(t, forCluster(t, "buzzload-job.yaml", map[string]string{"RUN_NAME": run, "INSTANCES": "3", "IMAGE": e2eImage, "START_AT": start}), "apply", "-f", "-")
			passed := waitJob(t, "buzzload-merge-"+run, 8*time.Minute)
			logs := kube(t, "", "logs", "job/buzzload-merge-"+run)
			if passed != c.pass {
				t.Fatalf("merge job passed=%v, want %v:\n%s", passed, c.pass, logs)
			}
			if !waitJob(t, "buzzload-run-"+run, time.Minute) {
				t.Fatalf("the Indexed Job failed:\n%s", kube(t, "", "get", "pods", "-l", "run="+run))
			}
			for pod, code := range podExits(t, "role=runner,run="+run) {
				if code != 0 {
					t.Errorf("%s exited %d", pod, code)
				}
			}
			if !c.pass {
				for pod, code := range podExits(t, "role=merge,run="+run) {
					if code != 99 || !strings.Contains(logs, "count>=1000") {
						t.Errorf("merge pod %s exited %d, want 99 showing the threshold:\n%s", pod, code, logs)
					}
				}
				return
			}
			if _, err := os.Stat(filepath.Join(pv, run, "merged.json")); err != nil {
				t.Fatal(err)
			}
			tomlPath := filepath.Join(t.TempDir(), "buzz-test.toml")
			write(t, tomlPath, []byte(toml))
			seededOnce(t, tomlPath, 30)
		})
	}
}

// TestClusterRunnerKilled deletes a runner pod of a longer TestRun while
// it runs: that runner's Job fails, and the merge Job fails naming its
// segment (exit 105: it was interrupted) instead of passing. The merge Job's wait is shortened for this one case
// (WAIT_SECS).
func TestClusterRunnerKilled(t *testing.T) {
	_, _ = clusterFixture(t)
	run := "killed-" + time.Now().Format("150405")
	js, toml := scriptFiles(t, "k8s-"+run, "count>=30")
	// The same probe, 30 s longer: sleep between iterations.
	js = strings.Replace(js, `maxDuration: "60s"`, `maxDuration: "120s"`, 1)
	js = strings.Replace(js, "export default function (data) {", "import { sleep } from \"k6\";\nexport default function (data) {\n  sleep(3);", 1)
	configMap(t, "buzzload-test", map[string]string{"buzz-test.js": js, "buzz-test.toml": toml})
	manifest := forCluster(t, "testrun.yaml", map[string]string{"RUN_NAME": run, "INSTANCES": "3", "IMAGE": e2eImage})
	// Longer than the runners take (init, seed, ~30 s of iterations), far
	// shorter than the example's two hours.
	manifest = strings.Replace(manifest, "value: \"7200\"", "value: \"150\"", 1)
	if !strings.Contains(manifest, "value: \"150\"") {
		t.Fatal("could not shorten the merge Job's WAIT_SECS")
	}
	kube(t, manifest, "apply", "-f", "-")
	testrun := "buzzload-" + run
	// Wait until the runners are running (started), then kill runner 2.
	waitfor.UntilEvery(t, "the runners running, started", 5*time.Minute, time.Second, func() bool {
		out, _ := kubeTry("", "get", "pods", "-l", "runner=true,k6_cr="+testrun, "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}")
		return strings.Count(out, "=Running") == 3 && jobDone(testrun+"-starter")
	})
	time.Sleep(5 * time.Second) // the fault's moment: a few seconds into the load, as the test plays it
	kube(t, "", "delete", "pod", "-l", "runner=true,k6_cr="+testrun+",job-name="+testrun+"-2", "--grace-period=0", "--force")
	if waitJob(t, "buzzload-merge-"+run, 8*time.Minute) {
		t.Fatalf("the merge passed with a runner killed:\n%s", kube(t, "", "logs", "job/buzzload-merge-"+run))
	}
	// The killed runner writes its partial result on SIGTERM (exit 105,
	// "interrupted by signal") and the merge exits with that code; killed
	// harder, it writes none and the merge exits 1 naming the segment.
	logs := kube(t, "", "logs", "job/buzzload-merge-"+run)
	for pod, code := range podExits(t, "job-name=buzzload-merge-"+run) {
		interrupted := code == 105 && strings.Contains(logs, "segment 1/3:2/3") && strings.Contains(logs, "did not complete")
		missing := code == 1 && strings.Contains(logs, "segment 1/3:2/3 is missing")
		if !interrupted && !missing {
			t.Errorf("merge pod %s exited %d, want 105 or 1 naming the killed runner's segment:\n%s", pod, code, logs)
		}
	}
	if waitJob(t, testrun+"-2", time.Minute) {
		t.Errorf("the killed runner's Job %s-2 succeeded", testrun)
	}
	kube(t, "", "delete", "testrun", testrun, "--wait=false")
}

func jobDone(name string) bool {
	out, _ := kubeTry("", "get", "job", name, "-o", "jsonpath={.status.succeeded}")
	return strings.TrimSpace(out) == "1"
}

// TestClusterRelayLog runs buzzload against the in-cluster relay with
// --relay-log kubectl:default/app=buzz-relay while the test makes the
// relay's container log an ERROR line: the run fails with 112 and names
// it.
func TestClusterRelayLog(t *testing.T) {
	_, _ = clusterFixture(t)
	bin := k6Bin(t)
	dir := t.TempDir()
	_, toml := scriptFiles(t, "k8s-relaylog-"+time.Now().Format("150405"), "count>=30")
	tomlPath := filepath.Join(dir, "relaylog.toml")
	write(t, tomlPath, []byte(strings.Replace(toml, "hold_secs = 10", "hold_secs = 6", 1)))
	go func() {
		time.Sleep(4 * time.Second) // the fault's moment: mid-run, as the test plays it
		// The relay container's stdout is its log: what kubectl logs reads.
		_, _ = kubeTry("", "exec", "deploy/buzz-relay", "--", "sh", "-c",
			`echo "2026-12-04T00:00:02Z ERROR buzz::db: pool exhausted (k8s-e2e)" > /proc/1/fd/1`)
	}()
	env := append(testEnv(bin), "KUBECONFIG="+os.Getenv("KUBECONFIG"))
	repPath := filepath.Join(dir, "rep.json")
	code, out, errs := run(t, 3*time.Minute, env, filepath.Join(bin, "buzzload"), "buzzload", "run",
		"--relay-log", "kubectl:default/app=buzz-relay", "--relay-metrics", "kubectl:default/app=buzz-relay:"+relayPort,
		"--relay-metrics-interval", "2s", "--report", repPath, tomlPath)
	if code != 112 || !strings.Contains(out+errs, "pool exhausted (k8s-e2e)") {
		t.Fatalf("exit %d, want 112 naming the relay's ERROR line\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// The relay Deployment's own series, read through the API server's
	// pod proxy (issue 45): its stored events at least those acknowledged.
	raw, err := os.ReadFile(repPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	m := rep.RelayMetrics
	if m == nil || len(m.Sources) != 1 || m.Sources[0].Scrapes < 2 || m.Sources[0].Error != "" {
		t.Fatalf("relay_metrics %+v\n%s", m, out)
	}
	stored, _ := m.Delta(report.SeriesStored)
	if stored < float64(m.Run.Acknowledged) || m.Run.Acknowledged == 0 {
		t.Errorf("the relay's stored delta %v, the clients' acknowledged %d", stored, m.Run.Acknowledged)
	}
}
