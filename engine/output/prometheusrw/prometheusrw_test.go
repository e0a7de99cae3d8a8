package prometheusrw

import (
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/internal/waitfor"
)

func TestConfigDefaultsAreK6s(t *testing.T) {
	cfg, err := ParseConfig("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerURL != "http://localhost:9090/api/v1/write" || cfg.PushInterval != 5*time.Second || cfg.Timeout != 5*time.Second ||
		len(cfg.TrendStats) != 1 || cfg.TrendStats[0].Suffix != "p99" || cfg.NativeHistograms || cfg.StaleMarkers ||
		cfg.InsecureSkipTLSVerify || cfg.HasBasicAuth {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestConfigFromEnv(t *testing.T) {
	cfg, err := ParseConfig("", map[string]string{
		"K6_PROMETHEUS_RW_SERVER_URL":                "https://prom.example:9443/api/v1/write",
		"K6_PROMETHEUS_RW_PUSH_INTERVAL":             "250ms",
		"K6_PROMETHEUS_RW_TREND_STATS":               "p(95),p(99.9), avg,min,max,med,count,sum,p(95)",
		"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true",
		"K6_PROMETHEUS_RW_HEADERS_X-Scope-OrgID":     "tenant-1",
		"K6_PROMETHEUS_RW_HTTP_HEADERS":              "A:1, B : 2",
		"K6_PROMETHEUS_RW_USERNAME":                  "u",
		"K6_PROMETHEUS_RW_PASSWORD":                  "p",
		"K6_PROMETHEUS_RW_INSECURE_SKIP_TLS_VERIFY":  "1",
		"K6_PROMETHEUS_RW_STALE_MARKERS":             "true",
		"BUZZLOAD_PROMETHEUS_RW_HISTOGRAM_SCHEMA":    "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	var suffixes []string
	for _, s := range cfg.TrendStats {
		suffixes = append(suffixes, s.Suffix)
	}
	if got := strings.Join(suffixes, ","); got != "p95,p999,avg,min,max,med,count,sum" {
		t.Fatalf("trend stat suffixes %s", got)
	}
	if cfg.PushInterval != 250*time.Millisecond || !cfg.NativeHistograms || !cfg.StaleMarkers || !cfg.InsecureSkipTLSVerify ||
		!cfg.HasBasicAuth || cfg.Username != "u" || cfg.Password != "p" || cfg.Schema != 3 ||
		cfg.Headers["X-Scope-OrgID"] != "tenant-1" || cfg.Headers["A"] != "1" || cfg.Headers["B"] != "2" {
		t.Fatalf("config: %+v", cfg)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	for key, val := range map[string]string{
		"K6_PROMETHEUS_RW_SERVER_URL":                "localhost:9090",
		"K6_PROMETHEUS_RW_PUSH_INTERVAL":             "5",
		"K6_PROMETHEUS_RW_TREND_STATS":               "p(101)",
		"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "yes please",
		"K6_PROMETHEUS_RW_STALE_MARKERS":             "maybe",
		"K6_PROMETHEUS_RW_TLS_MINIMUM_VERSION":       "1.0",
		"K6_PROMETHEUS_RW_SIGV4_REGION":              "eu-west-1",
		"BUZZLOAD_PROMETHEUS_RW_HISTOGRAM_SCHEMA":    "9",
	} {
		_, err := ParseConfig("", map[string]string{key: val})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %v does not name the variable", key, val, err)
		}
	}
	if _, err := ParseConfig("url=http://x", nil); err == nil {
		t.Error("an argument was accepted")
	}
	_, err := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_SERVER_URL": "ftp://u:s3cret@host/x"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad URL error %v shows the password", err)
	}
}

// Every value lands in the bucket whose bounds hold it, by the definition
// (2^((k-1)/2^s), 2^(k/2^s)], for fine and coarse schemas.
func TestBucketKeyMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, schema := range []int32{-2, 0, 3, 8} {
		h := newNativeHist(schema)
		for i := 0; i < 20000; i++ {
			v := math.Exp(rng.Float64()*40 - 20)
			k := h.bucketKey(v)
			f := math.Exp2(-float64(schema))
			lo, hi := math.Exp2(float64(k-1)*f), math.Exp2(float64(k)*f)
			if !(v > lo*(1-1e-12) && v <= hi*(1+1e-12)) {
				t.Fatalf("schema %d: %v in bucket %d = (%v, %v]", schema, v, k, lo, hi)
			}
		}
		for _, p := range []float64{1, 2, 4, 0.5, 1024} { // powers of two are upper bounds
			k := h.bucketKey(p)
			if got := math.Exp2(float64(k) * math.Exp2(-float64(schema))); got != p && schema >= 0 {
				t.Fatalf("schema %d: %v has upper bound %v", schema, p, got)
			}
		}
	}
}

// The spans and deltas sent reproduce the bucket counts exactly, with gaps
// short and long, on both sides and in the zero bucket.
func TestHistogramWireRoundTrip(t *testing.T) {
	h := newNativeHist(8)
	want := map[int32]int64{}
	wantNeg := map[int32]int64{}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		v := math.Exp(rng.NormFloat64()*2 - 4)
		if i%7 == 0 {
			v = -v
		}
		if i%50 == 0 {
			v = 0
		}
		h.observe(v)
		switch {
		case v > 0:
			want[h.bucketKey(v)]++
		case v < 0:
			wantNeg[h.bucketKey(-v)]++
		}
	}
	var e encoder
	e.histogram("k6_x_seconds", []label{{"op", "publish"}}, h, 1234)
	got, err := decodeWriteRequest(e.out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].hists) != 1 {
		t.Fatalf("decoded %+v", got)
	}
	d := got[0].hists[0]
	if d.count != h.count || d.zero != h.zero || d.sum != h.sum || d.schema != 8 || d.ts != 1234 || d.zeroThr != zeroThreshold {
		t.Fatalf("histogram header %+v", d)
	}
	if !equalCounts(d.pos, want) || !equalCounts(d.neg, wantNeg) {
		t.Fatalf("buckets differ: %d/%d positive, %d/%d negative", len(d.pos), len(want), len(d.neg), len(wantNeg))
	}
	var n uint64 = d.zero
	for _, c := range d.pos {
		n += uint64(c)
	}
	for _, c := range d.neg {
		n += uint64(c)
	}
	if n != d.count {
		t.Fatalf("buckets hold %d of %d", n, d.count)
	}
}

func equalCounts(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

type fixture struct {
	reg                               *metrics.Registry
	counter, gauge, rate, trend, data *metrics.Metric
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	reg := metrics.NewRegistry()
	mk := func(name string, ty metrics.Type, vt metrics.ValueType) *metrics.Metric {
		m, err := reg.New(name, ty, vt)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return fixture{reg: reg, counter: mk("http_reqs", metrics.Counter, metrics.Default), gauge: mk("vus", metrics.Gauge, metrics.Default),
		rate: mk("checks", metrics.Rate, metrics.Default), trend: mk("http_req_duration", metrics.Trend, metrics.Time),
		data: mk("msg_size", metrics.Trend, metrics.Data)}
}

func bySeries(t *testing.T, r *request) map[string]decodedSeries {
	t.Helper()
	if r == nil {
		return nil
	}
	got, err := decodeWriteRequest(r.body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]decodedSeries{}
	for _, s := range got {
		out[s.key()] = s
	}
	return out
}

func TestSeriesAsK6WritesThem(t *testing.T) {
	f := newFixture(t)
	cfg, _ := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_TREND_STATS": "p(99),avg,count,sum,min,max,med"})
	a := newAggregator(cfg)
	t0 := time.UnixMilli(1_700_000_000_000)
	tags := metrics.NewTagSet(metrics.Tag{Key: "testid", Value: "t1"}, metrics.Tag{Key: "group", Value: ""},
		metrics.Tag{Key: "scenario", Value: "default"}, metrics.Tag{Key: "Zed", Value: "z"}, metrics.Tag{Key: "a-b", Value: "x"})
	var batch []metrics.Sample
	for i := 0; i < 3; i++ {
		batch = append(batch,
			metrics.Sample{Metric: f.counter, Tags: tags, Time: t0.Add(time.Duration(i) * time.Millisecond), Value: 1},
			metrics.Sample{Metric: f.trend, Tags: tags, Time: t0.Add(time.Duration(i) * time.Millisecond), Value: float64(100 * (i + 1))},
			metrics.Sample{Metric: f.rate, Tags: tags, Time: t0, Value: float64(i % 2)},
		)
	}
	batch = append(batch, metrics.Sample{Metric: f.gauge, Tags: tags, Time: t0.Add(1500 * time.Microsecond), Value: 7})
	a.add(batch)
	got := bySeries(t, a.build())
	labels := "{Zed=z,a_b=x,scenario=default,testid=t1}"
	want := map[string]float64{
		"k6_http_reqs_total": 3, "k6_vus": 7, "k6_checks_rate": 1.0 / 3,
		"k6_http_req_duration_p99": 0.298, "k6_http_req_duration_avg": 0.2, "k6_http_req_duration_count": 0.003,
		"k6_http_req_duration_sum": 0.6, "k6_http_req_duration_min": 0.1, "k6_http_req_duration_max": 0.3, "k6_http_req_duration_med": 0.2,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d series: %v", len(got), keys(got))
	}
	for name, v := range want {
		s, ok := got[name+labels]
		if !ok {
			t.Fatalf("no series %s%s in %v", name, labels, keys(got))
		}
		if len(s.samples) != 1 || math.Abs(s.samples[0][0]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, s.samples, v)
		}
	}
	if ts := got["k6_http_reqs_total"+labels].samples[0][1]; ts != float64(t0.UnixMilli()+2) {
		t.Errorf("counter timestamp %v, want the newest sample's ms", ts)
	}
	if ts := got["k6_vus"+labels].samples[0][1]; ts != float64(t0.UnixMilli()+1) {
		t.Errorf("gauge timestamp %v, want truncated to ms", ts)
	}

	// Once accepted, series without new samples are not sent again.
	a.settle(a.build())
	if r := a.build(); r != nil {
		t.Fatalf("unchanged series were sent again: %v", keys(bySeries(t, r)))
	}
}

func keys(m map[string]decodedSeries) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTimestampsNeverGoBackAndFailedPointsAreResent(t *testing.T) {
	f := newFixture(t)
	cfg, _ := ParseConfig("", nil)
	a := newAggregator(cfg)
	t0 := time.UnixMilli(1_700_000_000_000)
	a.add([]metrics.Sample{{Metric: f.counter, Time: t0, Value: 2}})
	r1 := a.build()
	a.settle(r1)
	// A late sample (older than the accepted point) and one in the same ms.
	a.add([]metrics.Sample{{Metric: f.counter, Time: t0.Add(-time.Second), Value: 1}})
	r2 := a.build()
	s := bySeries(t, r2)["k6_http_reqs_total{}"]
	if s.samples[0][0] != 3 || s.samples[0][1] != float64(t0.UnixMilli()+1) {
		t.Fatalf("after a late sample: %v", s.samples)
	}
	// r2 failed (not settled): the next build resends the newest value.
	a.add([]metrics.Sample{{Metric: f.counter, Time: t0.Add(time.Second), Value: 1}})
	s = bySeries(t, a.build())["k6_http_reqs_total{}"]
	if s.samples[0][0] != 4 || s.samples[0][1] != float64(t0.UnixMilli()+1000) {
		t.Fatalf("after a failed push: %v", s.samples)
	}
}

func TestNativeHistogramSeriesNames(t *testing.T) {
	f := newFixture(t)
	cfg, _ := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true"})
	a := newAggregator(cfg)
	t0 := time.UnixMilli(1_700_000_000_000)
	custom, _ := f.reg.New("plain_trend", metrics.Trend, metrics.Default)
	a.add([]metrics.Sample{{Metric: f.trend, Time: t0, Value: 250}, {Metric: f.data, Time: t0, Value: 2048}, {Metric: custom, Time: t0, Value: 3}})
	got := bySeries(t, a.build())
	h := got["k6_http_req_duration_seconds{}"].hists
	if len(h) != 1 || h[0].count != 1 || h[0].sum != 0.25 {
		t.Fatalf("time trend histogram %+v in %v", h, keys(got))
	}
	if h := got["k6_msg_size_bytes{}"].hists; len(h) != 1 || h[0].sum != 2048 {
		t.Fatalf("data trend histogram %+v", h)
	}
	if h := got["k6_plain_trend{}"].hists; len(h) != 1 || h[0].sum != 3 {
		t.Fatalf("default trend histogram %+v", h)
	}
}

func TestSeriesLimitBoundsMemory(t *testing.T) {
	f := newFixture(t)
	cfg, _ := ParseConfig("", map[string]string{"BUZZLOAD_PROMETHEUS_RW_MAX_SERIES": "10"})
	a := newAggregator(cfg)
	for i := 0; i < 25; i++ {
		a.add([]metrics.Sample{{Metric: f.counter, Tags: metrics.NewTagSet(metrics.Tag{Key: "i", Value: string(rune('a' + i))}), Time: time.Now(), Value: 1}})
	}
	if len(a.list) != 10 || a.dropped != 15 {
		t.Fatalf("%d series, %d dropped", len(a.list), a.dropped)
	}
}

// An endpoint that refuses connections costs counted pushes and one
// warning; AddSamples never waits, and Stop reports the total without an
// error (the run's exit code does not change).
func TestDeadEndpointIsCountedNotBlocking(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg, _ := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_SERVER_URL": "http://u:s3cret@" + addr + "/api/v1/write",
		"K6_PROMETHEUS_RW_PUSH_INTERVAL": "20ms"})
	var mu sync.Mutex
	var warnings []string
	o, err := New(cfg, func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	// Samples keep coming while the pushes fail (AddSamples never waits
	// for a push: TestFullInboxDropsAndCounts bounds what it holds).
	waitfor.Until(t, "three failed pushes while samples keep coming", 10*time.Second, func() bool {
		o.AddSamples([]metrics.Sample{{Metric: f.counter, Time: time.Now(), Value: 1}})
		return o.Stats().FailedPushes >= 3
	})
	if err := o.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	st := o.Stats()
	if st.FailedPushes < 3 || st.FailedPushes != st.Pushes || st.PointsLost < st.FailedPushes {
		t.Fatalf("stats %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 2 || !strings.Contains(warnings[0], "push failed") || !strings.Contains(warnings[1], "pushes to") {
		t.Fatalf("want one warning while it lasts and the total, got %q", warnings)
	}
	for _, w := range warnings {
		if strings.Contains(w, "s3cret") {
			t.Fatalf("a warning shows the password: %s", w)
		}
	}
}

// The inbox is bounded: when the aggregator cannot keep up, AddSamples
// drops the batch and counts it instead of waiting or growing.
func TestFullInboxDropsAndCounts(t *testing.T) {
	cfg, _ := ParseConfig("", nil)
	o, err := New(cfg, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	batch := make([]metrics.Sample, 10)
	for i := range batch {
		batch[i] = metrics.Sample{Metric: f.counter, Time: time.Now(), Value: 1}
	}
	// Not started: nothing drains the inbox.
	for i := 0; i < inboxBatches+30; i++ {
		o.AddSamples(batch)
	}
	if got := o.overflow.Load(); got != 30*10 {
		t.Fatalf("%d samples counted as dropped, want 300", got)
	}
	if len(o.inbox) != inboxBatches {
		t.Fatalf("inbox holds %d batches", len(o.inbox))
	}
}

// A receiver that answers too slowly costs pushes that time out; one that
// refuses a request for good (4xx) gets its points dropped, not resent; one
// that fails for now (5xx) gets them again in the next push.
func TestSlowAndRefusingReceivers(t *testing.T) {
	var mu sync.Mutex
	status, delay := http.StatusServiceUnavailable, time.Duration(0)
	var bodies [][]byte
	var orgIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st, d := status, delay
		mu.Unlock()
		if d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		b, _ := io.ReadAll(r.Body)
		dec, err := snappy.Decode(nil, b)
		if err != nil || r.Header.Get("Content-Encoding") != "snappy" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		bodies = append(bodies, dec)
		orgIDs = append(orgIDs, r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
		w.WriteHeader(st)
	}))
	defer srv.Close()
	f := newFixture(t)
	cfg, _ := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_SERVER_URL": srv.URL, "K6_PROMETHEUS_RW_HEADERS_X-Scope-OrgID": "t1"})
	o, _ := New(cfg, func(string) {})
	push := func() pushResult {
		r := o.agg.build()
		if r == nil {
			t.Fatal("nothing to push")
		}
		perm, err := o.push(r)
		res := pushResult{r: r, err: err, permanent: perm}
		o.settle(res)
		return res
	}
	o.agg.add([]metrics.Sample{{Metric: f.counter, Time: time.Now(), Value: 1}})
	if res := push(); res.err == nil || res.permanent {
		t.Fatalf("503: %+v", res)
	}
	if o.agg.build() == nil {
		t.Fatal("points of a 503 were not kept for the next push")
	}
	mu.Lock()
	status = http.StatusBadRequest
	mu.Unlock()
	if res := push(); res.err == nil || !res.permanent {
		t.Fatalf("400: %+v", res)
	}
	if o.agg.build() != nil {
		t.Fatal("points refused with 400 would be sent again")
	}
	mu.Lock()
	status, delay = http.StatusNoContent, time.Second
	mu.Unlock()
	o.cfg.Timeout = 100 * time.Millisecond
	o.client.Timeout = o.cfg.Timeout
	o.agg.add([]metrics.Sample{{Metric: f.counter, Time: time.Now().Add(time.Second), Value: 1}})
	// Without the timeout the push would succeed after the receiver's 1 s:
	// the error is the evidence, no wall clock needed (code review T2).
	res := push()
	if res.err == nil || !strings.Contains(res.err.Error(), "no answer within") {
		t.Fatalf("slow receiver: %v", res.err)
	}
	mu.Lock()
	delay = 0
	mu.Unlock()
	if res := push(); res.err != nil {
		t.Fatalf("recovered receiver: %v", res.err)
	}
	if st := o.stats; st.Pushes != 4 || st.FailedPushes != 3 || st.PointsLost != 3 {
		t.Fatalf("stats %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, id := range orgIDs {
		if id != "t1" {
			t.Fatalf("push %d: X-Scope-OrgID %q (K6_PROMETHEUS_RW_HEADERS_ not sent)", i, id)
		}
	}
	if len(bodies) < 3 {
		t.Fatalf("%d bodies decoded", len(bodies))
	}
}

// A receiver slower than the push interval: intervals are skipped (one
// warning while it lasts, the count in the total), never queued, and the
// final push still carries every value.
func TestSlowReceiverSkipsIntervals(t *testing.T) {
	var mu sync.Mutex
	var last []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond) // the slow receiver's latency (the fake's)
		b, _ := io.ReadAll(r.Body)
		dec, _ := snappy.Decode(nil, b)
		mu.Lock()
		last = dec
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cfg, _ := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_SERVER_URL": srv.URL, "K6_PROMETHEUS_RW_PUSH_INTERVAL": "20ms"})
	var warnings []string
	o, _ := New(cfg, func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() })
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	for i := 0; i < 60; i++ {
		o.AddSamples([]metrics.Sample{{Metric: f.counter, Time: time.Now(), Value: 1}})
		time.Sleep(10 * time.Millisecond) // the run's pace: samples over 600 ms of slow pushes
	}
	if err := o.Stop(); err != nil {
		t.Fatal(err)
	}
	st := o.Stats()
	mu.Lock()
	defer mu.Unlock()
	if st.SkippedIntervals < 5 || st.FailedPushes != 0 {
		t.Fatalf("stats %+v", st)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "takes longer than the 20ms push interval") || !strings.Contains(warnings[1], "intervals skipped") {
		t.Fatalf("warnings %q", warnings)
	}
	got, err := decodeWriteRequest(last)
	if err != nil || len(got) != 1 || got[0].samples[0][0] != 60 {
		t.Fatalf("last push %+v %v, want the counter at 60", got, err)
	}
}

