package prometheusrw

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output/prometheusrw/promserver"
)

// A real Prometheus takes every kind of series the output writes — float
// samples, integer native histograms, stale markers — and answers with the
// values k6 would have written.
func TestRealPrometheusTakesEverySeries(t *testing.T) {
	prom := promserver.Start(t)
	f := newFixture(t)
	run := func(testid string, env map[string]string) Stats {
		env["K6_PROMETHEUS_RW_SERVER_URL"] = prom.WriteURL()
		env["K6_PROMETHEUS_RW_PUSH_INTERVAL"] = "50ms"
		cfg, err := ParseConfig("", env)
		if err != nil {
			t.Fatal(err)
		}
		// Warnings are logged: what they report is in Stats, checked
		// below (a push slower than the 50 ms interval on a loaded machine
		// only skips intervals, whose points go in the next push).
		o, err := New(cfg, func(s string) { t.Logf("warning: %s", s) })
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		tags := metrics.NewTagSet(metrics.Tag{Key: "testid", Value: testid}, metrics.Tag{Key: "group", Value: ""}, metrics.Tag{Key: "op", Value: "publish"})
		start := time.Now()
		for i := 0; i < 200; i++ {
			now := start.Add(time.Duration(i) * time.Millisecond)
			o.AddSamples([]metrics.Sample{
				{Metric: f.counter, Tags: tags, Time: now, Value: 1},
				{Metric: f.gauge, Tags: tags, Time: now, Value: float64(i)},
				{Metric: f.rate, Tags: tags, Time: now, Value: float64(i % 4 / 3)},
				{Metric: f.trend, Tags: tags, Time: now, Value: float64(1 + i)},
			})
			if i%50 == 0 {
				time.Sleep(60 * time.Millisecond) // several pushes, each with newer points
			}
		}
		if err := o.Stop(); err != nil {
			t.Fatal(err)
		}
		if st := o.Stats(); st.SamplesDropped != 0 || st.PointsLost != 0 {
			t.Errorf("%s run lost data: %+v", testid, st)
		}
		return o.Stats()
	}
	st := run("gauges", map[string]string{"K6_PROMETHEUS_RW_TREND_STATS": "p(99),count,max"})
	if st.FailedPushes != 0 || st.Pushes < 3 {
		t.Fatalf("gauges run: %+v; prometheus log: %s", st, prom.Log())
	}
	st = run("native", map[string]string{"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true"})
	if st.FailedPushes != 0 {
		t.Fatalf("native run: %+v; prometheus log: %s", st, prom.Log())
	}

	beforeStale := time.Now()
	st = run("stale", map[string]string{"K6_PROMETHEUS_RW_STALE_MARKERS": "true", "K6_PROMETHEUS_RW_TREND_STATS": "p(99),avg"})
	if st.FailedPushes != 0 {
		t.Fatalf("stale run: %+v; prometheus log: %s", st, prom.Log())
	}

	ctx := context.Background()
	// Stale markers end every series of the run: gone right after it, there
	// while it ran.
	beforeNative := time.Now()
	st = run("stalenative", map[string]string{"K6_PROMETHEUS_RW_STALE_MARKERS": "true", "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true"})
	if st.FailedPushes != 0 {
		t.Fatalf("stale native run: %+v; prometheus log: %s", st, prom.Log())
	}
	at := time.Now().Add(time.Millisecond)
	for _, name := range []string{"k6_http_reqs_total", "k6_vus", "k6_checks_rate", "k6_http_req_duration_p99", "k6_http_req_duration_avg"} {
		sel := name + `{testid="stale"}`
		if res, err := prom.Query(ctx, sel, at.Add(10*time.Millisecond)); err != nil || len(res) != 0 {
			t.Errorf("%s after the run: %v %v (want stale)", sel, res, err)
		}
		if res, err := prom.Query(ctx, sel, beforeStale.Add(150*time.Millisecond)); err != nil || len(res) != 1 {
			t.Errorf("%s during the run: %v %v", sel, res, err)
		}
	}
	sel := `k6_http_req_duration_seconds{testid="stalenative"}`
	if res, err := prom.Query(ctx, sel, time.Now().Add(10*time.Millisecond)); err != nil || len(res) != 0 {
		t.Errorf("%s after the run: %v %v (want stale)", sel, res, err)
	}
	if res, err := prom.Query(ctx, sel, beforeNative.Add(150*time.Millisecond)); err != nil || len(res) != 1 || !res[0].Histogram {
		t.Errorf("%s during the run: %v %v", sel, res, err)
	}
	one := func(expr string) float64 {
		t.Helper()
		res, err := prom.Query(ctx, expr, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 {
			t.Fatalf("%s: %d results %+v", expr, len(res), res)
		}
		return res[0].Value
	}
	for expr, want := range map[string]float64{
		`k6_http_reqs_total{testid="gauges",op="publish"}`:                                        200,
		`k6_vus{testid="gauges"}`:                                                                 199,
		`k6_checks_rate{testid="gauges"}`:                                                         0.25,
		`k6_http_req_duration_max{testid="gauges"}`:                                               0.2,
		`k6_http_req_duration_count{testid="gauges"}`:                                             0.2, // k6's count/1000
		`k6_http_req_duration_p99{testid="gauges"}`:                                               0.19801,
		`histogram_count(k6_http_req_duration_seconds{testid="native"})`:                          200,
		`histogram_sum(k6_http_req_duration_seconds{testid="native"})`:                            20.1,
		`histogram_quantile(0.5, k6_http_req_duration_seconds{testid="native"})`:                  0.100, // rank q·count: the 100th value, within its bucket
		`count({__name__=~"k6_.+", testid="gauges", group!=""})`:                                  0,
		`count(k6_http_reqs_total{testid="gauges"}) + count(k6_http_reqs_total{testid="native"})`: 2,
	} {
		got := one("sum(" + expr + ") or vector(0)")
		if math.Abs(got-want) > 0.003*math.Abs(want)+1e-9 {
			t.Errorf("%s = %v, want %v", expr, got, want)
		}
	}
}
