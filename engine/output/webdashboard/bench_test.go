package webdashboard

import (
	"runtime"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// benchSamples is one batch as a Buzz run's collector hands it over: a
// trend, a rate and a counter per op (20 ops), the k6 built-ins.
func benchSamples(b *testing.B) []metrics.Sample {
	r := metrics.NewRegistry()
	mk := func(name string, typ metrics.Type) *metrics.Metric {
		m, err := r.New(name, typ, metrics.Default)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	dur, failed, iters, vus := mk(opDuration, metrics.Trend), mk(opFailed, metrics.Rate), mk("iterations", metrics.Counter), mk("vus", metrics.Gauge)
	var ss []metrics.Sample
	for i := 0; i < 20; i++ {
		op := metrics.NewTagSet(metrics.Tag{Key: "op", Value: "op" + string(rune('a'+i))})
		for j := 0; j < 20; j++ {
			v := float64((i*37+j*11)%500) + 0.5
			ss = append(ss, metrics.Sample{Metric: dur, Tags: op, Value: v}, metrics.Sample{Metric: failed, Tags: op, Value: 0},
				metrics.Sample{Metric: iters, Value: 1})
		}
	}
	return append(ss, metrics.Sample{Metric: vus, Value: 100})
}

// BenchmarkDashboardAddSamples is the dashboard's cost per sample (the
// collector's goroutine pays it): ns/sample × samples per second is the
// share of a core (issue 29: at most 5 % CPU).
func BenchmarkDashboardAddSamples(b *testing.B) {
	ss := benchSamples(b)
	g := newAggregator(time.Now(), testOps)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.add(ss)
		if i%100 == 99 {
			g.close(time.Now())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/sample")
}

// BenchmarkDashboardHour feeds 1 hour of 10 s periods (360, 12,000
// samples each) and then 11 more hours: the heap after hour 1 and hour 12
// shows the dashboard's memory flat (issue 29).
func BenchmarkDashboardHour(b *testing.B) {
	ss := benchSamples(b)
	for i := 0; i < b.N; i++ {
		t0 := time.Unix(1_700_000_000, 0)
		g := newAggregator(t0, testOps)
		feed := func(from, to int) {
			for p := from; p < to; p++ {
				for k := 0; k < 10; k++ {
					g.add(ss)
				}
				g.close(t0.Add(time.Duration(p+1) * 10 * time.Second))
			}
		}
		feed(0, 360)
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		feed(360, 12*360)
		runtime.GC()
		var m12 runtime.MemStats
		runtime.ReadMemStats(&m12)
		b.ReportMetric(float64(m1.HeapAlloc)/1024, "heap-1h-KB")
		b.ReportMetric(float64(m12.HeapAlloc)/1024, "heap-12h-KB")
		b.ReportMetric(float64(len(g.windows())), "windows")
		runtime.KeepAlive(g)
	}
}
