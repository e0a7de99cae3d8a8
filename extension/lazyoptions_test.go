package extension_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/scenario"
)

// In a VU after the first init, sc.options() and the scenario object are
// built lazily (issue 16); a script reading them there sees what the first
// init got: every key, nested values and arrays, the overrides merged in.
func TestOptionsAndScenarioObjectInLaterVUs(t *testing.T) {
	dir := t.TempDir()
	src := `import buzz from "k6/x/buzz";
const sc = buzz.load("./tiny.toml");
const mine = sc.options({ setupTimeout: "3s" });
const plain = sc.options();
// per-vu-iterations: with shared iterations VU 1 may take both and VU 2 none.
export const options = { scenarios: { s: { executor: "per-vu-iterations", vus: 2, iterations: 1 } } };
export default function () {
  if (__VU !== 2) return;
  console.log("opts=" + JSON.stringify(mine) + ".");
  console.log("read=" + [Object.keys(mine.thresholds).length, mine.scenarios.humans.executor,
    mine.summaryTrendStats.join("+"), mine.setupTimeout, plain.setupTimeout, Array.isArray(mine.summaryTrendStats),
    sc.runId, typeof sc.human, typeof sc.connect, sc.nope, Object.keys(sc).join("+")].join(",") + ".");
  mine.thresholds = null;
  console.log("again=" + (sc.options({ setupTimeout: "3s" }).thresholds !== null) + ".");
}
`
	writeFiles(t, dir, map[string]string{"tiny.toml": tinySmoke, "script.js": src})
	r := runWithModule(t, extension.Options{}, engine.RunConfig{Script: filepath.Join(dir, "script.js")})
	if r.res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", r.res.ExitCode, r.stderr)
	}

	sc, err := scenario.Parse(filepath.Join(dir, "tiny.toml"), []byte(tinySmoke))
	if err != nil {
		t.Fatal(err)
	}
	built, _ := k6options.Build(sc, scenario.Shard{})
	merged, err := k6options.Merge(built, map[string]any{"setupTimeout": "3s"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(merged)
	var wantVal, gotVal any
	_ = json.Unmarshal(want, &wantVal)
	log := r.stderr
	got := between(log, "opts=", ".\"")
	if err := json.Unmarshal([]byte(strings.ReplaceAll(got, `\"`, `"`)), &gotVal); err != nil {
		t.Fatalf("VU 2's sc.options() %q: %v\n%s", got, err, log)
	}
	if g, w := mustMarshal(gotVal), mustMarshal(wantVal); g != w {
		t.Errorf("VU 2's sc.options() =\n %s\nwant\n %s", g, w)
	}
	th := len(built.Thresholds)
	wantRead := strings.Join([]string{itoa(th), "ramping-vus", "avg+min+med+max+p(95)+p(99)", "3s", "10m", "true",
		"tiny-smoke", "function", "function", "", "runId+file+desktopMode+options+thresholds+peak+limits+steps+setup+" +
			"teardown+human+desktop+agent+hotAuthor+run+report+client+channelId+hotRoot+connect+http"}, ",")
	if r := between(log, "read=", ".\""); r != wantRead {
		t.Errorf("VU 2 read %q, want %q", r, wantRead)
	}
	if a := between(log, "again=", ".\""); a != "true" {
		t.Errorf("a write to one sc.options() result reached the next one (again=%s)", a)
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

func mustMarshal(v any) string { b, _ := json.Marshal(v); return string(b) }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
