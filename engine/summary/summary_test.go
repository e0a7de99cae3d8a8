package summary

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

var start = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

type run struct {
	c   *metrics.Collector
	reg *metrics.Registry
	ev  *thresholds.Evaluator
	buf *metrics.Buffer
	n   int
}

func (r *run) add(name string, v float64, tags ...string) {
	var ts []metrics.Tag
	for i := 0; i+1 < len(tags); i += 2 {
		ts = append(ts, metrics.Tag{Key: tags[i], Value: tags[i+1]})
	}
	r.n++
	r.buf.Add(metrics.Sample{Metric: r.reg.Get(name), Tags: metrics.NewTagSet(ts...), Time: start.Add(time.Duration(r.n) * time.Millisecond), Value: v})
}

// newRun records the fixture the golden text was written for (see the
// values in TestCompactSummaryGolden).
func newRun(t *testing.T, opts Options, thresholdJSON string) (*run, Input) {
	t.Helper()
	reg := metrics.NewRegistry()
	if _, err := reg.RegisterBuiltins(); err != nil {
		t.Fatal(err)
	}
	reg.New("custom_waiting_time", metrics.Trend, metrics.Time)
	reg.New("my_counter", metrics.Counter, metrics.Default)
	c := metrics.NewCollector(reg, metrics.CollectorOptions{})
	if err := Register(c, opts); err != nil {
		t.Fatal(err)
	}
	var cfg thresholds.Config
	if err := json.Unmarshal([]byte(thresholdJSON), &cfg); err != nil {
		t.Fatal(err)
	}
	set, err := thresholds.New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	now := start.Add(2 * time.Second)
	ev, err := thresholds.NewEvaluator(set, c, thresholds.Options{RunStart: start, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{c: c, reg: reg, ev: ev, buf: c.NewBuffer()}
	// HTTP: 11 requests; 30, 60 and 90 ms ones failed.
	for _, v := range []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 100} {
		failed := v == 30 || v == 60 || v == 90
		exp := "true"
		if failed {
			exp = "false"
		}
		r.add("http_req_duration", v, "expected_response", exp, "scenario", "default")
		f := 0.0
		if failed {
			f = 1
		}
		r.add("http_req_failed", f, "scenario", "default")
		r.add("http_reqs", 1, "scenario", "default")
	}
	for i := 0; i < 11; i++ {
		pass := 1.0
		if i >= 8 {
			pass = 0
		}
		r.add("checks", pass, "check", "status is 200", "group", "", "scenario", "default")
	}
	for i := 0; i < 4; i++ {
		r.add("checks", 1, "check", "fast", "group", "::g1", "scenario", "api")
	}
	for _, v := range []float64{100, 200, 400, 400} {
		r.add("iteration_duration", v, "scenario", "default")
		r.add("iterations", 1, "scenario", "default")
	}
	r.add("group_duration", 42, "group", "::g1", "scenario", "api")
	for _, v := range []float64{1, 2, 2} {
		r.add("vus", v)
	}
	r.add("vus_max", 2)
	r.add("vus_max", 2)
	r.add("data_received", 8200, "scenario", "default")
	r.add("data_sent", 800, "scenario", "default")
	for i := 0; i < 3; i++ {
		r.add("custom_waiting_time", 120, "scenario", "default")
		r.add("my_counter", 1, "scenario", "default")
	}
	r.ev.Final()
	return r, Input{Snapshot: c.Snapshot(2 * time.Second), Thresholds: ev.Statuses(), Options: opts}
}

const goldenThresholds = `{"custom_waiting_time":["p(99.9)<500"],"http_req_duration":["p(95)<200","avg<50"],
	"http_req_duration{expected_response:true}":["max<100"],"http_req_failed":["rate<0.1"],"my_counter":["count>2"]}`

func TestCompactSummaryGolden(t *testing.T) {
	_, in := newRun(t, Options{}, goldenThresholds)
	got, err := Text(in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/compact.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		diffLines(t, "", got, string(want))
		t.Fatalf("summary differs from testdata/compact.golden")
	}
}

// diffLines reports each line where got and want differ, prefixed.
func diffLines(t *testing.T, prefix, got, want string) {
	t.Helper()
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%sline %d\n got %q\nwant %q", prefix, i+1, g, w)
		}
	}
}