// The credentials and TLS settings reach the wire: basic auth
// (K6_PROMETHEUS_RW_USERNAME/_PASSWORD) and a bearer token on every push, and
// a self-signed endpoint refused unless _INSECURE_SKIP_TLS_VERIFY is set.
func TestCredentialsAndInsecureTLSOnTheWire(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	f := newFixture(t)
	push := func(env map[string]string) error {
		t.Helper()
		env["K6_PROMETHEUS_RW_SERVER_URL"] = srv.URL
		cfg, err := ParseConfig("", env)
		if err != nil {
			t.Fatal(err)
		}
		o, err := New(cfg, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		o.agg.add([]metrics.Sample{{Metric: f.counter, Time: time.Now(), Value: 1}})
		_, err = o.push(o.agg.build())
		return err
	}
	if err := push(map[string]string{"K6_PROMETHEUS_RW_USERNAME": "u"}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a self-signed endpoint without INSECURE_SKIP_TLS_VERIFY: %v, want a certificate error", err)
	}
	if err := push(map[string]string{"K6_PROMETHEUS_RW_INSECURE_SKIP_TLS_VERIFY": "true",
		"K6_PROMETHEUS_RW_USERNAME": "u", "K6_PROMETHEUS_RW_PASSWORD": "p"}); err != nil {
		t.Fatalf("basic auth over skipped verification: %v", err)
	}
	if err := push(map[string]string{"K6_PROMETHEUS_RW_INSECURE_SKIP_TLS_VERIFY": "true", "K6_PROMETHEUS_RW_BEARER_TOKEN": "tok"}); err != nil {
		t.Fatalf("bearer token: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"Basic dTpw", "Bearer tok"} // base64("u:p")
	if len(auths) != 2 || auths[0] != want[0] || auths[1] != want[1] {
		t.Fatalf("Authorization headers %q, want %q", auths, want)
	}
}
