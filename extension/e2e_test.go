package extension_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/extension"
	"github.com/buzzload/buzzload/js"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// tinySmoke is local-smoke.toml in miniature: two steps of a few seconds,
// busy enough that every human and agent operation happens.
const tinySmoke = `run_id = "tiny-smoke"

[target]
connect_timeout_secs = 5

[shape]
communities = 2
channels_per_community = 2
history_messages_per_channel = 3
thread_roots_per_channel = 1
thread_depth = 2
seed_concurrency = 4

[population]
humans = 3
agents = 1
channels_per_member = 2
connect_rate_per_sec = 50

[human]
history_limit = 5
presence_interval_secs = 1
typing_per_hour = 3600
messages_per_hour = 7200
reactions_per_hour = 1800

[agent]
query_interval_secs = 1
events_per_hour = 3600
observer_frames_per_hour = 3600

[[ramp]]
users = 1
ramp_secs = 1
hold_secs = 3

[[ramp]]
users = 2
ramp_secs = 1
hold_secs = 3

[abort]
max_p99_ms = 3000
max_error_rate = 0.05
`

type run struct {
	res    engine.Result
	stdout string
	stderr string
	report *report.Report
	raw    map[string]any
	mod    *extension.Module
}

// runWithModule runs cfg.Script in-process through the runner (at most 90
// s) with a fresh k6/x/buzz made from opts registered, closed at cleanup.
// opts.LookupEnv defaults to an empty environment and cfg.SummaryMode to
// compact; the runner's registry, helpers and output are set here.
func runWithModule(t *testing.T, opts extension.Options, cfg engine.RunConfig) *run {
	t.Helper()
	if opts.LookupEnv == nil {
		opts.LookupEnv = func(string) (string, bool) { return "", false }
	}
	reg := jshost.NewRegistry()
	mod := extension.New(opts)
	if err := reg.Register(extension.ImportPath, mod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mod.Close() })
	var out, errb bytes.Buffer
	cfg.Registry, cfg.Helpers, cfg.Quiet, cfg.Stdout, cfg.Stderr = reg, js.FS, true, &out, &errb
	if cfg.SummaryMode == "" {
		cfg.SummaryMode = "compact"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res := engine.Run(ctx, cfg)
	return &run{res: res, stdout: out.String(), stderr: errb.String(), mod: mod}
}

// writeFiles writes each file (name → body) into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// runScenario runs the shipped script scriptName (from scenarios/) against
// toml saved under tomlName next to it, in-process through the runner, on
// the embedded relay.
func runScenario(t *testing.T, scriptName, tomlName, toml string, mutate func(*relay.Config), env map[string]string) *run {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "scenarios", scriptName))
	if err != nil {
		t.Fatal(err)
	}
	return runInline(t, t.TempDir(), string(src), tomlName, toml, mutate, nil, env)
}

// runInline runs script (saved as script.js in dir, next to toml) through
// the runner in-process, with a fresh k6/x/buzz on the embedded relay.
func runInline(t *testing.T, dir, src, tomlName, toml string, mutate func(*relay.Config), onRelay func(*relay.Relay), env map[string]string) *run {
	t.Helper()
	return runInlineFlags(t, dir, src, tomlName, toml, mutate, onRelay, env, engine.Layer{})
}

// runInlineFlags is runInline with cli as the run's flag layer.
func runInlineFlags(t *testing.T, dir, src, tomlName, toml string, mutate func(*relay.Config), onRelay func(*relay.Relay), env map[string]string, cli engine.Layer) *run {
	t.Helper()
	writeFiles(t, dir, map[string]string{"script.js": src, tomlName: toml})
	reportPath := filepath.Join(dir, "report.json")
	r := runWithModule(t, extension.Options{Relay: mutate, OnRelay: onRelay},
		engine.RunConfig{Script: filepath.Join(dir, "script.js"), ScriptEnv: scriptEnv(reportPath, env), CLI: cli})
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatalf("no report (exit %d): %v\nstdout:\n%s\nstderr:\n%s", r.res.ExitCode, err, r.stdout, r.stderr)
	}
	r.report = &report.Report{}
	if err := json.Unmarshal(raw, r.report); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &r.raw); err != nil {
		t.Fatal(err)
	}
	if r.mod.EmbeddedRelay() != nil {
		t.Error("the embedded relay still runs after the report")
	}
	return r
}

