package webdashboard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// k6's settings: defaults, the environment, the output's argument over
// it; a bad value names its key.
func TestParse(t *testing.T) {
	c, err := Parse("", nil)
	if err != nil || c.Host != "127.0.0.1" || c.Port != 5665 || c.Period != 10*time.Second || c.Open || c.Export != "" {
		t.Fatalf("defaults %+v %v", c, err)
	}
	env := map[string]string{"K6_WEB_DASHBOARD_PORT": "-1", "K6_WEB_DASHBOARD_PERIOD": "2s", "K6_WEB_DASHBOARD_EXPORT": "a.html"}
	c, err = Parse("period=500ms&export=b.html", env)
	if err != nil || c.Port != -1 || c.Period != 500*time.Millisecond || c.Export != "b.html" {
		t.Fatalf("env and argument %+v %v", c, err)
	}
	if c, err := Parse("report=c.html&host=0.0.0.0&open=false", nil); err != nil || c.Export != "c.html" || c.Host != "0.0.0.0" {
		t.Fatalf("k6's report alias %+v %v", c, err)
	}
	for arg, want := range map[string]string{
		"port=x":      `port="x"`,
		"port=70000":  `port="70000"`,
		"period=10":   `period="10"`,
		"period=1ms":  "at least 100ms",
		"colour=blue": "colour: unknown setting",
		"open=maybe":  `open="maybe"`,
	} {
		if _, err := Parse(arg, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", arg, err, want)
		}
	}
	if _, err := Parse("", map[string]string{"K6_WEB_DASHBOARD_PERIOD": "soon"}); err == nil || !strings.Contains(err.Error(), "K6_WEB_DASHBOARD_PERIOD") {
		t.Errorf("bad environment value: %v", err)
	}
	if !Enabled(map[string]string{"K6_WEB_DASHBOARD": "true"}) || Enabled(map[string]string{"K6_WEB_DASHBOARD": "no"}) || Enabled(nil) {
		t.Error("K6_WEB_DASHBOARD")
	}
}

func testMetrics(t *testing.T) map[string]*metrics.Metric {
	t.Helper()
	r := metrics.NewRegistry()
	out := map[string]*metrics.Metric{}
	for name, typ := range map[string]metrics.Type{"iterations": metrics.Counter, "vus": metrics.Gauge, "checks": metrics.Rate,
		"http_req_duration": metrics.Trend, opDuration: metrics.Trend, opFailed: metrics.Rate, opThrottled: metrics.Counter, clientsName: metrics.Gauge} {
		m, err := r.New(name, typ, metrics.Default)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = m
	}
	return out
}

// A period's window: counters add, a gauge keeps its last value, a rate
// its share, a trend its percentiles (1 % at most off); Buzz operations by
// op, clients by kind; the next period starts empty.
func TestAggregatorWindows(t *testing.T) {
	m := testMetrics(t)
	t0 := time.Now()
	g := newAggregator(t0, testOps)
	op := metrics.NewTagSet(metrics.Tag{Key: "op", Value: "publish"}, metrics.Tag{Key: "step", Value: "1"})
	var ss []metrics.Sample
	for i := 1; i <= 1000; i++ {
		ss = append(ss, metrics.Sample{Metric: m["http_req_duration"], Value: float64(i)},
			metrics.Sample{Metric: m["iterations"], Value: 1},
			metrics.Sample{Metric: m["checks"], Value: float64(i % 4 / 3)}) // 1 in 4 passes
	}
	ss = append(ss, metrics.Sample{Metric: m["vus"], Value: 3}, metrics.Sample{Metric: m["vus"], Value: 7},
		metrics.Sample{Metric: m[opDuration], Tags: op, Value: 2}, metrics.Sample{Metric: m[opFailed], Tags: op, Value: 0},
		metrics.Sample{Metric: m[opFailed], Tags: op, Value: 1}, metrics.Sample{Metric: m[opThrottled], Tags: op, Value: 1},
		metrics.Sample{Metric: m[clientsName], Tags: metrics.NewTagSet(metrics.Tag{Key: "kind", Value: "human"}), Value: 12})
	g.add(ss)
	w := g.close(t0.Add(2 * time.Second))
	if w.StartS != 0 || w.EndS != 2 {
		t.Errorf("window %v–%v", w.StartS, w.EndS)
	}
	if p := w.Metrics["iterations"]; p.Sum != 1000 || p.Type != "counter" {
		t.Errorf("iterations %+v", p)
	}
	if p := w.Metrics["vus"]; p.Value != 7 {
		t.Errorf("vus %+v", p)
	}
	if p := w.Metrics["checks"]; p.N != 1000 || p.Passes != 250 || p.Value != 0.25 {
		t.Errorf("checks %+v", p)
	}
	p := w.Metrics["http_req_duration"]
	if p.N != 1000 || p.Max != 1000 || p.Avg != 500.5 || p.P50 < 495 || p.P50 > 505 || p.P99 < 985 || p.P99 > 1000 {
		t.Errorf("http_req_duration %+v", p)
	}
	if o := w.Ops["publish"]; o == nil || o.Count != 3 || o.Errors != 1 || o.Throttled != 1 || o.P99Ms < 1.98 || o.P99Ms > 2.02 {
		t.Errorf("publish %+v", o)
	}
	if w.Clients["human"] != 12 {
		t.Errorf("clients %v", w.Clients)
	}
	if len(w.Steps) != 1 || w.Steps[0] != "1" {
		t.Errorf("steps %v, want the ops' step tag", w.Steps)
	}
	w2 := g.close(t0.Add(3 * time.Second))
	// A gauge holds its value into a period without samples.
	if len(w2.Metrics) != 2 || w2.Metrics["vus"].Value != 7 || w2.Metrics[clientsName].Value != 12 || len(w2.Ops) != 0 || w2.Clients["human"] != 12 || w2.StartS != 2 || len(w2.Steps) != 0 {
		t.Errorf("the next period %+v", w2)
	}
}

