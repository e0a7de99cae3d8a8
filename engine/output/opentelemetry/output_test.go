package opentelemetry

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/output/opentelemetry/otlptest"
)

// OTEL_RESOURCE_ATTRIBUTES is read once per process by the SDK's default
// resource (as in k6): set before any test builds one.
func TestMain(m *testing.M) {
	os.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=loadtest,team=buzz")
	os.Exit(m.Run())
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) log(level, msg string, fields ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+msg+" "+strings.Join(fields, " "))
}

func (l *logLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			out = append(out, x)
		}
	}
	return out
}

func httpConfig(t *testing.T, addr string, extra ...string) Config {
	t.Helper()
	env := map[string]string{"K6_OTEL_EXPORTER_PROTOCOL": "http/protobuf", "K6_OTEL_HTTP_EXPORTER_INSECURE": "true",
		"K6_OTEL_HTTP_EXPORTER_ENDPOINT": addr, "K6_OTEL_EXPORT_INTERVAL": "50ms", "K6_OTEL_FLUSH_INTERVAL": "20ms"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	cfg, err := ParseConfig(env, "9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitExports waits (bounded) until the receiver holds at least n exports.
func waitExports(t *testing.T, r *otlptest.Receiver, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for len(r.Exports()) < n {
		select {
		case <-r.Seen():
		case <-deadline:
			t.Fatalf("only %d of %d exports arrived", len(r.Exports()), n)
		}
	}
}

var (
	reg        = metrics.NewRegistry()
	testCount  = mustMetric(reg, "t_count", metrics.Counter, metrics.Default)
	testRate   = mustMetric(reg, "t_rate", metrics.Rate, metrics.Default)
	testTrend  = mustMetric(reg, "t_trend", metrics.Trend, metrics.Time)
	testGauge  = mustMetric(reg, "t_bytes", metrics.Gauge, metrics.Data)
	testSample = func(m *metrics.Metric, v float64, tags ...string) metrics.Sample {
		mt := map[string]string{}
		for i := 0; i+1 < len(tags); i += 2 {
			mt[tags[i]] = tags[i+1]
		}
		return metrics.Sample{Metric: m, Tags: metrics.TagsFromMap(mt), Time: time.Now(), Value: v}
	}
)

func mustMetric(r *metrics.Registry, name string, typ metrics.Type, vt metrics.ValueType) *metrics.Metric {
	m, err := r.New(name, typ, vt)
	if err != nil {
		panic(err)
	}
	return m
}

// A backend that fails while the run goes on is one warning when exports
// start failing and one when they work again, not a line per period; the
// exports keep coming every interval and the counts say how many failed.
func TestFailingExportsWarnOnceAndRecover(t *testing.T) {
	r, err := otlptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Fail(true)
	var l logLines
	o := New(httpConfig(t, r.Addr), l.log)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	o.AddSamples([]metrics.Sample{testSample(testCount, 1)})
	waitExports(t, r, 4)
	r.Fail(false)
	n := len(r.Exports())
	waitExports(t, r, n+2)
	if err := o.Stop(); err != nil {
		t.Fatal(err)
	}
	if w := l.matching("failed to upload metrics: failed to send metrics to http://" + r.Addr + "/v1/metrics: 500 Internal Server Error"); len(w) != 1 {
		t.Errorf("want one warning while failing, got %q (all: %q)", w, l.lines)
	}
	if w := l.matching("OpenTelemetry exports work again after"); len(w) != 1 {
		t.Errorf("want one recovery line, got %q", l.lines)
	}
	if e := l.matching("error "); len(e) != 0 {
		t.Errorf("the final export worked, yet: %q", e)
	}
	c := o.Counts()
	if c["failed_exports"] < 3 || c["exports"] < c["failed_exports"]+2 {
		t.Errorf("counts %v", c)
	}
}

// The instruments, units and attributes of each metric type (k6 v2.2's
// mapping), the resource with OTEL_RESOURCE_ATTRIBUTES, and the SDK's
// temporality preference honoured as k6's SDK honours it.
func TestInstrumentsAttributesAndTheSDKsSettings(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
	r, err := otlptest.StartGRPC()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg, err := ParseConfig(map[string]string{"K6_OTEL_GRPC_EXPORTER_INSECURE": "true", "K6_OTEL_GRPC_EXPORTER_ENDPOINT": r.Addr,
		"OTEL_SERVICE_NAME": "from-otel", "K6_OTEL_EXPORT_INTERVAL": "1h"}, "9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	o := New(cfg, nil)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	o.AddSamples([]metrics.Sample{
		testSample(testCount, 2, "scenario", "s", "empty", ""),
		testSample(testCount, 3, "scenario", "s", "empty", ""),
		testSample(testRate, 1, "scenario", "s"),
		testSample(testRate, 0, "scenario", "s"),
		// a tag named condition gives way to the Rate's own, as in k6
		testSample(testRate, 5, "scenario", "s", "condition", "mine"),
		testSample(testTrend, 12.5),
		testSample(testTrend, 7500.5),
		testSample(testGauge, 4, "scenario", "s"),
		testSample(testGauge, 9, "scenario", "s"),
	})
	if err := o.Stop(); err != nil {
		t.Fatal(err)
	}
	ex := r.Exports()
	if len(ex) != 1 {
		t.Fatalf("%d exports, want the final one", len(ex))
	}
	got := strings.Join(otlptest.Lines(ex[0].Request, func(string) bool { return true }), "\n")
	delta := metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA.String()
	want := strings.Join([]string{
		"t_bytes unit=By gauge {scenario=s} double=9",
		"t_count unit= sum " + delta + " monotonic=true {scenario=s} double=5",
		"t_rate.total unit= sum " + delta + " monotonic=true {condition=nonzero,scenario=s} int=2",
		"t_rate.total unit= sum " + delta + " monotonic=true {condition=zero,scenario=s} int=1",
		"t_trend unit=ms histogram " + delta + " {} bounds=[0 5 10 25 50 75 100 250 500 750 1000 2500 5000 7500 10000] count=2 sum=7513 min=12.5 max=7500.5 buckets=[0 0 0 1 0 0 0 0 0 0 0 0 0 0 1 0]",
	}, "\n")
	if got != want {
		t.Errorf("export:\n%s\nwant:\n%s", got, want)
	}
	res, scopes := otlptest.Resource(ex[0].Request)
	if res["service.name"] != "from-otel" || res["service.version"] != "9.9.9" || res["deployment.environment"] != "loadtest" || res["team"] != "buzz" ||
		fmt.Sprint(scopes) != "[k6]" {
		t.Errorf("resource %v scopes %v", res, scopes)
	}
}

func TestConfigDefaultsPrecedenceAndDescription(t *testing.T) {
	cfg, err := ParseConfig(map[string]string{}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServiceName != "k6" || cfg.ServiceVersion != "1.2.3" || cfg.Protocol != "grpc" || cfg.ExportInterval != 10*time.Second ||
		cfg.FlushInterval != time.Second || cfg.String() != "grpc, localhost:4317" {
		t.Errorf("defaults: %+v %q", cfg, cfg.String())
	}
	cfg, _ = ParseConfig(map[string]string{"OTEL_SERVICE_NAME": "a", "K6_OTEL_SERVICE_NAME": "b", "K6_OTEL_GRPC_EXPORTER_INSECURE": "true",
		"K6_OTEL_GRPC_EXPORTER_ENDPOINT": "127.0.0.1:1", "K6_OTEL_EXPORT_INTERVAL": "1500"}, "v")
	if cfg.ServiceName != "b" || cfg.String() != "grpc (insecure), 127.0.0.1:1" || cfg.ExportInterval != 1500*time.Millisecond {
		t.Errorf("precedence: %+v %q", cfg, cfg.String())
	}
	cfg, _ = ParseConfig(map[string]string{"K6_OTEL_EXPORTER_PROTOCOL": "http/protobuf"}, "v")
	if cfg.String() != "http/protobuf, https://localhost:4318/v1/metrics" {
		t.Errorf("http description %q", cfg.String())
	}
	if _, err := ParseConfig(map[string]string{"K6_OTEL_FLUSH_INTERVAL": "0s"}, "v"); err == nil || !strings.Contains(err.Error(), "K6_OTEL_FLUSH_INTERVAL must be positive") {
		t.Errorf("zero flush interval: %v", err)
	}
}

// K6_OTEL_TLS_CERTIFICATE is the root the exporter trusts: with it an HTTPS
// receiver gets the export; without it (the system roots) the export fails
// on the unknown authority, and the run's Stop still returns.
func TestTLSCertificateIsTheTrustedRoot(t *testing.T) {
	r, certPEM, err := otlptest.StartHTTPS()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cert := t.TempDir() + "/root.pem"
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, trusted := range []bool{true, false} {
		env := map[string]string{"K6_OTEL_EXPORTER_PROTOCOL": "http/protobuf", "K6_OTEL_HTTP_EXPORTER_ENDPOINT": r.Addr,
			"K6_OTEL_EXPORT_INTERVAL": "1h"}
		if trusted {
			env["K6_OTEL_TLS_CERTIFICATE"] = cert
		}
		cfg, err := ParseConfig(env, "v")
		if err != nil {
			t.Fatal(err)
		}
		var l logLines
		o := New(cfg, l.log)
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		before := len(r.Exports())
		o.AddSamples([]metrics.Sample{testSample(testCount, 1)})
		if err := o.Stop(); err != nil {
			t.Fatal(err)
		}
		got := len(r.Exports()) - before
		failed := l.matching("certificate signed by unknown authority")
		if trusted && (got != 1 || len(failed) != 0) || !trusted && (got != 0 || len(failed) != 1) {
			t.Errorf("trusted=%v: %d exports arrived, log %q", trusted, got, l.lines)
		}
	}
}
