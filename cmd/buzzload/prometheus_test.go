package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/output/prometheusrw/promserver"
	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/internal/waitfor"
)

// These tests run buzzload into a real Prometheus (Debian's prometheus,
// started on loopback by promserver) through --out experimental-prometheus-rw.

func runCLIEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, cliEnv{Stdout: &out, Stderr: &errb, Env: env})
	return code, out.String(), errb.String()
}

func promEnv(prom *promserver.Server, extra ...string) []string {
	return append([]string{"K6_PROMETHEUS_RW_SERVER_URL=" + prom.WriteURL(), "K6_PROMETHEUS_RW_PUSH_INTERVAL=200ms",
		"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true"}, extra...)
}

// promTiny is a Buzz run of two steps of a few seconds on the embedded relay,
// busy enough that humans publish and receive deliveries.
const promTiny = `run_id = "prom-tiny"
[target]
connect_timeout_secs = 5
[shape]
communities = 1
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
hold_secs = 2
[[ramp]]
users = 2
ramp_secs = 1
hold_secs = 2
`

// writeBuzzRun writes the shipped smoke script beside promTiny.
func writeBuzzRun(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "local-smoke.js"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "tiny.js")
	if err := os.WriteFile(script, bytes.ReplaceAll(src, []byte("./local-smoke.toml"), []byte("./tiny.toml")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tiny.toml"), []byte(promTiny), 0o644); err != nil {
		t.Fatal(err)
	}
	return script
}

// k6Generic is a k6-style script for the generic panels of the k6
// Prometheus dashboard: checks, and an arrival rate too high for its one VU
// so that iterations are dropped.
const k6Generic = `
import { check, sleep } from 'k6';
export const options = {
  scenarios: { car: { executor: 'constant-arrival-rate', rate: 40, timeUnit: '1s', duration: '2s', preAllocatedVUs: 1, maxVUs: 1 } },
};
export default function () {
  check(__ITER, { 'even': (i) => i % 2 === 0 });
  sleep(0.1);
}
`

// The queries of the generic panels of the k6 Prometheus dashboard
// (grafana.com 19665, docs/k6-compat.md §7.4): VUs, iterations, dropped
// iterations, data sent and received, checks.
var k6DashboardGeneric = []string{
	`sum(k6_vus{testid=~"$testid"})`,
	`avg(k6_iteration_duration_$quantile_stat{testid=~"$testid"})`,
	`avg(k6_dropped_iterations_total{testid=~"$testid"})`,
	`avg(irate(k6_data_sent_total{testid=~"$testid"}[$__rate_interval]))`,
	`avg(irate(k6_data_received_total{testid=~"$testid"}[$__rate_interval]))`,
	`round(k6_checks_rate{testid=~"$testid"}, 0.1)`,
	`avg(round(k6_checks_rate{testid=~"$testid"}, 0.1)*100)`,
}

// substitute fills a panel query's Grafana variables as a dashboard showing
// this test would: the test id, every op, a rate window covering the run.
func substitute(expr, testid string) string {
	r := strings.NewReplacer("$testid", testid, "$op", ".*", "$__rate_interval", "1m", "$quantile_stat", "p99")
	return r.Replace(expr)
}

type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// readDashboard reads a shipped Grafana dashboard (dashboards/NAME).
func readDashboard(t *testing.T, name string) dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "dashboards", name))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboards/%s: %v", name, err)
	}
	return d
}

// dashQuery is one PromQL query of a dashboard and where it sits.
type dashQuery struct{ where, expr string }

// queries are the dashboard's panel and annotation queries.
func (d dashboard) queries() []dashQuery {
	var qs []dashQuery
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, dashQuery{"panel " + p.Title, tg.Expr})
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			qs = append(qs, dashQuery{"annotation " + a.Name, a.Expr})
		}
	}
	return qs
}

