package extension_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/extension"
)

// expectScript posts to a channel that does not exist (the relay refuses
// it with an "invalid:" reason) and to one that does, under the
// scenario's limits as whole-run thresholds. EXPECT, when set, declares
// the refusal expected through buzz.load.
const expectScript = `import buzz from "k6/x/buzz";
const rules = __ENV.EXPECT ? [{ op: "bad_post", text: "invalid:", level: __ENV.EXPECT }] : [];
const sc = buzz.load("./expect.toml", { expect: rules });
export const options = {
  scenarios: { posters: { executor: "per-vu-iterations", vus: 1, iterations: 5, exec: "post" } },
  thresholds: sc.thresholds(["bad_post", "good_post"], "0s"),
};
export function setup() { return { channel: sc.channelId(0, 0), seeded: sc.setup() }; }
export function post(data) {
  const s = sc.connect("human", 0);
  s.publish({ kind: 9, content: "lost", tags: [["h", "no-such-channel"]] }, { op: "bad_post" });
  s.publish({ kind: 9, content: "kept", tags: [["h", data.channel]] }, { op: "good_post" });
  s.close();
}
export function teardown() { sc.teardown(); }
export function handleSummary(data) { return sc.report(data, { json: __ENV.BUZZ_REPORT }); }
`

const expectTOML = `run_id = "expect-e2e"
[shape]
communities = 1
channels_per_community = 1
history_messages_per_channel = 0
thread_roots_per_channel = 0
[population]
humans = 2
agents = 0
channels_per_member = 1
[[ramp]]
users = 1
hold_secs = 1
`

// An error an expect rule matches is counted apart and does not fail the
// run; the same error without the rule fails it (issue 26 item 1). Fails
// without expected.go: the rule is ignored and bad_post's error rate
// crosses the threshold.
func TestExpectedErrorsAreCountedApartAndPass(t *testing.T) {
	bad := runInline(t, t.TempDir(), expectScript, "expect.toml", expectTOML, nil, nil, nil)
	if bad.res.ExitCode == 0 || bad.report.OK {
		bad.dump(t)
		t.Fatalf("without a rule the refusals passed: exit %d", bad.res.ExitCode)
	}
	for _, level := range []string{"warn", "ignore"} {
		t.Run(level, func(t *testing.T) {
			r := runInline(t, t.TempDir(), expectScript, "expect.toml", expectTOML, nil, nil, map[string]string{"EXPECT": level})
			if r.res.ExitCode != 0 || !r.report.OK {
				r.dump(t)
				t.Fatalf("exit %d, abort_reason %q", r.res.ExitCode, r.report.AbortReason)
			}
			var errs, expected int64
			for _, s := range r.report.Steps {
				if o := s.Ops["bad_post"]; o != nil {
					errs += o.Errors
					expected += o.Expected
				}
			}
			if errs != 0 || expected != 5 {
				t.Errorf("bad_post: %d errors, %d expected; want 0 and 5", errs, expected)
			}
			if len(r.report.Expected) != 1 || r.report.Expected[0].Count != 5 || r.report.Expected[0].Ops["bad_post"] != 5 ||
				len(r.report.Expected[0].Samples) == 0 || !strings.HasPrefix(r.report.Expected[0].Samples[0], "invalid:") {
				t.Errorf("report.expected %+v", r.report.Expected)
			}
			if !strings.Contains(r.stdout, "expected errors (known refusals") || !strings.Contains(r.stdout, "bad_post 5") {
				t.Errorf("the console does not list the expected errors:\n%s", r.stdout)
			}
			warned := strings.Contains(strings.Join(r.report.Warnings, "\n"), "5 expected errors")
			if warned != (level == "warn") {
				t.Errorf("level %s: warned %v (%q)", level, warned, r.report.Warnings)
			}
		})
	}
}

// Bad rules are refused at load, naming the key.
func TestBadExpectRulesNameTheKey(t *testing.T) {
	toml := expectTOML + "[[expect]]\nop = \"publsh\"\n"
	r := runWithModuleScript(t, expectScript, toml, nil)
	if r.res.ExitCode == 0 || !strings.Contains(r.stderr+r.stdout, "expect[0].op") || !strings.Contains(r.stderr+r.stdout, "publsh") {
		r.dump(t)
		t.Errorf("an unknown op was accepted or not named (exit %d)", r.res.ExitCode)
	}
	r = runWithModuleScript(t, expectScript, expectTOML, map[string]string{"EXPECT": "loud"})
	if r.res.ExitCode == 0 || !strings.Contains(r.stderr+r.stdout, "buzz.load expect[0].level") {
		r.dump(t)
		t.Errorf("a bad level was accepted or not named (exit %d)", r.res.ExitCode)
	}
}

// runWithModuleScript runs src (script.js next to expect.toml) when the run
// may not get as far as a report.
func runWithModuleScript(t *testing.T, src, toml string, env map[string]string) *run {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"script.js": src, "expect.toml": toml})
	return runWithModule(t, extension.Options{}, engine.RunConfig{Script: filepath.Join(dir, "script.js"),
		ScriptEnv: scriptEnv(filepath.Join(dir, "report.json"), env)})
}
