package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func inspectScript(t *testing.T, src string, mut func(*RunConfig)) (*Inspection, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.js")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := RunConfig{Script: p, SummaryMode: "compact"}
	if mut != nil {
		mut(&cfg)
	}
	return Inspect(context.Background(), cfg)
}

// The execution requirements of docs/k6-operator.md, as real k6 v1.8.1
// printed them under `inspect --execution-requirements`.
func TestInspectExecutionRequirementsAsK6(t *testing.T) {
	seg := func(s string) func(*RunConfig) {
		return func(c *RunConfig) {
			c.CLI.Options.ExecutionSegment = &s
			seq := "0,1/3,2/3,1"
			c.CLI.Options.ExecutionSegmentSequence = &seq
		}
	}
	cases := []struct {
		name, src string
		mut       func(*RunConfig)
		maxVUs    float64
		total     string
	}{
		{"vus and duration add the 30s gracefulStop", `export const options = { vus: 2, duration: "2s" }; export default function () {}`, nil, 2, "32s"},
		{"iterations only: maxDuration 10m plus gracefulStop", `export const options = { iterations: 3 }; export default function () {}`, nil, 1, "10m30s"},
		{"a segment without VUs plans nothing", `export const options = { scenarios: { s: { executor: "shared-iterations", vus: 1, iterations: 3 } } }; export default function () {}`, seg("1/3:2/3"), 0, "0s"},
		{"the segment with the VU plans it", `export const options = { scenarios: { s: { executor: "shared-iterations", vus: 1, iterations: 3 } } }; export default function () {}`, seg("0:1/3"), 1, "10m30s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := inspectScript(t, c.src, c.mut)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := in.RequirementsJSON(true, false)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if doc["maxVUs"] != c.maxVUs || doc["totalDuration"] != c.total {
				t.Fatalf("maxVUs %v totalDuration %v, want %v %s", doc["maxVUs"], doc["totalDuration"], c.maxVUs, c.total)
			}
			// A script's inspect shows the defaults it did not set as null.
			if doc["summaryTrendStats"] != nil || doc["systemTags"] != nil {
				t.Errorf("defaults shown: %v %v", doc["summaryTrendStats"], doc["systemTags"])
			}
		})
	}
}

func TestInspectListsTheFilesInitRead(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"main.js":   `import { f } from "./lib.js"; const d = open("./d.txt"); export default function () { f(d); }`,
		"lib.js":    `export function f() {}`,
		"d.txt":     "data",
		"unused.js": "never read",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := Inspect(context.Background(), RunConfig{Script: filepath.Join(dir, "main.js"), SummaryMode: "compact"})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Files) != 3 || string(in.Files[filepath.Join(dir, "d.txt")]) != "data" || in.Script != filepath.Join(dir, "main.js") {
		t.Fatalf("files %v, script %s", in.Files, in.Script)
	}
}

func TestInspectOfABrokenScriptIsExit107(t *testing.T) {
	_, err := inspectScript(t, "export default function ( {", nil)
	if err == nil || ExitCode(err) != ExitScriptException {
		t.Fatalf("err %v (exit %d), want 107", err, ExitCode(err))
	}
}

// k6-operator reads cloud and ext.loadimpact from inspect's output.
func TestInspectShowsCloudAndExtAsGiven(t *testing.T) {
	in, err := inspectScript(t, `export const options = { iterations: 1, cloud: { name: "n" }, ext: { loadimpact: { projectID: 7 } } }; export default function () {}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := in.RequirementsJSON(true, false)
	var doc struct {
		Cloud map[string]any `json:"cloud"`
		Ext   struct {
			Loadimpact map[string]any `json:"loadimpact"`
		} `json:"ext"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Cloud["name"] != "n" || doc.Ext.Loadimpact["projectID"] != float64(7) {
		t.Fatalf("%s (%v)", raw, err)
	}
}