// The windows kept stay bounded however long the run: the older half is
// merged, counts kept.
func TestAggregatorStaysBounded(t *testing.T) {
	m := testMetrics(t)
	t0 := time.Now()
	g := newAggregator(t0, testOps)
	const periods = 3 * maxWindows
	for i := 1; i <= periods; i++ {
		g.add([]metrics.Sample{{Metric: m["iterations"], Value: 2}})
		g.close(t0.Add(time.Duration(i) * time.Second))
	}
	ws := g.windows()
	if len(ws) > maxWindows {
		t.Fatalf("%d windows kept", len(ws))
	}
	sum, last := 0.0, 0.0
	for _, w := range ws {
		sum += w.Metrics["iterations"].Sum
		if w.StartS != last {
			t.Fatalf("gap before %v (after %v)", w.StartS, last)
		}
		last = w.EndS
	}
	if sum != 2*periods || last != periods {
		t.Errorf("after merging: %v iterations to %v s, want %d to %d", sum, last, 2*periods, periods)
	}
}

// Two periods merge by metric type, and an op's p50 is weighted by its
// successes, as the Buzz report's windows merge (a period of failures
// carries no durations).
func TestMergeWindowsByType(t *testing.T) {
	a := Window{StartS: 0, EndS: 1, Metrics: map[string]*Point{
		"c": {Type: "counter", Sum: 2}, "g": {Type: "gauge", Value: 5},
		"r": {Type: "rate", N: 4, Passes: 1, Value: 0.25}, "t": {Type: "trend", N: 1, Avg: 10, P50: 10, P95: 10, Max: 10},
	}, Ops: map[string]*OpPoint{"publish": {Count: 2, P50Ms: 4, P95Ms: 4}}}
	b := Window{StartS: 1, EndS: 2, Metrics: map[string]*Point{
		"c": {Type: "counter", Sum: 3}, "g": {Type: "gauge", Value: 7},
		"r": {Type: "rate", N: 4, Passes: 3, Value: 0.75}, "t": {Type: "trend", N: 3, Avg: 2, P50: 2, P95: 30, Max: 30},
	}, Ops: map[string]*OpPoint{"publish": {Count: 6, Errors: 6, P50Ms: 100}}}
	w := mergeWindows(a, b)
	m := w.Metrics
	if m["c"].Sum != 5 || m["g"].Value != 7 || m["r"].N != 8 || m["r"].Passes != 4 || m["r"].Value != 0.5 ||
		m["t"].N != 4 || m["t"].Avg != 4 || m["t"].P50 != 4 || m["t"].P95 != 30 || m["t"].Max != 30 || w.EndS != 2 {
		t.Fatalf("merged %+v %+v %+v %+v", *m["c"], *m["g"], *m["r"], *m["t"])
	}
	if p := w.Ops["publish"]; p.Count != 8 || p.Errors != 6 || p.P50Ms != 4 || p.P95Ms != 4 {
		t.Fatalf("merged op %+v: p50 is the successes' (the failed period has none)", *p)
	}
}

