package thresholds

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

func TestExpressionGrammar(t *testing.T) {
	cases := []struct {
		rule, in string
		stat     string
		op       Op
		value    float64
		err      string
	}{
		{"no spaces", "p(95)<200", "p(95)", OpLT, 200, ""},
		{"spaces around the operator", "p(95) < 200", "p(95)", OpLT, 200, ""},
		{"leading and trailing spaces", "  avg<=1.5  ", "avg", OpLE, 1.5, ""},
		{"<= is found before <", "max<=10", "max", OpLE, 10, ""},
		{">= is found before >", "min>=3", "min", OpGE, 3, ""},
		{"> alone", "count>0", "count", OpGT, 0, ""},
		{"=== means equality", "value===4", "value", OpEq, 4, ""},
		{"== means equality", "rate==1", "rate", OpEq, 1, ""},
		{"!= inequality", "rate != 0", "rate", OpNE, 0, ""},
		{"decimal percentile", "p(99.99)<1000", "p(99.99)", OpLT, 1000, ""},
		{"p(0) and exponent values", "p(0)>1e-3", "p(0)", OpGT, 0.001, ""},
		{"med", "med<100", "med", OpLT, 100, ""},
		{"negative value", "min>-5", "min", OpGT, -5, ""},
		{"no operator", "p(95)", "", 0, 0, "no operator"},
		{"unknown method", "sum<3", "", 0, 0, "unknown aggregation"},
		{"percentile above 100", "p(101)<3", "", 0, 0, "percentile"},
		{"value not a number", "avg<fast", "", 0, 0, "not a number"},
		{"empty value", "avg<", "", 0, 0, "not a number"},
		{"space inside method", "p (95)<3", "", 0, 0, "unknown aggregation"},
		{"single = is no operator", "avg=3", "", 0, 0, "no operator"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			ex, err := ParseExpr(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ex.Stat.Name != c.stat || ex.Op != c.op || ex.Value != c.value || ex.Source != c.in {
				t.Fatalf("got %+v", ex)
			}
		})
	}
}

