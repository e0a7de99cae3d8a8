package extension

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/models/desktop"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

const optsTOML = `run_id = "opts"
[population]
humans = 10
agents = 2
[hot_thread]
seed_replies = 1
authors = 1
[[ramp]]
users = 1
ramp_secs = 10
hold_secs = 20
[[ramp]]
users = 2
ramp_secs = 5
[abort]
max_p99_ms = 1500
max_error_rate = 0.02
`

func parse(t *testing.T, src string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("opts.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestBuildOptionsScenariosAndThresholds(t *testing.T) {
	sc := parse(t, optsTOML)
	o, _ := k6options.Build(sc, scenario.Shard{})
	h, ok := o.Scenarios["humans"]
	if !ok || h.Executor != "ramping-vus" || h.Exec != "human" || h.GracefulStop != "15s" || h.GracefulRampDown != "15s" || h.StartVUs != 0 {
		t.Fatalf("humans scenario %+v", h)
	}
	want := []scenario.Stage{{Duration: 10 * time.Second, Target: 10, Name: "step-0"}, {Duration: 20 * time.Second, Target: 10, Name: "step-0"},
		{Duration: 5 * time.Second, Target: 20, Name: "step-1"}, {Duration: 0, Target: 20, Name: "step-1"}}
	if len(h.Stages) != len(want) {
		t.Fatalf("stages %v, want %v", h.Stages, want)
	}
	for i := range want {
		if h.Stages[i] != want[i] {
			t.Errorf("stage %d = %v, want %v", i, h.Stages[i], want[i])
		}
	}
	if a := o.Scenarios["agents"]; a.Stages[3].Target != 4 || a.Exec != "agent" {
		t.Errorf("agents %+v", a)
	}
	if ha := o.Scenarios["hot_authors"]; ha.Stages[3].Target != 2 || ha.Exec != "hotAuthor" {
		t.Errorf("hot_authors %+v", ha)
	}
	if _, ok := o.Scenarios["desktop"]; ok {
		t.Error("no desktop humans, yet a desktop scenario")
	}

	// p99 per op over every population, windowed per step (the named runs
	// of the humans' stages, the first population) with abortOnFail.
	has := func(key, expr, scen string, window bool) bool {
		for _, s := range o.Thresholds[key] {
			if s.Threshold == expr && s.Scenario == scen && (s.Window == "stage") == window && s.AbortOnFail == window {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ key, expr string }{
		{"buzz_op_duration{op:publish}", "p(99)<=1500"},
		{"buzz_op_duration{op:deliver}", "p(99)<=1500"},
		{"buzz_op_duration{op:hot_reply}", "p(99)<=1500"},
		{"buzz_op_failed{op:http_query}", "rate<=0.02"},
		{"buzz_op_failed{op:connect}", "rate<=0.02"},
		{"buzz_client_exits", "count<=0"},
	} {
		if !has(c.key, c.expr, "humans", true) {
			t.Errorf("missing windowed %s %s clocked by humans: %+v", c.key, c.expr, o.Thresholds[c.key])
		}
		// One windowed threshold per key: no per-population copies.
		n := 0
		for _, s := range o.Thresholds[c.key] {
			if s.Window == "stage" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s has %d windowed thresholds, want 1: %+v", c.key, n, o.Thresholds[c.key])
		}
	}
	for key := range o.Thresholds {
		if strings.Contains(key, "scenario:") {
			t.Errorf("threshold selector %s filters a population", key)
		}
	}
	if _, ok := o.Thresholds["buzz_op_failed{op:deliver}"]; ok {
		t.Error("deliver's error rate must not be judged")
	}
	if _, ok := o.Thresholds["buzz_op_duration{op:desktop_window}"]; ok {
		t.Error("judged on an op no population makes")
	}
	// Bad frames and notices have no duration: their error rate is judged,
	// a p99 of them is not (it would always read 0s).
	for _, op := range []string{"bad_frame", "notice"} {
		for _, step := range []string{"", ",step:shutdown"} {
			if _, ok := o.Thresholds["buzz_op_duration{op:"+op+step+"}"]; ok {
				t.Errorf("p99 judged on %s%s", op, step)
			}
		}
		if !has("buzz_op_failed{op:"+op+"}", "rate<=0.02", "humans", true) {
			t.Errorf("%s's error rate not judged", op)
		}
	}
	// The shutdown and the exits over the whole run.
	if !has("buzz_op_duration{op:publish,step:shutdown}", "p(99)<=1500", "", false) ||
		!has("buzz_op_failed{op:publish,step:shutdown}", "rate<=0.02", "", false) ||
		!has("buzz_client_exits", "count<=0", "", false) {
		t.Errorf("whole-run thresholds missing: %+v", o.Thresholds)
	}
	if _, ok := o.Thresholds["buzz_op_failed{op:deliver,step:shutdown}"]; ok {
		t.Error("deliver's error rate judged at shutdown")
	}
	// It is valid JSON of k6 options.
	if _, err := json.Marshal(o); err != nil {
		t.Fatal(err)
	}
}

func TestBuildOptionsShardSplitsClients(t *testing.T) {
	sc := parse(t, optsTOML)
	total := 0
	for i := 0; i < 3; i++ {
		o, _ := k6options.Build(sc, scenario.Shard{Index: i, Count: 3})
		h := o.Scenarios["humans"]
		total += h.Stages[len(h.Stages)-1].Target
	}
	if total != 20 {
		t.Errorf("humans over 3 shards = %d, want 20", total)
	}
}

func TestBuildOptionsDesktopPopulation(t *testing.T) {
	sc := parse(t, strings.Replace(optsTOML, "[hot_thread]", "[desktop]\nfraction = 0.5\n[hot_thread]", 1))
	o, _ := k6options.Build(sc, scenario.Shard{})
	d, ok := o.Scenarios["desktop"]
	if !ok || d.Exec != "desktop" {
		t.Fatalf("desktop scenario %+v", d)
	}
	h := o.Scenarios["humans"]
	if got := d.Stages[3].Target + h.Stages[3].Target; got != 20 {
		t.Errorf("desktop + basic humans at the peak = %d, want 20", got)
	}
	found := false
	for _, s := range o.Thresholds["buzz_op_duration{op:desktop_window}"] {
		found = found || (s.Window == "stage" && s.Scenario == "humans")
	}
	if !found {
		t.Errorf("no desktop_window p99 threshold clocked by humans: %+v", o.Thresholds["buzz_op_duration{op:desktop_window}"])
	}
}

func TestMergeOptions(t *testing.T) {
	o, _ := k6options.Build(parse(t, optsTOML), scenario.Shard{})
	out, err := k6options.Merge(o, map[string]any{
		"scenarios":  map[string]any{"humans": map[string]any{"gracefulStop": "1s"}, "hot_authors": nil},
		"thresholds": map[string]any{"checks": []any{"rate>0.9"}, "buzz_client_exits": nil},
		"noColor":    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	scs := out["scenarios"].(map[string]any)
	h := scs["humans"].(map[string]any)
	if h["gracefulStop"] != "1s" || h["exec"] != "human" {
		t.Errorf("humans merged to %v", h)
	}
	if _, ok := scs["hot_authors"]; ok {
		t.Error("null did not remove hot_authors")
	}
	th := out["thresholds"].(map[string]any)
	if _, ok := th["buzz_client_exits"]; ok {
		t.Error("null did not remove a threshold key")
	}
	if _, ok := th["checks"]; !ok || th["buzz_op_duration{op:publish}"] == nil {
		t.Errorf("thresholds merged to %v", th)
	}
	if out["noColor"] != true {
		t.Error("plain key not set")
	}
	// Without humans, the step windows follow the next population.
	out, err = k6options.Merge(o, map[string]any{"scenarios": map[string]any{"humans": nil}})
	if err != nil {
		t.Fatal(err)
	}
	for key, specs := range out["thresholds"].(map[string]any) {
		for _, sp := range specs.([]any) {
			m := sp.(map[string]any)
			if m["window"] == "stage" && m["scenario"] != "agents" {
				t.Errorf("%s: %v still follows %v", key, m["threshold"], m["scenario"])
			}
		}
	}
	if _, err := k6options.Merge(o, map[string]any{"scenarios": "x"}); err == nil {
		t.Error("a string for scenarios was accepted")
	}
}

func TestParseShard(t *testing.T) {
	for _, ok := range []string{"0/1", "2/3", " 1/4 "} {
		if _, err := ParseShard(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1", "3/3", "-1/2", "a/b", "1/0", "01/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestEmbeddedHostTemplate(t *testing.T) {
	if got := EmbeddedHostTemplate("local-smoke"); got != "c{n}.local-smoke.localhost" {
		t.Errorf("got %q", got)
	}
	got := EmbeddedHostTemplate("My_Run")
	if !strings.HasPrefix(got, "c{n}.r") || strings.Contains(got, "My_Run") || got == EmbeddedHostTemplate("My_Run2") {
		t.Errorf("non-label run id gave %q", got)
	}
}

func TestStepIndexAndJudge(t *testing.T) {
	sc := parse(t, optsTOML)
	l := newLoaded(New(Options{}), sc, scenario.Shard{})
	for _, c := range []struct {
		off  time.Duration
		want int
	}{{-time.Second, 0}, {0, 0}, {29 * time.Second, 0}, {30 * time.Second, 1}, {34 * time.Second, 1}, {35 * time.Second, 2}, {time.Hour, 2}} {
		if got := l.stepIndex(c.off); got != c.want {
			t.Errorf("stepIndex(%s) = %d, want %d", c.off, got, c.want)
		}
	}
	if l.stepLabel(2) != report.ShutdownStep || l.stepLabel(1) != "1" {
		t.Error("labels")
	}
}

func TestStageIndex(t *testing.T) {
	l := newLoaded(New(Options{}), parse(t, optsTOML), scenario.Shard{})
	for _, c := range []struct {
		off  time.Duration
		want int
	}{{-time.Second, 0}, {5 * time.Second, 0}, {10 * time.Second, 1}, {29 * time.Second, 1}, {32 * time.Second, 2},
		{35 * time.Second, 4}, {time.Hour, 4}} {
		if got := l.stageIndex(c.off); got != c.want {
			t.Errorf("stageIndex(%s) = %d, want %d", c.off, got, c.want)
		}
	}
}

// A breach confined to a step's ramp is diluted over the whole step, which
// is what the report and the runner's step windows judge: it passes. A
// breach over the whole step names the step.
func TestReportJudgesTheWholeStep(t *testing.T) {
	sc := parse(t, strings.Replace(optsTOML, "max_p99_ms = 1500", "max_p99_ms = 100", 1))
	l := newLoaded(New(Options{}), sc, scenario.Shard{})
	now := time.Now()
	rec := func(stage int, kind scenario.Kind, d time.Duration, n int) {
		for i := 0; i < n; i++ {
			recordAgg(l, relayclient.Result{Op: "publish", Start: now, Duration: d, Outcome: relayclient.OutcomeOK}, int(kind), stage, stage, nil, now)
		}
	}
	rec(0, scenario.KindHuman, 500*time.Millisecond, 2)
	rec(1, scenario.KindHuman, time.Millisecond, 600)
	rec(1, scenario.KindAgent, time.Millisecond, 400)
	recordAgg(l, relayclient.Result{Op: "connect", Start: now, Outcome: relayclient.OutcomeThrottled}, int(scenario.KindAgent), 1, 1, []int{1}, now)
	rep := l.BuildReport(nil)
	if got := rep.Steps[0].Ops["publish"]; got.Count != 1002 || got.P99Ms > 100 {
		t.Fatalf("step 0 publish %+v: want 1002 ops of every population with a p99 under the limit", got)
	}
	if c := rep.Steps[0].Ops["connect"]; c.Throttled != 1 || c.Errors != 0 || c.Pending != 1 {
		t.Errorf("connect %+v: want 1 throttled, 1 pending at the step's end, no error", c)
	}
	if !rep.OK || rep.AbortReason != "" {
		t.Errorf("a spike in the ramp alone failed the step: %q", rep.AbortReason)
	}
	if rep.Steps[1].Reached {
		t.Error("step 1 has no samples but reads as reached")
	}
	rec(1, scenario.KindAgent, 500*time.Millisecond, 20)
	rep = l.BuildReport(nil)
	if want := "step 0: publish p99 500.0 ms above max_p99_ms 100"; rep.AbortReason != want || rep.OK {
		t.Errorf("abort_reason %q, want %q", rep.AbortReason, want)
	}
}

func TestReportOfAnInterruptedRunIsNotOK(t *testing.T) {
	l := newLoaded(New(Options{}), parse(t, optsTOML), scenario.Shard{})
	if rep := l.BuildReport(nil); !rep.OK {
		t.Fatalf("empty report not ok: %q", rep.AbortReason)
	}
	l.agg.Interrupt(scenario.KindAgent)
	rep := l.BuildReport(nil)
	if rep.OK || !strings.Contains(rep.AbortReason, "interrupted") || rep.Interrupted["agent"] != 1 {
		t.Errorf("ok=%v reason %q interrupted %v", rep.OK, rep.AbortReason, rep.Interrupted)
	}
	rep = l.BuildReport([]string{"checks: rate>0.9"})
	if rep.AbortReason != "thresholds crossed: checks: rate>0.9" {
		t.Errorf("a crossed threshold should explain the failure before the interruption: %q", rep.AbortReason)
	}
}

// buzz.load's desktopMode replaces [desktop].mode after parsing, is part of
// what identifies a loaded scenario, and the report names it.
func TestLoadDesktopModeReachesTheReport(t *testing.T) {
	m := New(Options{})
	data := []byte(strings.Replace(optsTOML, "[hot_thread]", "[desktop]\nfraction = 0.5\n[hot_thread]", 1))
	cur, err := m.load("opts.toml", data, loadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leg, err := m.load("opts.toml", data, loadOptions{desktopMode: scenario.ModeLegacy})
	if err != nil {
		t.Fatal(err)
	}
	if cur == leg || cur.base.Desktop.Mode != scenario.ModeCurrent || leg.base.Desktop.Mode != scenario.ModeLegacy {
		t.Fatalf("modes %q / %q (same loaded: %v)", cur.base.Desktop.Mode, leg.base.Desktop.Mode, cur == leg)
	}
	if rep := leg.BuildReport(nil); rep.DesktopMode != "legacy" || !strings.Contains(rep.Text(), "desktop legacy") {
		t.Errorf("report desktop_mode %q", rep.DesktopMode)
	}
	if rep := newLoaded(m, parse(t, optsTOML), scenario.Shard{}).BuildReport(nil); rep.DesktopMode != "" {
		t.Errorf("no desktop humans, yet desktop_mode %q", rep.DesktopMode)
	}
}

// A desktop-only scenario's abort thresholds name the ops its humans emit:
// history (the shared activity's root search on the socket) and http_query
// (the client's own seeded-root search) beside every desktop_* op. Mutant
// "the old list without history" fails.
func TestDesktopOnlyAbortThresholdsNameTheOpsDesktopHumansEmit(t *testing.T) {
	sc := parse(t, strings.Replace(optsTOML, "[hot_thread]", "[desktop]\nfraction = 1\n[hot_thread]", 1))
	sc.Population.Agents, sc.HotThread = 0, scenario.HotThread{}
	o, _ := k6options.Build(sc, scenario.Shard{})
	for _, op := range append([]string{models.OpHistory, relayclient.OpHTTPQuery, relayclient.OpConnect}, desktop.Ops...) {
		if len(o.Thresholds["buzz_op_duration{op:"+op+"}"]) == 0 {
			t.Errorf("no p99 abort threshold for %s", op)
		}
	}
	for key := range o.Thresholds {
		for _, op := range []string{models.OpTurnContext, models.OpHotReply, relayclient.OpHTTPEvents} {
			if strings.Contains(key, "{op:"+op+"}") {
				t.Errorf("threshold %s names an op desktop humans never emit", key)
			}
		}
	}
}

// Issue 10: an op throttled more often than it succeeded is named in the
// report's warnings and the text summary, though the run passes.
func TestReportWarnsWhenThrottlesOutnumberSuccesses(t *testing.T) {
	sc := parse(t, optsTOML)
	sc.Human.PresenceIntervalSecs = 5 // no scenario warning of its own: the throttles' alone
	l := newLoaded(New(Options{}), sc, scenario.Shard{})
	now := time.Now()
	rec := func(op string, o relayclient.Outcome, n int) {
		for i := 0; i < n; i++ {
			recordAgg(l, relayclient.Result{Op: op, Start: now, Duration: time.Millisecond, Outcome: o}, int(scenario.KindHuman), 1, 1, nil, now)
		}
	}
	rec("publish", relayclient.OutcomeThrottled, 5)
	rec("publish", relayclient.OutcomeOK, 4)
	rec("http_query", relayclient.OutcomeThrottled, 2)
	rec("http_query", relayclient.OutcomeOK, 2)
	rep := l.BuildReport(nil)
	if !rep.OK {
		t.Fatalf("throttles alone failed the run: %q", rep.AbortReason)
	}
	if len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], "publish: 5 throttled, 4 ok") {
		t.Fatalf("warnings %q: want publish only (http_query is throttled as often as it succeeds)", rep.Warnings)
	}
	if txt := rep.Text(); !strings.Contains(txt, "1 warn") || !strings.Contains(txt, "! warning: publish: 5 throttled") {
		t.Errorf("the text summary lacks the warning:\n%s", txt)
	}
}

// No abort thresholds on an op the scenario cannot record: agents without
// turns make no turn_context read (issue 26 item 8); with turns they do.
func TestThresholdsOnlyForOpsThePopulationsRecord(t *testing.T) {
	has := func(o *k6options.Options) bool {
		for k := range o.Thresholds {
			if strings.Contains(k, "op:turn_context") {
				return true
			}
		}
		return false
	}
	sc := parse(t, optsTOML)
	sc.Agent.Turn.PerHour = 0
	if o, _ := k6options.Build(sc, scenario.Shard{}); has(o) {
		t.Error("a turn_context threshold without agent turns")
	}
	sc.Agent.Turn.PerHour = 6
	if o, _ := k6options.Build(sc, scenario.Shard{}); !has(o) {
		t.Error("no turn_context threshold with agent turns")
	}
}

// recordAgg records r in l's aggregation as the sinks do (RecordID).
func recordAgg(l *loaded, r relayclient.Result, kind, startStage, stage int, straddled []int, at time.Time) []int64 {
	return l.agg.RecordID(l.agg.OpID(r.Op), 0, r, kind, startStage, stage, straddled, at)
}