func (r *run) dump(t *testing.T) {
	t.Helper()
	t.Logf("exit %d err %v\nstdout:\n%s\nstderr:\n%s", r.res.ExitCode, r.res.Err, r.stdout, r.stderr)
}

func TestSmokeScriptOnEmbeddedRelay(t *testing.T) {
	r := runScenario(t, "local-smoke.js", "local-smoke.toml", tinySmoke, nil, nil)
	if r.res.ExitCode != 0 || !r.report.OK {
		r.dump(t)
		t.Fatalf("exit %d, report ok=%v abort_reason=%q", r.res.ExitCode, r.report.OK, r.report.AbortReason)
	}
	rep := r.report
	if len(rep.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(rep.Steps))
	}
	// Over the run, every operation of humans and agents happened and
	// succeeded at least once.
	seen := map[string]int64{}
	for _, s := range rep.Steps {
		if !s.Reached {
			t.Errorf("step %d not reached", s.Index)
		}
		for op, o := range s.Ops {
			seen[op] += o.OK
		}
	}
	for _, op := range []string{"connect", "auth", "subscribe_eose", "history", "publish", "deliver", "http_query", "http_events"} {
		if seen[op] == 0 {
			t.Errorf("no successful %s in the report: %v", op, seen)
		}
	}
	if got := rep.Steps[1].Clients["human"]; got != 6 {
		t.Errorf("step 1 humans = %d, want 6", got)
	}
	if rep.Seed == nil || !rep.Seed.Embedded || rep.Seed.Posts == 0 || rep.Seed.Communities != 2 || !strings.Contains(r.stdout, "seed: 2 communities") {
		t.Errorf("seed summary %+v missing or wrong", rep.Seed)
	}
	if rep.Setup["seed_history"] == nil {
		t.Errorf("setup ops %v lack seed_history", rep.Setup)
	}
	// The engine's own samples agree: buzz_op_duration has publish samples
	// tagged with a step, and every threshold passed.
	snap := r.res.Summary
	if snap == nil {
		t.Fatal("no summary snapshot")
	}
	if m := snap.Metric("buzz_op_duration"); m == nil || m.Sink.IsEmpty() {
		t.Fatalf("buzz_op_duration has no samples")
	}
	if len(r.res.Thresholds) == 0 {
		t.Fatal("no thresholds declared by options()")
	}
	for _, th := range r.res.Thresholds {
		if !th.OK {
			t.Errorf("threshold %s failed", th.String())
		}
	}
	if !strings.Contains(r.stdout, "step 1  users 2") || !strings.Contains(r.stdout, "result: ok") {
		t.Errorf("text report missing step table or result:\n%s", r.stdout)
	}
	// k6's summary (thresholds, checks, built-in metrics) comes first, then
	// the Buzz report.
	k6At, buzzAt := strings.Index(r.stdout, "█ TOTAL RESULTS"), strings.Index(r.stdout, "step 1  users 2")
	if !strings.Contains(r.stdout, "█ THRESHOLDS") || k6At < 0 || k6At > buzzAt || !strings.Contains(r.stdout, "iterations") {
		t.Errorf("k6's summary is not printed before the Buzz report:\n%s", r.stdout)
	}
	// JSON shape (what other tools read).
	for _, k := range []string{"run_id", "scenario", "ok", "limits", "steps", "shutdown", "client_exits"} {
		if _, ok := r.raw[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	step0 := r.raw["steps"].([]any)[0].(map[string]any)
	pub := step0["ops"].(map[string]any)["publish"].(map[string]any)
	for _, k := range []string{"count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "errors", "error_rate", "throttled", "pending"} {
		if _, ok := pub[k]; !ok {
			t.Errorf("op report lacks %q: %v", k, pub)
		}
	}
	sd := r.raw["shutdown"].(map[string]any)
	for _, k := range []string{"ops", "failures", "grace_s"} {
		if _, ok := sd[k]; !ok {
			t.Errorf("shutdown lacks %q: %v", k, sd)
		}
	}
}

func TestAbortOnTinyP99NamesStepAndOp(t *testing.T) {
	toml := strings.Replace(tinySmoke, "max_p99_ms = 3000", "max_p99_ms = 0.001", 1)
	r := runScenario(t, "local-smoke.js", "local-smoke.toml", toml, nil, nil)
	if r.res.ExitCode != engine.ExitThresholdsFailed {
		r.dump(t)
		t.Fatalf("exit %d, want 99", r.res.ExitCode)
	}
	if r.report.OK || !strings.HasPrefix(r.report.AbortReason, "step 0: ") || !strings.Contains(r.report.AbortReason, "p99") {
		t.Fatalf("abort_reason %q should name step 0 and a p99", r.report.AbortReason)
	}
	if !strings.Contains(r.report.AbortReason, "connect p99") && !strings.Contains(r.report.AbortReason, "auth p99") {
		t.Errorf("abort_reason %q should name the op (connect or auth)", r.report.AbortReason)
	}
	// The run stopped in step 0: step 1's hold was never judged.
	if r.report.Steps[1].Reached && r.report.Steps[1].AbortReason == "" && len(r.report.Steps[1].Ops) > 20 {
		t.Errorf("step 1 ran on after the abort: %+v", r.report.Steps[1])
	}
	// One story (issue 47 item 4): the abort names the step that broke its
	// limits, and the rule's per-op thresholds are not listed again.
	if !strings.Contains(r.stdout, "result: FAILED") || !strings.Contains(r.stdout, "(step 0 broke its [abort] limits)") ||
		strings.Contains(r.stdout, "thresholds crossed:") {
		t.Errorf("text report does not say FAILED and that step 0's limits stopped it, once:\n%s", r.stdout)
	}
	if len(r.report.ThresholdsFailed) == 0 || !strings.Contains(strings.Join(r.report.ThresholdsFailed, " "), "buzz_op_duration{op:") ||
		len(r.report.RuleThresholdsFailed) != len(r.report.ThresholdsFailed) {
		t.Errorf("thresholds_failed %v lacks the p99 threshold, or it is not marked as the rule's (%v)", r.report.ThresholdsFailed, r.report.RuleThresholdsFailed)
	}
	// The abort interrupts the clients at once; they are not failures.
	if len(r.report.ClientExits) != 0 || strings.Contains(r.report.AbortReason, "exited") {
		t.Errorf("clients interrupted by the abort counted as exits: %+v / %q", r.report.ClientExits, r.report.AbortReason)
	}
	if r.report.Interrupted["human"] == 0 {
		t.Errorf("interrupted %v: the humans in session at the abort are not listed", r.report.Interrupted)
	}
}

func TestThrottledPublishesAreNotErrors(t *testing.T) {
	// Nothing seeded by the humans, so the seed itself is not throttled.
	toml := strings.Replace(tinySmoke, "history_messages_per_channel = 3", "history_messages_per_channel = 0", 1)
	toml = strings.Replace(toml, "thread_roots_per_channel = 1", "thread_roots_per_channel = 0", 1)
	r := runScenario(t, "local-smoke.js", "local-smoke.toml", toml, func(c *relay.Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 2
	}, nil)
	var throttled, errs int64
	for _, s := range r.report.Steps {
		if o := s.Ops["publish"]; o != nil {
			throttled += o.Throttled
			errs += o.Errors
		}
	}
	if throttled == 0 {
		r.dump(t)
		t.Fatal("no throttled publish: the relay limit did not bite")
	}
	if errs != 0 {
		t.Errorf("%d publish errors; throttles must not count as errors", errs)
	}
	if r.res.ExitCode != 0 {
		r.dump(t)
		t.Errorf("exit %d: throttles alone must not fail the run (abort_reason %q)", r.res.ExitCode, r.report.AbortReason)
	}
}

// graceScript is the smoke script with a 1 s shutdown grace, so a request
// the relay holds longer is cancelled at the stop.
const graceScript = `import buzz from "k6/x/buzz";
const sc = buzz.load("./grace.toml");
export const options = sc.options({ scenarios: { agents: { gracefulStop: "1s" }, humans: { gracefulStop: "1s" } } });
export function setup() { return sc.setup(); }
export function human() { sc.human(); }
export function agent() { sc.agent(); }
export function handleSummary(data) { return sc.report(data, { json: __ENV.BUZZ_REPORT }); }
`

func TestCancelledAtStopFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	toml := strings.Replace(tinySmoke, "max_p99_ms = 3000", "max_p99_ms = 60000", 1)
	r := runInline(t, dir, graceScript, "grace.toml", toml, func(c *relay.Config) {}, func(rl *relay.Relay) {
		// After the seed: every HTTP answer takes 5 s, longer than the grace.
		time.AfterFunc(2500*time.Millisecond, func() { rl.Faults().SetHTTPLatency(5 * time.Second) })
	}, nil)
	if r.res.ExitCode != engine.ExitThresholdsFailed {
		r.dump(t)
		t.Fatalf("exit %d, want 99", r.res.ExitCode)
	}
	sd := r.report.Shutdown
	if !strings.Contains(sd.AbortReason, "cancelled") {
		r.dump(t)
		t.Errorf("shutdown abort_reason %q does not name the cancelled clients", sd.AbortReason)
	}
	q := sd.Ops["http_query"]
	if q == nil || q.Errors == 0 || len(q.ErrorTexts) == 0 || !strings.Contains(q.ErrorTexts[0].Text, "unfinished at stop") {
		t.Errorf("shutdown http_query %+v: want unfinished-at-stop errors", q)
	}
	found := false
	for _, e := range r.report.ClientExits {
		found = found || (e.Kind == "agent" && e.Reason == "cancelled" && e.Count > 0)
	}
	if !found {
		t.Errorf("client exits %+v lack a cancelled agent", r.report.ClientExits)
	}
	if r.report.OK || r.report.AbortReason == "" {
		t.Error("the report does not say why the run failed")
	}
}