func newReg(t *testing.T) *metrics.Registry {
	t.Helper()
	reg := metrics.NewRegistry()
	if _, err := reg.RegisterBuiltins(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		n  string
		ty metrics.Type
	}{{"my_counter", metrics.Counter}, {"my_gauge", metrics.Gauge}, {"my_rate", metrics.Rate}, {"my_trend", metrics.Trend}} {
		if _, err := reg.New(d.n, d.ty, metrics.Default); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func parseConfig(t *testing.T, js string) Config {
	t.Helper()
	var c Config
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMethodsAllowedPerMetricType(t *testing.T) {
	reg := newReg(t)
	cases := []struct {
		key, expr string
		ok        bool
	}{
		{"my_counter", "count>1", true}, {"my_counter", "rate<5", true}, {"my_counter", "avg<1", false}, {"my_counter", "value<1", false},
		{"my_gauge", "value<1", true}, {"my_gauge", "max<1", false}, {"my_gauge", "count<1", false},
		{"my_rate", "rate>0.9", true}, {"my_rate", "count>1", false}, {"my_rate", "value>1", false},
		{"my_trend", "avg<1", true}, {"my_trend", "min<1", true}, {"my_trend", "max<1", true}, {"my_trend", "med<1", true},
		{"my_trend", "p(90)<1", true}, {"my_trend", "count>1", false}, {"my_trend", "rate>1", false},
	}
	for _, c := range cases {
		t.Run(c.key+" "+c.expr, func(t *testing.T) {
			_, err := New(Config{c.key: {{Threshold: c.expr}}}, reg)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if err != nil {
				var te *Error
				if !errors.As(err, &te) || te.Metric != c.key || te.Expr != c.expr {
					t.Fatalf("error does not name metric and expression: %#v", err)
				}
				if !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.expr) {
					t.Fatalf("message %q lacks metric or expression", err)
				}
			}
		})
	}
}

func TestDefinitionErrorsNameTheMetric(t *testing.T) {
	reg := newReg(t)
	cases := []struct {
		rule, js, metric, want string
	}{
		{"unknown metric", `{"nope_metric":["count>0"]}`, "nope_metric", "does not exist"},
		{"unknown parent of a sub-metric", `{"nope_metric{a:b}":["count>0"]}`, "nope_metric{a:b}", "does not exist"},
		{"broken selector", `{"my_trend{a:b":["avg<1"]}`, "my_trend{a:b", "end with"},
		{"malformed expression", `{"my_trend":["avg 3"]}`, "my_trend", "malformed"},
		{"bad delayAbortEval", `{"my_trend":[{"threshold":"avg<1","abortOnFail":true,"delayAbortEval":"soon"}]}`, "my_trend", "delayAbortEval"},
		{"delayAbortEval beyond a duration's range", `{"my_trend":[{"threshold":"avg<1","abortOnFail":true,"delayAbortEval":"1e300"}]}`, "my_trend", "delayAbortEval"},
		{"unknown window", `{"my_trend":[{"threshold":"avg<1","window":"minute"}]}`, "my_trend", "window"},
		{"scenario without window", `{"my_trend":[{"threshold":"avg<1","scenario":"a"}]}`, "my_trend", "scenario"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			_, err := New(parseConfig(t, c.js), reg)
			var te *Error
			if !errors.As(err, &te) || te.Metric != c.metric || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	t.Run("json shape errors name the key", func(t *testing.T) {
		var c Config
		err := json.Unmarshal([]byte(`{"my_trend":"avg<1"}`), &c)
		if err == nil || !strings.Contains(err.Error(), "my_trend") {
			t.Fatalf("err = %v", err)
		}
		err = json.Unmarshal([]byte(`{"my_trend":[{"threshold":"avg<1","abortOnFial":true}]}`), &c)
		if err == nil || !strings.Contains(err.Error(), "abortOnFial") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestStringAndObjectForms(t *testing.T) {
	reg := newReg(t)
	cfg := parseConfig(t, `{"my_trend":["p(95)<200",{"threshold":"avg<100","abortOnFail":true,"delayAbortEval":"10s"},
		{"threshold":"max<5","abortOnFail":true,"delayAbortEval":1500}],
		"my_trend{op:x}":[{"threshold":"p(99)<2000","window":"stage","scenario":"ramp","abortOnFail":true}]}`)
	set, err := New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Thresholds) != 4 {
		t.Fatalf("%d thresholds", len(set.Thresholds))
	}
	a, b, c, w := set.Thresholds[0], set.Thresholds[1], set.Thresholds[2], set.Thresholds[3]
	if a.Source != "p(95)<200" || a.AbortOnFail || a.Index != 0 {
		t.Fatalf("string form: %+v", a)
	}
	if !b.AbortOnFail || b.DelayAbortEval != 10*time.Second || b.Index != 1 {
		t.Fatalf("object form: %+v", b)
	}
	if c.DelayAbortEval != 1500*time.Millisecond {
		t.Fatalf("numeric delay is milliseconds: %v", c.DelayAbortEval)
	}
	if w.Window != "stage" || w.Scenario != "ramp" || w.Key != "my_trend{op:x}" {
		t.Fatalf("windowed: %+v", w)
	}
	if len(set.Warnings) != 0 {
		t.Fatalf("unexpected warnings %v", set.Warnings)
	}
	warned, err := New(Config{"my_trend{vu:1}": {{Threshold: "avg<1"}}}, reg)
	if err != nil || len(warned.Warnings) != 1 || !strings.Contains(warned.Warnings[0], "vu") {
		t.Fatalf("vu selector: %v %v", warned, err)
	}
	if keys := set.Keys(); len(keys) != 1 || keys[0] != "my_trend" {
		t.Fatalf("whole-run keys = %v", keys)
	}
}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func setup(t *testing.T, js string) (*Evaluator, *metrics.Collector, *clock, *metrics.Registry) {
	t.Helper()
	reg := newReg(t)
	set, err := New(parseConfig(t, js), reg)
	if err != nil {
		t.Fatal(err)
	}
	c := metrics.NewCollector(reg, metrics.CollectorOptions{})
	clk := &clock{now: start}
	ev, err := NewEvaluator(set, c, Options{RunStart: start, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return ev, c, clk, reg
}

func TestEmptySinkRules(t *testing.T) {
	cases := []struct {
		rule, key, expr string
		finalOK         bool
	}{
		{"count>0 on an untouched counter fails at the end", "my_counter", "count>0", false},
		{"counter rate on an untouched counter is 0", "my_counter", "rate>0", false},
		{"p(95)<200 on an empty trend passes (value 0)", "my_trend", "p(95)<200", true},
		{"avg>1 on an empty trend fails (value 0)", "my_trend", "avg>1", false},
		{"rate>0.9 on an empty rate passes (no value)", "my_rate", "rate>0.9", true},
		{"rate<0.1 on an empty rate passes too", "my_rate", "rate<0.1", true},
		{"gauge value of an empty gauge is 0", "my_gauge", "value>0", false},
		{"empty sub-metric is judged like its type", "my_trend{x:y}", "max>=0", true},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			ev, _, clk, _ := setup(t, `{"`+strings.ReplaceAll(c.key, `"`, `\"`)+`":["`+c.expr+`"]}`)
			clk.now = start.Add(2 * time.Second)
			if out := ev.Check(); len(out.Failed) != 0 {
				t.Fatalf("periodic check judged an empty sink: %+v", out.Failed)
			}
			if st := ev.Statuses()[0]; st.Evaluated {
				t.Fatal("periodic check marked an empty sink evaluated")
			}
			out := ev.Final()
			if ok := len(out.Failed) == 0; ok != c.finalOK {
				t.Fatalf("final ok = %v, want %v", ok, c.finalOK)
			}
			if st := ev.Statuses()[0]; !st.Evaluated || st.OK != c.finalOK {
				t.Fatalf("status = %+v", st)
			}
		})
	}
}

func TestValuesJudgedAndCounterRateUsesRunTime(t *testing.T) {
	ev, c, clk, reg := setup(t, `{"my_counter":["count==10","rate<=2"],"my_trend":["p(50)<=3","max<10"],"my_trend{op:a}":["max<2"],"my_rate":["rate>0.5"]}`)
	ctr, tr, rt := reg.Get("my_counter"), reg.Get("my_trend"), reg.Get("my_rate")
	for i := 0; i < 10; i++ {
		c.Add(metrics.Sample{Metric: ctr, Time: start, Value: 1})
	}
	for _, v := range []float64{1, 2, 3, 4, 5} {
		op := "b"
		if v == 1 {
			op = "a"
		}
		c.Add(metrics.Sample{Metric: tr, Tags: metrics.NewTagSet(metrics.Tag{Key: "op", Value: op}), Time: start, Value: v})
	}
	c.Add(metrics.Sample{Metric: rt, Time: start, Value: 1})
	c.Add(metrics.Sample{Metric: rt, Time: start, Value: 0})

	clk.now = start.Add(4 * time.Second) // rate = 10/4 = 2.5 > 2
	out := ev.Check()
	failed := map[string]bool{}
	for _, f := range out.Failed {
		failed[f.Key+" "+f.Source] = true
	}
	want := map[string]bool{"my_counter rate<=2": true, "my_rate rate>0.5": true}
	if len(failed) != len(want) {
		t.Fatalf("failed = %v, want %v", failed, want)
	}
	for k := range want {
		if !failed[k] {
			t.Fatalf("failed = %v, want %v", failed, want)
		}
	}
	clk.now = start.Add(5 * time.Second) // rate = 2
	out = ev.Check()
	if len(out.Failed) != 1 || out.Failed[0].Key != "my_rate" {
		t.Fatalf("failed = %+v", out.Failed)
	}
	for _, st := range ev.Statuses() {
		if st.Key == "my_trend" && st.Source == "p(50)<=3" && (st.Value != 3 || !st.OK) {
			t.Fatalf("p(50) status %+v", st)
		}
	}
}

func TestAbortOnFailTiming(t *testing.T) {
	cases := []struct {
		rule      string
		spec      string
		at        time.Duration
		wantAbort bool
	}{
		{"abortOnFail without delay aborts on the first failing check", `{"threshold":"max<1","abortOnFail":true}`, 2 * time.Second, true},
		{"delayAbortEval not yet passed does not abort", `{"threshold":"max<1","abortOnFail":true,"delayAbortEval":"10s"}`, 4 * time.Second, false},
		{"delayAbortEval equal to run time does not abort yet", `{"threshold":"max<1","abortOnFail":true,"delayAbortEval":"10s"}`, 10 * time.Second, false},
		{"delayAbortEval behind run time aborts", `{"threshold":"max<1","abortOnFail":true,"delayAbortEval":"10s"}`, 12 * time.Second, true},
		{"failing without abortOnFail never aborts", `"max<1"`, 12 * time.Second, false},
		{"passing abortOnFail does not abort", `{"threshold":"max<100","abortOnFail":true}`, 12 * time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			ev, col, clk, reg := setup(t, `{"my_trend":[`+c.spec+`]}`)
			col.Add(metrics.Sample{Metric: reg.Get("my_trend"), Time: start, Value: 5})
			clk.now = start.Add(c.at)
			out := ev.Check()
			if out.Abort != c.wantAbort {
				t.Fatalf("abort = %v, want %v (failed %v)", out.Abort, c.wantAbort, out.Failed)
			}
			if c.wantAbort && (out.AbortedBy == nil || out.AbortedBy.Key != "my_trend") {
				t.Fatalf("AbortedBy = %+v", out.AbortedBy)
			}
			if fin := ev.Final(); fin.Abort {
				t.Fatal("final evaluation set abort")
			}
		})
	}
}

func TestWindowedThresholdsJudgeEachStage(t *testing.T) {
	ev, c, clk, reg := setup(t, `{"my_trend":[{"threshold":"p(99)<2000","window":"stage","scenario":"ramp","abortOnFail":true,"delayAbortEval":"25s"},"max<100000"]}`)
	tr := reg.Get("my_trend")
	ramp := metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: "ramp"})
	other := metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: "other"})
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	add := func(s int, v float64, tags metrics.TagSet) {
		c.Add(metrics.Sample{Metric: tr, Tags: tags, Time: at(s), Value: v})
	}
	// Stage 0: 0–10 s, fast.
	ev.StageStarted("ramp", 0, "warm", at(0))
	for i := 0; i < 100; i++ {
		add(i%10, 100, ramp)
	}
	// Another scenario's sample is in the window too: `scenario` picks the
	// stage clock, the selector the samples (p99 of 101 values stays 100).
	add(5, 50000, other)
	clk.now = at(10)
	if out := ev.StageEnded("ramp", 0, "warm", at(10)); len(out.Failed) != 0 || out.Abort {
		t.Fatalf("stage 0: %+v", out)
	}
	// Stage 1: 10–20 s, slow: fails, but delayAbortEval (25 s) not passed.
	ev.StageStarted("ramp", 1, "peak", at(10))
	for i := 0; i < 100; i++ {
		add(10+i%10, 3000, ramp)
	}
	out := ev.StageEnded("ramp", 1, "peak", at(20))
	if len(out.Failed) != 1 || out.Abort {
		t.Fatalf("stage 1: failed %d abort %v", len(out.Failed), out.Abort)
	}
	// An unrelated scenario's stage does not cut the ramp window.
	ev.StageStarted("other", 0, "x", at(20))
	ev.StageEnded("other", 0, "x", at(21))
	// Stage 2: 20–30 s, slow again, now past the delay: abort.
	ev.StageStarted("ramp", 2, "peak2", at(20))
	for i := 0; i < 100; i++ {
		add(20+i%10, 2500, ramp)
	}
	out = ev.StageEnded("ramp", 2, "peak2", at(30))
	if !out.Abort || out.AbortedBy == nil || out.AbortedBy.Window != "stage" {
		t.Fatalf("stage 2: %+v", out)
	}
	vs := ev.StageVerdicts()
	if len(vs) != 3 {
		t.Fatalf("verdicts = %+v", vs)
	}
	wantOK := []bool{true, false, false}
	wantVal := []float64{100, 3000, 2500}
	for i, v := range vs {
		wantN := int64(100)
		if i == 0 {
			wantN = 101
		}
		if v.Stage != i || v.OK != wantOK[i] || v.Value != wantVal[i] || v.Samples != wantN || v.Scenario != "ramp" || !v.End.Equal(at(10*(i+1))) {
			t.Fatalf("verdict %d = %+v", i, v)
		}
	}
	if vs[1].StageName != "peak" || !vs[1].Start.Equal(at(10)) {
		t.Fatalf("verdict 1 stage info = %+v", vs[1])
	}
	// The whole-run threshold is judged on everything, the windowed one fails the run.
	fin := ev.Final()
	if len(fin.Failed) != 1 || fin.Failed[0].Window != "stage" {
		t.Fatalf("final failed = %+v", fin.Failed)
	}
}

// A window the caller keeps open over stages 0 and 1 (a named run) is one
// verdict over both, reported at its first stage.
func TestWindowSpanningStages(t *testing.T) {
	ev, c, clk, reg := setup(t, `{"my_trend":[{"threshold":"avg<60","window":"stage"}]}`)
	tr := reg.Get("my_trend")
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	ev.StageStarted("ramp", 0, "step-0", at(0))
	for i := 0; i < 10; i++ {
		c.Add(metrics.Sample{Metric: tr, Time: at(1), Value: 100}) // stage 0 alone: avg 100
		c.Add(metrics.Sample{Metric: tr, Time: at(15), Value: 0})
		c.Add(metrics.Sample{Metric: tr, Time: at(16), Value: 0})
	}
	clk.now = at(20)
	if out := ev.StageEnded("ramp", 1, "step-0", at(20)); len(out.Failed) != 0 {
		t.Fatalf("the run's avg is 33: %+v", out.Failed)
	}
	vs := ev.StageVerdicts()
	if len(vs) != 1 || vs[0].Stage != 0 || vs[0].StageName != "step-0" || !vs[0].Start.Equal(at(0)) || vs[0].Samples != 30 {
		t.Fatalf("verdicts %+v", vs)
	}
}

// A selector with the scenario tag keeps a windowed threshold to that
// scenario's samples; two thresholds on one selector clocked by different
// scenarios get a window each.
func TestWindowSelectorFiltersScenarioClocksOnly(t *testing.T) {
	ev, c, clk, reg := setup(t, `{"my_trend{scenario:a}":[{"threshold":"max<10","window":"stage","scenario":"a"}],
		"my_trend":[{"threshold":"max<10","window":"stage","scenario":"a"},{"threshold":"max<10","window":"stage","scenario":"b"}]}`)
	tr := reg.Get("my_trend")
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	tag := func(sc string) metrics.TagSet { return metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: sc}) }
	ev.StageStarted("a", 0, "", at(0))
	ev.StageStarted("b", 0, "", at(0))
	c.Add(metrics.Sample{Metric: tr, Tags: tag("a"), Time: at(1), Value: 1})
	c.Add(metrics.Sample{Metric: tr, Tags: tag("b"), Time: at(1), Value: 50})
	clk.now = at(5)
	out := ev.StageEnded("a", 0, "", at(5))
	if len(out.Failed) != 1 || out.Failed[0].Key != "my_trend" || out.Failed[0].Scenario != "a" {
		t.Fatalf("stage end of a: failed %+v, want only the unfiltered threshold clocked by a", out.Failed)
	}
	out = ev.StageEnded("b", 0, "", at(5))
	if len(out.Failed) != 1 || out.Failed[0].Scenario != "b" {
		t.Fatalf("stage end of b: failed %+v", out.Failed)
	}
	if vs := ev.StageVerdicts(); len(vs) != 3 {
		t.Fatalf("verdicts %+v, want 3", vs)
	}
}
