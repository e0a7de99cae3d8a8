package cloud

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/golang/snappy"

	"github.com/buzzload/buzzload/engine/metrics"
)

// benchBatch is one collector batch of a Buzz run: an op-duration Trend,
// an op-failed Rate and a Counter across 40 ops × 2 communities.
func benchBatch(b testing.TB, at time.Time) []metrics.Sample {
	reg := metrics.NewRegistry()
	mk := func(name string, t metrics.Type) *metrics.Metric {
		m, err := reg.New(name, t, metrics.Default)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	dur, failed, ops := mk("x_op_duration", metrics.Trend), mk("x_op_failed", metrics.Rate), mk("x_ops", metrics.Counter)
	var out []metrics.Sample
	for i := 0; len(out) < 510; i++ {
		tags := metrics.NewTagSet(metrics.Tag{Key: "op", Value: fmt.Sprint("op", i%40)},
			metrics.Tag{Key: "community", Value: fmt.Sprint("c", i%2)}, metrics.Tag{Key: "scenario", Value: "humans"})
		out = append(out, metrics.Sample{Metric: dur, Tags: tags, Time: at, Value: float64(1 + i%700)},
			metrics.Sample{Metric: failed, Tags: tags, Time: at}, metrics.Sample{Metric: ops, Tags: tags, Time: at, Value: 1})
	}
	return out
}

// BenchmarkCloudAggregate is the output's cost per sample on its own
// goroutine (sorting into periods and series, the HDR bucket); ns/sample
// × samples per second is its share of a core.
func BenchmarkCloudAggregate(b *testing.B) {
	batch := benchBatch(b, time.Now())
	a := newAggregator(3*time.Second, 8*time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.add(batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/sample")
}

// BenchmarkCloudRun is the whole output through 4 million tagged samples
// in 3 s periods against a discarding server on loopback: AddSamples,
// aggregation, encoding, snappy and the pushes. cpu-ns/sample is the
// process CPU (user+system) it added; a run that makes those samples costs
// far more per sample (docs/benchmarks.md).
func BenchmarkCloudRun(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/tests" {
			_, _ = io.WriteString(w, `{"reference_id":"1"}`)
		}
	}))
	defer srv.Close()
	const total = 4_000_000
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		cfg, err := ParseConfig(Inputs{ScriptPath: "b.js", Env: map[string]string{"K6_CLOUD_HOST": srv.URL,
			"K6_CLOUD_AGGREGATION_PERIOD": "1s", "K6_CLOUD_AGGREGATION_WAIT_PERIOD": "1s", "K6_CLOUD_METRIC_PUSH_INTERVAL": "100ms"}})
		if err != nil {
			b.Fatal(err)
		}
		o, err := New(Params{Config: cfg, Duration: time.Hour, Warn: func(s string) { b.Log(s) }})
		if err != nil {
			b.Fatal(err)
		}
		_ = o.Start()
		cpu0 := cpuTime()
		// 4M samples over 20 periods of sample time.
		var batches [20][]metrics.Sample
		batches[0] = benchBatch(b, t0)
		for p := 1; p < len(batches); p++ {
			batches[p] = retime(batches[0], t0.Add(time.Duration(p)*time.Second))
		}
		perPeriod := total / len(batches)
		sent := 0
		for sent < total {
			batch := batches[min(sent/perPeriod, len(batches)-1)]
			o.AddSamples(batch)
			sent += len(batch)
		}
		_ = o.Stop()
		cpu := cpuTime() - cpu0
		st := o.Stats()
		if st.SamplesDropped > 0 || st.FailedPushes > 0 {
			b.Fatalf("stats %+v", st)
		}
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(sent), "cpu-ns/sample")
		b.ReportMetric(float64(st.Pushes), "pushes")
	}
}

// BenchmarkCloudHour feeds an hour of 3 s periods (1,200; 4,590 samples
// each, 240 series) through aggregation and encoding, then another hour:
// the heap after hour 1 and hour 2 shows the output's memory flat.
func BenchmarkCloudHour(b *testing.B) {
	for i := 0; i < b.N; i++ {
		t0 := time.Unix(1_800_000_000, 0)
		a := newAggregator(3*time.Second, 8*time.Second)
		var bytes int
		base := benchBatch(b, t0)
		feed := func(from, to int) {
			for p := from; p < to; p++ {
				at := t0.Add(time.Duration(p) * 3 * time.Second)
				batch := retime(base, at)
				for k := 0; k < 9; k++ {
					a.add(batch)
				}
				for _, ms := range batches(a.expired(at, false), 1000) {
					bytes += len(snappy.Encode(nil, ms.encode("1", 3)))
				}
			}
		}
		feed(0, 1200)
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		feed(1200, 2400)
		runtime.GC()
		var m2 runtime.MemStats
		runtime.ReadMemStats(&m2)
		b.ReportMetric(float64(m1.HeapAlloc)/1024, "heap-1h-KB")
		b.ReportMetric(float64(m2.HeapAlloc)/1024, "heap-2h-KB")
		b.ReportMetric(float64(bytes)/2400, "bytes/period")
		runtime.KeepAlive(a)
	}
}

// retime is a copy of batch at another time (same metrics and tag sets:
// the same series).
func retime(batch []metrics.Sample, at time.Time) []metrics.Sample {
	out := append([]metrics.Sample(nil), batch...)
	for i := range out {
		out[i].Time = at
	}
	return out
}
