package extension_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/extension"
)

// Every client operation becomes samples of the metrics in
// docs/architecture.md tagged with op, scenario and the ramp step.
// Self-contained (its own TOML and runner call).

const opTagsTOML = `run_id = "op-tags"
[shape]
communities = 1
channels_per_community = 2
history_messages_per_channel = 2
thread_roots_per_channel = 1
thread_depth = 1
seed_concurrency = 4
[population]
humans = 2
agents = 1
channels_per_member = 2
connect_rate_per_sec = 50
[human]
presence_interval_secs = 1
messages_per_hour = 7200
[agent]
query_interval_secs = 1
events_per_hour = 3600
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 2
[[ramp]]
users = 2
ramp_secs = 0
hold_secs = 2
[abort]
max_p99_ms = 5000
max_error_rate = 0.5
`

func TestOperationSamplesCarryOpScenarioAndStep(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "scenarios", "local-smoke.js"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"script.js": string(src), "local-smoke.toml": opTagsTOML})
	points := filepath.Join(dir, "points.json")
	r := runWithModule(t, extension.Options{}, engine.RunConfig{Script: filepath.Join(dir, "script.js"),
		Outputs: []string{"json=" + points}, ScriptEnv: map[string]string{"BUZZ_REPORT": filepath.Join(dir, "report.json")}})
	if r.res.ExitCode != 0 {
		t.Fatalf("exit %d (%v)\nstdout:\n%s\nstderr:\n%s", r.res.ExitCode, r.res.Err, r.stdout, r.stderr)
	}
	f, err := os.Open(points)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// seen[metric][op] = set of "scenario/step" pairs.
	seen := map[string]map[string]map[string]bool{}
	emitted := map[string]bool{} // every buzz_* metric with a sample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Type   string `json:"type"`
			Metric string `json:"metric"`
			Data   struct {
				Tags map[string]string `json:"tags"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("bad JSON output line %q: %v", sc.Text(), err)
		}
		if line.Type != "Point" {
			continue
		}
		if strings.HasPrefix(line.Metric, "buzz_") {
			emitted[line.Metric] = true
		}
		switch line.Metric {
		case "buzz_op_duration", "buzz_op_failed":
		default:
			continue
		}
		tags := line.Data.Tags
		op, step, scen := tags["op"], tags["step"], tags["scenario"]
		if op == "" || step == "" {
			t.Fatalf("%s sample without op or step: %v", line.Metric, tags)
		}
		if seen[line.Metric] == nil {
			seen[line.Metric] = map[string]map[string]bool{}
		}
		if seen[line.Metric][op] == nil {
			seen[line.Metric][op] = map[string]bool{}
		}
		seen[line.Metric][op][scen+"/"+step] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Operations in the ramp steps carry the population's scenario and the
	// step index; both steps of the ramp appear.
	for _, want := range []struct{ op, pair string }{
		{"publish", "humans/0"}, {"publish", "humans/1"},
		{"deliver", "humans/1"},
		{"connect", "humans/0"},
		{"http_query", "agents/1"},
	} {
		if !seen["buzz_op_duration"][want.op][want.pair] {
			t.Errorf("no buzz_op_duration{op:%s} sample tagged scenario/step %s; seen %v", want.op, want.pair, seen["buzz_op_duration"][want.op])
		}
	}
	if len(seen["buzz_op_failed"]) == 0 {
		t.Error("no buzz_op_failed samples")
	}
	// Whatever the module emits, xk6.yaml declares.
	declared := manifestMetrics(t)
	for m := range emitted {
		if !declared[m] {
			t.Errorf("metric %s is emitted but not declared in xk6.yaml", m)
		}
	}
}