// The live server: the page carries the periods so far, the event stream
// sends each new one and the final state; the export is the same page.
func TestDashboardServesAndExports(t *testing.T) {
	m := testMetrics(t)
	export := filepath.Join(t.TempDir(), "dash.html")
	d := New(Config{Host: "127.0.0.1", Port: 0, Period: 100 * time.Millisecond, Export: export}, "x.js", func(s string) { t.Log(s) }, View{Render: testRender, Ops: testOps})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.URL(), "http://127.0.0.1:") {
		t.Fatalf("url %q", d.URL())
	}
	resp, err := http.Get(d.URL() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "event: ") {
				events <- strings.TrimPrefix(l, "event: ")
			}
		}
		close(events)
	}()
	if e := <-events; e != "config" {
		t.Fatalf("first event %q, want the configuration at once", e)
	}
	d.AddSamples([]metrics.Sample{{Metric: m["iterations"], Value: 5}})
	if e := <-events; e != "window" {
		t.Fatalf("second event %q", e)
	}
	page, err := http.Get(d.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(body), `"live":"/events"`) || !strings.Contains(string(body), `"iterations":{"t":"counter","sum":5}`) {
		t.Errorf("the page lacks the periods so far or the stream:\n%.2000s", body)
	}
	if err := d.Finish(json.RawMessage(`{"ok":true,"run_id":"r"}`)); err != nil {
		t.Fatal(err)
	}
	final := false
	for e := range events {
		final = final || e == "final"
	}
	if !final {
		t.Error("no final event")
	}
	raw, err := os.ReadFile(export)
	if err != nil || !strings.Contains(string(raw), `"run_id":"r"`) || strings.Contains(string(raw), `"live":"/events"`) {
		t.Errorf("export (%v): %.500s", err, raw)
	}
	if _, err := http.Get(d.URL() + "/"); err == nil {
		t.Error("the server still answers after Finish")
	}
}

// The run's last period, a few milliseconds long, joins the one before:
// its counts over its length would draw a spike in every rate.
func TestShortLastPeriodJoinsThePrevious(t *testing.T) {
	m := testMetrics(t)
	t0 := time.Now()
	g := newAggregator(t0, testOps)
	g.add([]metrics.Sample{{Metric: m["iterations"], Value: 10}})
	g.close(t0.Add(time.Second))
	g.add([]metrics.Sample{{Metric: m["iterations"], Value: 10}})
	g.close(t0.Add(2 * time.Second))
	g.add([]metrics.Sample{{Metric: m["iterations"], Value: 3}})
	w := g.closeLast(t0.Add(2*time.Second+7*time.Millisecond), time.Second)
	ws := g.windows()
	if len(ws) != 2 || w.StartS != 1 || w.EndS != 2.007 || w.Metrics["iterations"].Sum != 13 || ws[1].EndS != 2.007 {
		t.Errorf("last %+v, windows %d", w, len(ws))
	}
	g.add([]metrics.Sample{{Metric: m["iterations"], Value: 3}})
	if w := g.closeLast(t0.Add(2*time.Second+800*time.Millisecond), time.Second); len(g.windows()) != 3 || w.Metrics["iterations"].Sum != 3 {
		t.Errorf("a long enough last period stands alone: %+v", w)
	}
}

// The operation view the tests read: names of the caller's choosing (the
// engine knows none of its own).
var testOps = OpMetrics{Duration: opDuration, Failed: opFailed, Throttled: opThrottled, Clients: clientsName}

const (
	opDuration  = "x_op_duration"
	opFailed    = "x_op_failed"
	opThrottled = "x_op_throttled"
	clientsName = "x_clients"
)

// testRender writes the page's data in a page, as the caller's renderer
// does (its JSON inside).
func testRender(w io.Writer, page []byte) error {
	_, err := fmt.Fprintf(w, "<html><script type=\"application/json\">%s</script></html>\n", page)
	return err
}

// The dashboard answers only requests addressed to an IP, localhost or its
// own host, as the REST API does: a DNS-rebinding page (its own name
// resolved to 127.0.0.1) cannot read the live metrics (issue 43 L4).
func TestDashboardRefusesAForeignHost(t *testing.T) {
	d := New(Config{Host: "127.0.0.1", Port: 0, Period: time.Second}, "x.js", func(s string) { t.Log(s) }, View{Render: testRender, Ops: testOps})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Finish(nil) }()
	for host, want := range map[string]int{"": http.StatusOK, "localhost:5665": http.StatusOK, "evil.example:5665": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodGet, d.URL()+"/", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// A browser that connects gets the configuration at once, as k6's
// dashboard sends its own (issue 46), not after a whole period: with an
// hour's period the first event still comes before any window. Fails
// without it: nothing arrives until the first period closes.
func TestEventStreamSendsItsConfigOnConnect(t *testing.T) {
	d := New(Config{Host: "127.0.0.1", Port: 0, Period: time.Hour}, "x.js", func(s string) { t.Log(s) }, View{Render: testRender, Ops: testOps})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	resp, err := http.Get(d.URL() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "event: ") || strings.HasPrefix(l, "data: ") {
				got <- l
			}
		}
	}()
	select {
	case l := <-got:
		d := <-got
		if l != "event: config" || !strings.Contains(d, `"period_s":3600`) || !strings.Contains(d, `"windows":0`) {
			t.Errorf("first event %q %q", l, d)
		}
	case <-time.After(10 * time.Second): // a bound, not a wait: the event is due at once
		t.Fatal("no event within 10 s of connecting (the period is an hour)")
	}
}