// A Buzz run and a k6-style run write into a real Prometheus; every query
// of the shipped Buzz dashboard (panels and annotations) and every generic
// panel query of the k6 Prometheus dashboard returns data for the test id.
func TestPrometheusRWFeedsTheDashboards(t *testing.T) {
	prom := promserver.Start(t)
	dir := t.TempDir()
	script := writeBuzzRun(t, dir)
	export := filepath.Join(dir, "summary.json")
	// The embedded relay's rate limit throttles the humans' messages, so the
	// throttled panel has a series to read.
	buzzEnv := promEnv(prom, "BUZZ_RATE_LIMIT=true", "BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN=3")
	res1 := filepath.Join(dir, "dash1.result.json")
	code, _, stderr := runCLIEnv(t, buzzEnv, "run", "-q", "--tag", "testid=dash1", "--tag", "instance_id=r1", "--result", res1,
		"--summary-export", export, "-e", "BUZZ_REPORT="+filepath.Join(dir, "report.json"), "-o", "experimental-prometheus-rw", script)
	if code != 0 {
		t.Fatalf("buzz run exit %d: %s", code, stderr)
	}
	if pushesLost(t, res1) {
		t.Fatalf("pushes failed: %s\nprometheus: %s", stderr, prom.Log())
	}
	k6Script := filepath.Join(dir, "generic.js")
	if err := os.WriteFile(k6Script, []byte(k6Generic), 0o644); err != nil {
		t.Fatal(err)
	}
	res2 := filepath.Join(dir, "dash1-k6.result.json")
	code, _, stderr = runCLIEnv(t, promEnv(prom, "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=false", "K6_PROMETHEUS_RW_TREND_STATS=p(99),avg"),
		"run", "-q", "--tag", "testid=dash1", "--tag", "instance_id=r2", "--result", res2, "-o", "experimental-prometheus-rw", k6Script)
	if code != 0 || pushesLost(t, res2) {
		t.Fatalf("k6-style run exit %d: %s", code, stderr)
	}

	d := readDashboard(t, "buzzload-run.json")
	qs := d.queries()
	if len(qs) < 20 {
		t.Fatalf("only %d queries in the dashboard", len(qs))
	}
	hasTestid := false
	for _, v := range d.Templating.List {
		hasTestid = hasTestid || v.Name == "testid"
	}
	if !hasTestid {
		t.Fatal("the dashboard has no testid variable")
	}
	for _, g := range k6DashboardGeneric {
		qs = append(qs, dashQuery{"k6 dashboard 19665", g})
	}
	ctx := context.Background()
	at := time.Now()
	leftover := regexp.MustCompile(`\$\w+`)
	for _, q := range qs {
		expr := substitute(q.expr, "dash1")
		if v := leftover.FindString(expr); v != "" {
			t.Errorf("%s: variable %s the test does not fill: %s", q.where, v, q.expr)
			continue
		}
		res, err := prom.Query(ctx, expr, at)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if len(res) == 0 {
			t.Errorf("%s: no data for %s", q.where, expr)
		}
		// A panel that shows 0 when its series is absent ("or on() vector(0)")
		// always has data; its own query must find the series these runs
		// write, so a wrong metric or label name fails here.
		if own, ok := strings.CutSuffix(expr, " or on() vector(0)"); ok && !notWrittenHere(own) {
			if res, err := prom.Query(ctx, own, at); err != nil || len(res) == 0 {
				t.Errorf("%s: no data without the vector(0) fallback for %s (%v)", q.where, own, err)
			}
		}
	}
	// The variables' queries list the test and its operations.
	for expr, want := range map[string]string{`count by (testid) (k6_vus)`: "testid", `count by (op) (k6_buzz_op_duration_seconds{testid="dash1"})`: "op"} {
		res, err := prom.Query(ctx, expr, at)
		if err != nil || len(res) == 0 || res[0].Metric[want] == "" {
			t.Errorf("%s: %v %v", expr, res, err)
		}
	}
	// A Buzz client's traffic arrives while it runs (several points per
	// series, not one at the end), and all of it: Prometheus's totals are
	// the summary's.
	sum := func(expr string) float64 {
		t.Helper()
		res, err := prom.Query(ctx, expr, at)
		if err != nil || len(res) != 1 {
			t.Fatalf("%s: %v %v", expr, res, err)
		}
		return res[0].Value
	}
	if n := sum(`min(count_over_time(k6_data_sent_total{testid="dash1", instance_id="r1", scenario="humans"}[5m]))`); n < 4 {
		t.Errorf("data_sent of the humans has %v points over a 6 s run", n)
	}
	var summary struct {
		Metrics map[string]map[string]any `json:"metrics"`
	}
	if b, err := os.ReadFile(export); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &summary); err != nil {
		t.Fatalf("summary export: %v", err)
	}
	for _, m := range []string{"data_sent", "data_received"} {
		if got, want := sum(`sum(k6_`+m+`_total{testid="dash1", instance_id="r1"})`), summary.Metrics[m]["count"]; got != want || want == 0.0 {
			t.Errorf("%s: Prometheus %v, summary %v", m, got, want)
		}
	}
	// The generator's health is live: a CPU point every second of the run,
	// a share of the cores; every scheduled operation's lag, as many as the
	// report counts; a saturation point for each ramp step.
	if n := sum(`count_over_time(k6_buzz_generator_cpu{testid="dash1", instance_id="r1"}[5m])`); n < 4 {
		t.Errorf("buzz_generator_cpu has %v points over a 6 s run", n)
	}
	if hi, lo := sum(`max_over_time(k6_buzz_generator_cpu{testid="dash1"}[5m])`), sum(`min_over_time(k6_buzz_generator_cpu{testid="dash1"}[5m])`); hi > 1 || lo < 0 || hi == 0 {
		t.Errorf("buzz_generator_cpu between %v and %v, not a share of the cores", lo, hi)
	}
	var rep struct {
		Steps []struct {
			Ops map[string]struct {
				Scheduled float64 `json:"scheduled"`
			} `json:"ops"`
		} `json:"steps"`
		Shutdown struct {
			Ops map[string]struct {
				Scheduled float64 `json:"scheduled"`
			} `json:"ops"`
		} `json:"shutdown"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	scheduled := 0.0
	for _, o := range rep.Shutdown.Ops {
		scheduled += o.Scheduled
	}
	for _, st := range rep.Steps {
		for _, o := range st.Ops {
			scheduled += o.Scheduled
		}
	}
	if got := sum(`sum(histogram_count(k6_buzz_generator_lag_seconds{testid="dash1", instance_id="r1"}))`); got != scheduled || scheduled == 0 {
		t.Errorf("buzz_generator_lag: %v samples in Prometheus, %v scheduled operations in the report", got, scheduled)
	}
	if n := sum(`count(k6_buzz_generator_saturated_total{testid="dash1", step=~"[0-9]+"})`); int(n) != len(rep.Steps) {
		t.Errorf("buzz_generator_saturated for %v steps, the run has %d", n, len(rep.Steps))
	}
	// Every op the run reports has its latency series and deliveries were
	// measured; the seed's operations have theirs apart (setup, not load:
	// issue 47 items 1 and 6), with the test id too.
	if res, err := prom.Query(ctx, `k6_buzz_op_duration_seconds{testid="dash1", op=~"seed_.*"}`, at); err != nil || len(res) != 0 {
		t.Errorf("seed series in k6_buzz_op_duration_seconds (the load's latency carries the seed's): %v %v", res, err)
	}
	if n := sum(`count(k6_buzz_setup_duration_seconds{testid="dash1", op="seed_provision"})`); n == 0 {
		t.Error("no k6_buzz_setup_duration_seconds for the seed's provision")
	}
	res, err := prom.Query(ctx, `count by (op) (k6_buzz_op_duration_seconds{testid="dash1"})`, at)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, s := range res {
		ops[s.Metric["op"]] = true
	}
	for _, op := range []string{"connect", "auth", "publish", "deliver", "subscribe_eose"} {
		if !ops[op] {
			t.Errorf("no k6_buzz_op_duration_seconds for op %s: %v", op, ops)
		}
	}
}

// pushesLost reads a run's result file: did its remote-write output fail a
// push or drop samples (code review T5: counters, not a warning's
// wording)? A push slower than the interval is no loss: the next push
// carries the cumulative values.
func pushesLost(t *testing.T, resultPath string) bool {
	t.Helper()
	f, err := result.Read(resultPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range f.Outputs {
		if o.Output == "experimental-prometheus-rw" {
			return o.Counts["failed_pushes"] > 0 || o.Counts["samples_dropped"] > 0
		}
	}
	t.Fatalf("%s: no experimental-prometheus-rw counts in the result file", resultPath)
	return false
}

// notWrittenHere says whether a panel query reads a series the dashboard
// test's runs cannot write while passing: pending at a step's end needs an
// operation in flight across the boundary, and a client exit fails the run.
func notWrittenHere(expr string) bool {
	return strings.Contains(expr, "k6_buzz_op_pending") || strings.Contains(expr, "k6_buzz_client_exits_total") ||
		strings.Contains(expr, "k6_buzz_ledger_missed_total") || strings.Contains(expr, "k6_buzz_ledger_lost_total")
}

// segP99Script records the same values whichever instance runs them: VU i
// (in the test) records 400 deterministic latencies spread over two decades.
const segP99Script = `
import exec from 'k6/execution';
import { Trend } from 'k6/metrics';
const lat = new Trend('seg_latency', true);
export const options = { scenarios: { s: { executor: 'per-vu-iterations', vus: 6, iterations: 1 } } };
export default function () {
  const id = exec.vu.idInTest;
  for (let i = 0; i < 400; i++) {
    const x = ((i * 7919 + id * 104729) % 1000) / 1000;
    lat.add(2 * Math.pow(100, x) * (1 + id / 10));
  }
}
`

// Two segment instances write native histograms; the p99 Prometheus computes
// over both agrees with buzzload merge's p99 of their result files within
// the two histograms' precision (a native bucket at schema 8 is 0.27 % wide,
// an HDR value within 0.05 %).
func TestPrometheusRWNativeHistogramsMergeLikeBuzzloadMerge(t *testing.T) {
	prom := promserver.Start(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "seg.js")
	if err := os.WriteFile(script, []byte(segP99Script), 0o644); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for i, seg := range []string{"0:1/2", "1/2:1"} {
		p := filepath.Join(dir, "part"+string(rune('1'+i))+".json")
		code, _, stderr := runCLIEnv(t, promEnv(prom), "run", "-q", "--execution-segment", seg, "--execution-segment-sequence", "0,1/2,1",
			"--tag", "testid=merge1", "--tag", "instance_id=i"+string(rune('1'+i)), "--result", p, "-o", "experimental-prometheus-rw", script)
		if code != 0 || pushesLost(t, p) {
			t.Fatalf("segment %s exit %d: %s", seg, code, stderr)
		}
		parts = append(parts, p)
	}
	merged := filepath.Join(dir, "merged.json")
	if code, _, stderr := runCLI(t, append([]string{"merge", "--no-summary", "-o", merged}, parts...)...); code != 0 {
		t.Fatalf("merge exit %d: %s", code, stderr)
	}
	tr := trendOf(t, readResult(t, merged).Metrics, "seg_latency")
	if tr.Count() != 6*400 {
		t.Fatalf("merged count %d", tr.Count())
	}
	ctx := context.Background()
	at := time.Now()
	inst, err := prom.Query(ctx, `count(k6_seg_latency_seconds{testid="merge1"})`, at)
	if err != nil || len(inst) != 1 || inst[0].Value != 2 {
		t.Fatalf("want one histogram series per instance: %v %v", inst, err)
	}
	cnt, err := prom.Query(ctx, `histogram_count(sum(k6_seg_latency_seconds{testid="merge1"}))`, at)
	if err != nil || len(cnt) != 1 || cnt[0].Value != 2400 {
		t.Fatalf("summed histogram count: %v %v", cnt, err)
	}
	for _, q := range []float64{0.5, 0.95, 0.99} {
		res, err := prom.Query(ctx, `histogram_quantile(`+ftoa(q)+`, sum(k6_seg_latency_seconds{testid="merge1"}))`, at)
		if err != nil || len(res) != 1 {
			t.Fatalf("p%v: %v %v", q*100, res, err)
		}
		promV := res[0].Value * 1000 // seconds → ms
		want := tr.Percentile(q * 100)
		// One native-histogram bucket (schema 8) plus the HDR sinks'
		// reading error (2 significant digits: below 1/256).
		tol := (math.Exp2(1.0/256) - 1 + 1.0/256) * want
		t.Logf("p%v: Prometheus %.4f ms, buzzload merge %.4f ms", q*100, promV, want)
		if math.Abs(promV-want) > tol {
			t.Errorf("p%v: Prometheus %.4f ms, buzzload merge %.4f ms (tolerance %.4f)", q*100, promV, want, tol)
		}
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// killScript is deterministic: 4 VUs of 8 iterations, ~3 s.
const killScript = `
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
const work = new Counter('work_done');
export const options = { scenarios: { s: { executor: 'per-vu-iterations', vus: 4, iterations: 8 } },
  thresholds: { work_done: ['count==32'], checks: ['rate==1'] } };
export default function () {
  work.add(1);
  check(1, { 'one': (v) => v === 1 });
  sleep(0.35);
}
`

// Prometheus killed mid-run: the run's exit code and its summary are what
// they are without the output; the loss is reported (one warning while it
// lasts, the total at the end).
func TestPrometheusRWKilledMidRunChangesNothingButReportsTheLoss(t *testing.T) {
	prom := promserver.Start(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "kill.js")
	if err := os.WriteFile(script, []byte(killScript), 0o644); err != nil {
		t.Fatal(err)
	}
	baseExport := filepath.Join(dir, "base.json")
	baseStart := time.Now()
	baseCode, _, baseErr := runCLIEnv(t, nil, "run", "-q", "--summary-export", baseExport, script)
	baseTook := time.Since(baseStart)
	if baseCode != 0 {
		t.Fatalf("baseline exit %d: %s", baseCode, baseErr)
	}
	// Killed mid-run: once Prometheus holds the run's first points.
	go func() {
		waitfor.Within(30*time.Second, func() bool { return promHas(prom, `k6_iterations_total{testid="kill1"}`) })
		prom.Kill()
	}()
	export := filepath.Join(dir, "killed.json")
	resPath := filepath.Join(dir, "killed.result.json")
	start := time.Now()
	code, _, stderr := runCLIEnv(t, promEnv(prom), "run", "-q", "--tag", "testid=kill1", "--summary-export", export,
		"--result", resPath, "-o", "experimental-prometheus-rw", script)
	took := time.Since(start)
	if code != baseCode {
		t.Fatalf("exit %d with Prometheus killed, %d without the output: %s", code, baseCode, stderr)
	}
	if n := strings.Count(stderr, "push failed"); n != 1 {
		t.Errorf("want one warning while pushes fail, got %d:\n%s", n, stderr)
	}
	if !regexp.MustCompile(`\d+ of \d+ pushes to \S+ failed \(\d+ series points not written\)`).MatchString(stderr) {
		t.Errorf("no final loss total:\n%s", stderr)
	}
	if !pushesLost(t, resPath) {
		t.Error("the result file counts no failed push for a run whose Prometheus was killed")
	}
	// A push blocking the run would add its 5 s timeout; measured against
	// the same run without the output, so a loaded machine slows both.
	if took > baseTook+5*time.Second {
		t.Errorf("the run took %s with Prometheus killed, %s without the output", took, baseTook)
	}
	// The same counts in both summaries: nothing was lost from the run itself.
	read := func(p string) map[string]any {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Metrics map[string]map[string]any `json:"metrics"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"iterations": m.Metrics["iterations"]["count"], "work_done": m.Metrics["work_done"]["count"],
			"checks": m.Metrics["checks"]["passes"]}
	}
	if b, k := read(baseExport), read(export); !equalJSON(b, k) {
		t.Errorf("summary counts differ: without the output %v, with Prometheus killed %v", b, k)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// The same for a Buzz run: with Prometheus killed during the first step,
// the exit code and the Buzz report's verdict, steps, clients, seed and
// client exits are those of the run without the output.
func TestPrometheusRWKilledDuringABuzzRun(t *testing.T) {
	prom := promserver.Start(t)
	dir := t.TempDir()
	script := writeBuzzRun(t, dir)
	run := func(name string, env []string, args ...string) (int, string, map[string]any) {
		t.Helper()
		report := filepath.Join(dir, name+".json")
		args = append(append([]string{"run", "-q", "-e", "BUZZ_REPORT=" + report}, args...), script)
		code, _, stderr := runCLIEnv(t, env, args...)
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatalf("%s: no report (exit %d): %s", name, code, stderr)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return code, stderr, m
	}
	baseCode, _, base := run("base", nil)
	// Killed mid-run: once Prometheus holds the run's Buzz points.
	go func() {
		waitfor.Within(60*time.Second, func() bool { return promHas(prom, `k6_buzz_op_duration_seconds{testid="kill2",op="publish"}`) })
		prom.Kill()
	}()
	code, stderr, killed := run("killed", promEnv(prom), "--tag", "testid=kill2", "-o", "experimental-prometheus-rw")
	if code != baseCode {
		t.Fatalf("exit %d with Prometheus killed, %d without the output: %s", code, baseCode, stderr)
	}
	if strings.Count(stderr, "push failed") != 1 || !strings.Contains(stderr, "series points not written") {
		t.Errorf("want one warning while pushes fail and the total:\n%s", stderr)
	}
	verdict := func(m map[string]any) string {
		steps, _ := m["steps"].([]any)
		var b strings.Builder
		for _, s := range steps {
			st := s.(map[string]any)
			b.WriteString(ftoa(st["users"].(float64)) + " " + ftoa(st["start_s"].(float64)) + " " + ftoa(st["end_s"].(float64)) + " ")
			clients, _ := json.Marshal(st["clients"])
			b.Write(clients)
			b.WriteString(" " + strings.TrimSpace(stringOf(st["reached"])) + ";")
		}
		if sd, ok := m["seed"].(map[string]any); ok {
			delete(sd, "duration_ms") // timing and the embedded relay's port differ between runs
			delete(sd, "ws_url")
		}
		seed, _ := json.Marshal(m["seed"])
		exits, _ := json.Marshal(m["client_exits"])
		return stringOf(m["ok"]) + " " + stringOf(m["abort_reason"]) + " " + b.String() + " " + string(seed) + " " + string(exits)
	}
	if b, k := verdict(base), verdict(killed); b != k {
		t.Errorf("reports differ:\nwithout the output: %s\nPrometheus killed:  %s", b, k)
	}
	if killed["ok"] != true {
		t.Errorf("the run with Prometheus killed is not ok: %v", killed["abort_reason"])
	}
}

func stringOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// promHas reports whether Prometheus has a sample of expr now.
func promHas(prom *promserver.Server, expr string) bool {
	res, err := prom.Query(context.Background(), expr, time.Now())
	return err == nil && len(res) > 0
}