func TestSummaryRules(t *testing.T) {
	t.Run("trend threshold on a stat not shown prints an empty value", func(t *testing.T) {
		_, in := newRun(t, Options{TrendStats: []string{"avg", "p(99)"}}, `{"http_req_duration":["max<1000","p(90)<1000"]}`)
		got, _ := Text(in)
		if !strings.Contains(got, "    ✓ 'max<1000' max=\n") {
			t.Fatalf("no empty max value:\n%s", got)
		}
		if !strings.Contains(got, "    ✓ 'p(90)<1000' p(90)=100ms\n") {
			t.Fatalf("percentile not computed on the fly:\n%s", got)
		}
		if !strings.Contains(got, ": avg=59.09ms p(99)=100ms\n") {
			t.Fatalf("trend stats not applied:\n%s", got)
		}
	})
	t.Run("no thresholds means no threshold section", func(t *testing.T) {
		_, in := newRun(t, Options{}, `{}`)
		got, _ := Text(in)
		if strings.Contains(got, "THRESHOLDS") || !strings.HasPrefix(got, "\n\n  █ TOTAL RESULTS \n\n") {
			t.Fatalf("got:\n%s", got)
		}
	})
	t.Run("fixed time unit", func(t *testing.T) {
		_, in := newRun(t, Options{TimeUnit: "s"}, `{}`)
		got, _ := Text(in)
		if !strings.Contains(got, "avg=0.28s min=0.10s") {
			t.Fatalf("got:\n%s", got)
		}
	})
	t.Run("colour only when asked", func(t *testing.T) {
		_, in := newRun(t, Options{Color: true}, goldenThresholds)
		got, _ := Text(in)
		if !strings.Contains(got, "\x1b[31m✗ 'avg<50' avg=59.09ms\x1b[0m") || !strings.Contains(got, "\x1b[32m✓ fast\x1b[0m") {
			t.Fatalf("colours missing:\n%q", got)
		}
		_, in = newRun(t, Options{}, goldenThresholds)
		plain, _ := Text(in)
		if strings.Contains(plain, "\x1b[") {
			t.Fatal("colour codes without Color")
		}
	})
	t.Run("compact hides http timing breakdown, full shows it and sections", func(t *testing.T) {
		r, _ := newRun(t, Options{Mode: "full"}, `{}`)
		r.add("http_req_waiting", 5, "scenario", "default")
		in := Input{Snapshot: r.c.Snapshot(2 * time.Second), Options: Options{Mode: "full"}}
		full, err := Text(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Options.Mode = "compact"
		compact, _ := Text(in)
		if strings.Contains(compact, "http_req_waiting") || !strings.Contains(full, "http_req_waiting") {
			t.Fatal("compact/full hiding wrong")
		}
		if !strings.Contains(full, "  █ GROUP: g1 \n") || !strings.Contains(full, "  █ SCENARIO: api \n") || strings.Contains(full, "SCENARIO: default") {
			t.Fatalf("full sections:\n%s", full)
		}
		api := full[strings.Index(full, "SCENARIO: api"):]
		if !strings.Contains(api, "checks_total.......: 4") || !strings.Contains(api, "✓ fast") || strings.Contains(api, "status is 200") {
			t.Fatalf("scenario section:\n%s", api)
		}
	})
	t.Run("bad options are errors", func(t *testing.T) {
		for _, o := range []Options{{Mode: "legacy"}, {TimeUnit: "m"}, {TrendStats: []string{"sum"}}} {
			if _, err := Text(Input{Snapshot: &metrics.Snapshot{}, Options: o}); err == nil {
				t.Errorf("%+v accepted", o)
			}
		}
	})
}

func TestNumberFormatting(t *testing.T) {
	cases := []struct {
		rule string
		got  string
		want string
	}{
		{"rate truncates to 2 decimals", formatPercent(8.0 / 11), "72.72%"},
		{"rate of 0.29 does not drop to 28.99", formatPercent(0.29), "29.00%"},
		{"data below 10 bytes", formatData(7), "7 B"},
		{"data in bytes", formatData(793), "793 B"},
		{"data kB with one decimal", formatData(8300), "8.3 kB"},
		{"data above 10 units has no decimals", formatData(12_345_678), "12 MB"},
		{"data halves round up", formatData(396.5), "397 B"},
		{"zero time", formatDuration(0, ""), "0s"},
		{"nanoseconds", formatDuration(0.000123, ""), "123ns"},
		{"microseconds truncated", formatDuration(0.51234, ""), "512.34µs"},
		{"milliseconds trailing zeros removed", formatDuration(120.5, ""), "120.5ms"},
		{"seconds with 2 decimals", formatDuration(1500, ""), "1.50s"},
		{"minutes", formatDuration(90_500, ""), "1m30s"},
		{"hours", formatDuration(3_723_000, ""), "1h2m3s"},
		{"fixed ms", formatDuration(1.5, "ms"), "1.50ms"},
		{"fixed us", formatDuration(1.5, "us"), "1500.00µs"},
		{"fixed s", formatDuration(1234, "s"), "1.23s"},
		{"plain numbers toFixed(6) trimmed", formatPlain(5.4507251), "5.450725"},
		{"plain integers", formatPlain(120), "120"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %q want %q", c.rule, c.got, c.want)
		}
	}
}

func TestHandleSummaryDataShape(t *testing.T) {
	_, in := newRun(t, Options{}, goldenThresholds)
	in.SetupData = json.RawMessage(`{"n":1}`)
	d, err := Data(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(m any) string {
		var ks []string
		for k := range m.(map[string]any) {
			ks = append(ks, k)
		}
		sortStrings(ks)
		return strings.Join(ks, ",")
	}
	if k := keys(got); k != "metrics,options,root_group,setup_data,state" {
		t.Fatalf("top-level keys %s", k)
	}
	if k := keys(got["options"]); k != "noColor,summaryTimeUnit,summaryTrendStats" {
		t.Fatalf("options keys %s", k)
	}
	st := got["state"].(map[string]any)
	if st["testRunDurationMs"] != 2000.0 || st["isStdOutTTY"] != false {
		t.Fatalf("state %v", st)
	}
	root := got["root_group"].(map[string]any)
	if root["id"] != "d41d8cd98f00b204e9800998ecf8427e" || root["path"] != "" || root["name"] != "" {
		t.Fatalf("root %v", root)
	}
	checks := root["checks"].([]any)
	c0 := checks[0].(map[string]any)
	if c0["name"] != "status is 200" || c0["path"] != "::status is 200" || c0["passes"] != 8.0 || c0["fails"] != 3.0 ||
		c0["id"] != md5hex("::status is 200") {
		t.Fatalf("check %v", c0)
	}
	g1 := root["groups"].([]any)[0].(map[string]any)
	if g1["name"] != "g1" || g1["path"] != "::g1" || g1["id"] != md5hex("::g1") {
		t.Fatalf("group %v", g1)
	}
	if c := g1["checks"].([]any)[0].(map[string]any); c["path"] != "::g1::fast" || c["passes"] != 4.0 {
		t.Fatalf("group check %v", c)
	}
	m := got["metrics"].(map[string]any)
	want := map[string]string{
		"http_reqs":          "count,rate",
		"vus":                "max,min,value",
		"http_req_failed":    "fails,passes,rate",
		"http_req_duration":  "avg,max,med,min,p(90),p(95)",
		"checks":             "fails,passes,rate",
		"iteration_duration": "avg,max,med,min,p(90),p(95)",
	}
	for name, ks := range want {
		md := m[name].(map[string]any)
		if k := keys(md["values"]); k != ks {
			t.Errorf("%s values keys %s, want %s", name, k, ks)
		}
	}
	sub := m["http_req_duration{expected_response:true}"].(map[string]any)
	if sub["type"] != "trend" || sub["contains"] != "time" {
		t.Fatalf("sub-metric %v", sub)
	}
	th := m["http_req_duration"].(map[string]any)["thresholds"].(map[string]any)
	if th["p(95)<200"].(map[string]any)["ok"] != true || th["avg<50"].(map[string]any)["ok"] != false {
		t.Fatalf("thresholds %v", th)
	}
	if _, has := m["vus"].(map[string]any)["thresholds"]; has {
		t.Fatal("thresholds key on a metric without thresholds")
	}
	if v := m["http_reqs"].(map[string]any)["values"].(map[string]any); v["count"] != 11.0 || v["rate"] != 5.5 {
		t.Fatalf("http_reqs values %v", v)
	}
	if got["setup_data"].(map[string]any)["n"] != 1.0 {
		t.Fatal("setup_data lost")
	}
	in.SetupData = nil
	d, _ = Data(in)
	b, _ = json.Marshal(d)
	if strings.Contains(string(b), "setup_data") {
		t.Fatal("setup_data present when setup returned nothing")
	}
}

func TestSummaryExportOldFormat(t *testing.T) {
	_, in := newRun(t, Options{}, goldenThresholds)
	b, err := Export(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "{\n    \"root_group\": {") || strings.Contains(s, `"options"`) || strings.Contains(s, `"state"`) {
		t.Fatalf("layout:\n%.300s", s)
	}
	if !strings.Contains(s, `"p(95)<200": false`) || !strings.Contains(s, `"avg<50": true`) {
		t.Fatal("thresholds are not {source: failed} or escaped")
	}
	var got struct {
		RootGroup struct {
			Groups map[string]struct {
				Checks map[string]Check `json:"checks"`
			} `json:"groups"`
			Checks map[string]Check `json:"checks"`
		} `json:"root_group"`
		Metrics map[string]map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.RootGroup.Checks["status is 200"].Fails != 3 || got.RootGroup.Groups["g1"].Checks["fast"].Passes != 4 {
		t.Fatalf("groups/checks not keyed by name: %+v", got.RootGroup)
	}
	hf := got.Metrics["http_req_failed"]
	if _, has := hf["rate"]; has || hf["value"] == nil || hf["passes"] != 3.0 {
		t.Fatalf("rate metric not renamed: %v", hf)
	}
	if _, has := hf["type"]; has {
		t.Fatal("type kept in export")
	}
	if got.Metrics["http_reqs"]["rate"] != 5.5 {
		t.Fatal("counter rate renamed")
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// A sub-metric threshold whose parent has none is headed by its whole name
// at the metrics' indent, as k6 v2.2.0 prints it (observed:
// `http_req_duration{status:200}` then `✓ 'max<5000' max=…`); under a
// parent with thresholds it stays the indented {selector}. Fails with the
// earlier layout (a bare parent heading, the selector indented).
func TestSubmetricThresholdWithoutItsParent(t *testing.T) {
	_, in := newRun(t, Options{}, `{"http_req_duration{expected_response:true}":["max<100"],"my_counter":["count>2"]}`)
	got, err := Text(in)
	if err != nil {
		t.Fatal(err)
	}
	block := got[strings.Index(got, "THRESHOLDS"):strings.Index(got, "TOTAL RESULTS")]
	if !strings.Contains(block, "\n    http_req_duration{expected_response:true}\n    ✗ 'max<100'") ||
		strings.Contains(block, "\n    http_req_duration\n") {
		t.Errorf("THRESHOLDS block:\n%s", block)
	}
}