func TestDesktopHumansRun(t *testing.T) {
	toml := strings.Replace(tinySmoke, "[[ramp]]", "[desktop]\nfraction = 0.5\ntick_secs = 1\nbackstop_secs = 2\n\n[[ramp]]", 1)
	r := runScenario(t, "local-smoke.js", "local-smoke.toml", toml, nil, nil)
	if r.res.ExitCode != 0 || !r.report.OK {
		r.dump(t)
		t.Fatalf("exit %d, abort_reason %q", r.res.ExitCode, r.report.AbortReason)
	}
	if r.report.Steps[1].Clients["desktop"] == 0 {
		t.Fatalf("no desktop humans planned: %v", r.report.Steps[1].Clients)
	}
	ok := map[string]int64{}
	for _, s := range r.report.Steps {
		for op, o := range s.Ops {
			ok[op] += o.OK
		}
	}
	for _, op := range []string{"desktop_nip11", "desktop_metadata", "desktop_window"} {
		if ok[op] == 0 {
			t.Errorf("no successful %s: %v", op, ok)
		}
	}
	if ok["desktop_live_eose"]+ok["desktop_replay_eose"] == 0 {
		t.Errorf("no desktop channel subscription reached EOSE: %v", ok)
	}
}

func scriptEnv(report string, extra map[string]string) map[string]string {
	env := map[string]string{"BUZZ_REPORT": report}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

const tinyPaced = `run_id = "tiny-paced"
[shape]
communities = 1
channels_per_community = 2
history_messages_per_channel = 2
thread_roots_per_channel = 0
[population]
humans = 3
agents = 0
channels_per_member = 2
[human]
history_limit = 2
typing_per_hour = 0
messages_per_hour = 0
reactions_per_hour = 0
[hot_thread]
seed_replies = 3
authors = 2
[[ramp]]
users = 1
ramp_secs = 1
hold_secs = 4
`

// The paced script drives the low-level API: timed hot replies through
// sc.http().events on constant-arrival-rate, reads through query, and the
// humans record delivery of those replies.
func TestPacedHotThreadScript(t *testing.T) {
	r := runScenario(t, "hot-thread-paced.js", "hot-thread-paced.toml", tinyPaced, nil,
		map[string]string{"DURATION": "5s", "RATE": "4", "READS": "2"})
	if r.res.ExitCode != 0 || !r.report.OK {
		r.dump(t)
		t.Fatalf("exit %d, abort_reason %q", r.res.ExitCode, r.report.AbortReason)
	}
	ops := r.report.Steps[0].Ops
	for _, op := range []string{"hot_reply", "thread_fetch", "deliver"} {
		if ops[op] == nil || ops[op].OK == 0 {
			r.dump(t)
			t.Errorf("no successful %s in step 0: %+v", op, ops[op])
		}
	}
	if ops["hot_reply"] != nil && ops["hot_reply"].Count < 10 {
		t.Errorf("only %d hot replies at 4/s for 5 s", ops["hot_reply"].Count)
	}
}

// The low-level example (examples/custom-lowlevel.js with its TOML) runs:
// connect, subscribeUntilEose, publish and an HTTP query, each under the
// script's own op names, and the checks pass.
func TestCustomLowLevelExample(t *testing.T) {
	r := runLowLevelExample(t, nil, map[string]string{"DURATION": "3s"})
	if r.res.ExitCode != 0 || !r.report.OK {
		r.dump(t)
		t.Fatalf("exit %d, abort_reason %q", r.res.ExitCode, r.report.AbortReason)
	}
	ops := r.report.Steps[0].Ops
	for _, op := range []string{"connect", "auth", "greet_read", "greet_post", "greet_check"} {
		if ops[op] == nil || ops[op].OK == 0 {
			t.Errorf("no successful %s: %+v", op, ops[op])
		}
	}
	if c := r.res.Summary.Metric("checks"); c == nil {
		t.Fatal("no checks metric")
	} else if rs, ok := c.Sink.(interface{ Fails() int64 }); !ok || rs.Fails() != 0 {
		t.Errorf("checks failed: %+v", c.Sink)
	}
}

// More VUs than the scenario has humans: the extra VUs' clients cannot run,
// which is an unexpected exit (recorded once per VU, not every iteration)
// and stops the run at the end of the stage.
func TestClientThatCannotRunIsAnExit(t *testing.T) {
	src := `import buzz from "k6/x/buzz";
const sc = buzz.load("./over.toml");
export const options = sc.options({ scenarios: { agents: null,
  humans: { stages: [{ duration: "1s", target: 8 }, { duration: "2s", target: 8 }] } } });
export function setup() { return sc.setup(); }
export function human() { sc.human(); }
export function handleSummary(data) { return sc.report(data, { json: __ENV.BUZZ_REPORT, k6Summary: false }); }
`
	r := runInline(t, t.TempDir(), src, "over.toml", tinySmoke, nil, nil, nil)
	if r.res.ExitCode != engine.ExitThresholdsFailed {
		r.dump(t)
		t.Fatalf("exit %d, want 99", r.res.ExitCode)
	}
	// k6Summary: false prints the Buzz report alone.
	if strings.Contains(r.stdout, "█ THRESHOLDS") || strings.Contains(r.stdout, "█ TOTAL RESULTS") || !strings.Contains(r.stdout, "step 0") {
		t.Errorf("stdout with k6Summary false:\n%s", r.stdout)
	}
	// The abort comes at the end of the ramp stage (1 s), when the 7th VU
	// has exited and the 8th may not have started.
	if len(r.report.ClientExits) != 1 || r.report.ClientExits[0].Kind != "human" || r.report.ClientExits[0].Reason != "exited" {
		t.Fatalf("client exits %+v, want human exits", r.report.ClientExits)
	}
	n := r.report.ClientExits[0].Count
	if !strings.HasPrefix(r.report.AbortReason, "step 0: ") || !strings.Contains(r.report.AbortReason, "human clients exited unexpectedly (exited)") {
		t.Errorf("abort_reason %q should name step 0 and the exits", r.report.AbortReason)
	}
	if logged := int64(strings.Count(r.stderr, "VU slot")); logged != n {
		t.Errorf("the slot error was logged %d times for %d exited VUs: want once each", logged, n)
	}
}

// A seed the relay refuses fails setup (exit 107), and the report, which
// handleSummary still writes, says so instead of reading as a clean run.
func TestSeedFailureIsInTheReport(t *testing.T) {
	toml := strings.Replace(tinySmoke, "seed_concurrency = 4", "seed_concurrency = 4\nprivate_channels = true", 1)
	sc, err := scenario.Parse("x.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	refused := sc.Keys(0).PubKey()
	r := runInlineWithRelay(t, toml, func(rl *relay.Relay) { rl.Faults().RefuseMembers("", refused) })
	if r.res.ExitCode != engine.ExitScriptException {
		r.dump(t)
		t.Fatalf("exit %d, want 107", r.res.ExitCode)
	}
	if r.report.OK || !strings.HasPrefix(r.report.AbortReason, "setup: seed") || r.report.SetupError == "" {
		t.Errorf("report ok=%v abort_reason %q: want the seed failure", r.report.OK, r.report.AbortReason)
	}
}

// stepScript drives the humans' population through the low-level API: in
// the ramp (stage 0) each VU publishes once into a channel that does not
// exist (an error), in the hold (stage 1) it publishes into a seeded
// channel every 50 ms. The ramp alone is mostly errors; the step is a few
// errors in a hundred or more publishes.
const stepScript = `import buzz from "k6/x/buzz";
import exec from "k6/execution";
import { sleep } from "k6";
const sc = buzz.load("./step.toml");
export const options = sc.options();
export function setup() { return { channel: sc.channelId(0, 0), seeded: sc.setup() }; }
let erred = false;
export function human(data) {
  const ramp = exec.scenario.stage.index === 0;
  if (ramp && erred) { sleep(0.05); return; }
  const s = sc.connect("human", (exec.vu.idInTest - 1) % 4);
  if (!s.ok) { sleep(0.05); return; }
  const h = ramp ? "no-such-channel" : data.channel;
  s.publish({ kind: 9, content: "step", tags: [["h", h]] }, { op: "publish" });
  s.close();
  erred = erred || ramp;
  sleep(0.05);
}
export function handleSummary(data) { return sc.report(data, { json: __ENV.BUZZ_REPORT }); }
`

const stepTOML = `run_id = "step-window"
[shape]
communities = 1
channels_per_community = 1
history_messages_per_channel = 0
thread_roots_per_channel = 0
[population]
humans = 4
agents = 0
channels_per_member = 1
[[ramp]]
users = 1
ramp_secs = 2
hold_secs = 3
[abort]
max_p99_ms = 60000
max_error_rate = RATE
`
