package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A custom script on the low-level API that is cut short gets a failed
// report: test.abort() (108) and test.fail() (110) alike, in the JSON and
// the summary (reliability.md F5: both said "result: ok"). Fails without
// Module.NoteRunEnd.
func TestLowLevelScriptCutShortIsNotOK(t *testing.T) {
	t.Parallel() // subprocesses that mostly wait
	for _, c := range []struct {
		name, call, want string
		code             int
	}{
		{"abort", `exec.test.abort("probe abort")`, "aborted by test.abort()", 108},
		{"fail", `exec.test.fail("probe fail")`, "marked as failed", 110},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTestdata(t, "ops-tiny.toml")
			script := `import buzz from "k6/x/buzz";
import exec from "k6/execution";
import { sleep } from "k6";
const sc = buzz.load("./ops-tiny.toml");
export const options = { vus: 1, iterations: 3 };
export function setup() { sc.setup(); }
export default function () {
  const s = sc.connect("human", 0);
  if (s.ok) { s.close(); }
  if (exec.scenario.iterationInTest === 1) { ` + c.call + `; }
  sleep(0.1);
}
export function handleSummary(data) { return sc.report(data, { json: "report.json" }); }
`
			if err := os.WriteFile(filepath.Join(dir, "s.js"), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runBin(t, dir, nil, "run", "-q", "s.js")
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, out, errs)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				OK          bool   `json:"ok"`
				AbortReason string `json:"abort_reason"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			if r.OK || !strings.Contains(r.AbortReason, c.want) {
				t.Fatalf("report ok=%v abort_reason %q, want a failure naming %q", r.OK, r.AbortReason, c.want)
			}
			if !strings.Contains(out, "result: FAILED") || strings.Contains(out, "result: ok") {
				t.Fatalf("summary does not say FAILED:\n%s", out)
			}
		})
	}
}
