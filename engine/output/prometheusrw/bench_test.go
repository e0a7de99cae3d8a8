package prometheusrw

import (
	"fmt"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// What the output costs the run: AddSamples is on the producers' path (a
// copy and a channel send per batch); aggregation and encoding run on the
// output's own goroutine.

func benchBatch(b *testing.B, series int) []metrics.Sample {
	reg := metrics.NewRegistry()
	m, _ := reg.New("x_op_duration", metrics.Trend, metrics.Time)
	batch := make([]metrics.Sample, 512)
	now := time.Now()
	for i := range batch {
		tags := metrics.NewTagSet(metrics.Tag{Key: "op", Value: fmt.Sprint("op", i%series)}, metrics.Tag{Key: "testid", Value: "b"})
		batch[i] = metrics.Sample{Metric: m, Tags: tags, Time: now.Add(time.Duration(i) * time.Millisecond), Value: float64(1 + i%300)}
	}
	return batch
}

func BenchmarkAddSamples(b *testing.B) {
	cfg, _ := ParseConfig("", nil)
	o, _ := New(cfg, func(string) {})
	batch := benchBatch(b, 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o.AddSamples(batch)
		select {
		case buf := <-o.inbox: // what the aggregator does after adding it
			o.pool.Put(buf)
		default:
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/sample")
}

func BenchmarkAggregate(b *testing.B) {
	for _, native := range []string{"false", "true"} {
		b.Run("native="+native, func(b *testing.B) {
			cfg, _ := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": native})
			a := newAggregator(cfg)
			batch := benchBatch(b, 20)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a.add(batch)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/sample")
		})
	}
}

// BenchmarkBuild encodes one push of 1000 changed Trend series.
func BenchmarkBuild(b *testing.B) {
	for _, native := range []string{"false", "true"} {
		b.Run("native="+native, func(b *testing.B) {
			cfg, _ := ParseConfig("", map[string]string{"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": native})
			a := newAggregator(cfg)
			for k := 0; k < 2; k++ {
				a.add(benchBatch(b, 512))
			}
			var size int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, s := range a.list {
					s.ver++
				}
				r := a.build()
				size = len(r.body)
			}
			b.ReportMetric(float64(size), "bytes/push")
		})
	}
}
