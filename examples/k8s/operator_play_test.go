package k8s

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// playOperator is a TestRun of three runners: initializer, runners,
// readiness, starter, exits, merge, and the comparisons.
func playOperator(t *testing.T, image bool, cloud *cloudRun) {
	bin := k6Bin(t)
	need(t, "curl")
	relay := startRelay(t, bin, t.TempDir(), "relay")
	p := newPods(t, image, bin, relay)
	initialize(t, p)
	args := testArguments
	if cloud != nil {
		args, p.runnerEnv = cloud.arguments(args), cloud.env(false)
	}
	runners, addrs := startRunners(t, p, args)
	starter(t, bin, addrs)
	// Each runner judges only its share: 10 iterations fail count>=30.
	for _, r := range runners {
		if c := r.wait(t, 2*time.Minute); c != 99 {
			t.Fatalf("%s: exit %d, want 99 (its share fails count>=30):\n%s", r.name, c, r.output())
		}
	}
	oneSeeder(t, runners)
	seededOnce(t, filepath.Join(p.scripts, "distributed.toml"), 30)
	sameAsOneInstance(t, bin, mergeJob(t, p))
	if cloud != nil {
		cloud.check(t)
	}
}

// TestPlaysTheOperator runs a three-runner TestRun as k6-operator would,
// with processes on loopback: the merge's counts equal one instance's run
// of the same script, its thresholds are judged on the whole, and the
// fixture is seeded once.
func TestPlaysTheOperator(t *testing.T) {
	playOperator(t, false, nil)
}

// TestPlaysTheOperatorCloudOutput is a TestRun with `--out cloud` in its
// arguments: the operator creates the cloud test run and gives every
// runner K6_CLOUD_PUSH_REF_ID and K6_CLOUD_TOKEN (and the aggregation
// settings); the runners only push, to a capture server on loopback that
// decodes and checks what arrives.
func TestPlaysTheOperatorCloudOutput(t *testing.T) {
	playOperator(t, false, newCloudRun(t))
}

// TestPlaysTheOperatorWithTheImage is the same with every pod a container
// of the image.
func TestPlaysTheOperatorWithTheImage(t *testing.T) {
	image(t)
	playOperator(t, true, newCloudRun(t))
}

// TestPlaysTheOperatorPLZ is the operator's cloud (PLZ) flow: runners with
// --no-setup --no-teardown --linger, setup() run once through POST
// /v1/setup on the first runner and its data PUT to every runner, the
// starter, GET /v1/status until no runner is running, POST /v1/teardown on
// the first, then the pods are deleted (SIGTERM).
func TestPlaysTheOperatorPLZ(t *testing.T) {
	bin := k6Bin(t)
	need(t, "curl")
	relay := startRelay(t, bin, t.TempDir(), "relay")
	p := newPods(t, false, bin, relay)
	cloud := newCloudRun(t)
	p.runnerEnv = cloud.env(true)
	runners, addrs := startRunners(t, p, cloud.arguments(testArguments), "--no-setup", "--no-teardown", "--linger")
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Post("http://"+addrs[0]+"/v1/setup", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var setup struct {
		Data struct {
			Attributes struct {
				Data json.RawMessage `json:"data"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &setup) != nil || len(setup.Data.Attributes.Data) == 0 {
		t.Fatalf("POST /v1/setup: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(string(setup.Data.Attributes.Data), `"role":"seed"`) {
		t.Fatalf("the first runner's setup did not seed: %s", setup.Data.Attributes.Data)
	}
	for _, a := range addrs {
		req, _ := http.NewRequest(http.MethodPut, "http://"+a+"/v1/setup", strings.NewReader(string(setup.Data.Attributes.Data)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("PUT /v1/setup on %s: %d %s", a, resp.StatusCode, b)
		}
	}
	starter(t, bin, addrs)
	for _, a := range addrs {
		waitfor.UntilEvery(t, "runner "+a+" to stop running", 2*time.Minute, 200*time.Millisecond, func() bool {
			resp, err := client.Get("http://" + a + "/v1/status")
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Data struct {
					Attributes struct {
						Running bool `json:"running"`
					} `json:"attributes"`
				} `json:"data"`
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatalf("GET /v1/status: %s", b)
			}
			return !st.Data.Attributes.Running
		})
	}
	resp, err = client.Post("http://"+addrs[0]+"/v1/teardown", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/teardown: %d", resp.StatusCode)
	}
	for _, r := range runners {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		r.wait(t, time.Minute)
		if strings.Contains(r.output(), "waiting up to") {
			t.Errorf("%s called setup() although it was started with --no-setup:\n%s", r.name, r.output())
		}
	}
	seededOnce(t, filepath.Join(p.scripts, "distributed.toml"), 30)
	sameAsOneInstance(t, bin, mergeJob(t, p))
	cloud.check(t)
}
