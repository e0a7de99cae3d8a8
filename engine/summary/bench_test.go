package summary

import (
	"fmt"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// BenchmarkSummaryEndOfTest is the end-of-test path: snapshot a collector
// with 20 populated trends, then render the text and the data object.
func BenchmarkSummaryEndOfTest(b *testing.B) {
	reg := metrics.NewRegistry()
	if _, err := reg.RegisterBuiltins(); err != nil {
		b.Fatal(err)
	}
	c := metrics.NewCollector(reg, metrics.CollectorOptions{})
	if err := Register(c, Options{}); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for m := 0; m < 20; m++ {
		mt, _ := reg.New(fmt.Sprintf("x_metric_%02d", m), metrics.Trend, metrics.Time)
		for i := 0; i < 20000; i++ {
			c.Add(metrics.Sample{Metric: mt, Time: now, Value: float64(i%3000) * 1.1})
		}
	}
	chk := reg.Get(metrics.ChecksName)
	for i := 0; i < 1000; i++ {
		c.Add(metrics.Sample{Metric: chk, Tags: metrics.NewTagSet(metrics.Tag{Key: "check", Value: fmt.Sprint("c", i%5)}, metrics.Tag{Key: "group", Value: ""}), Time: now, Value: 1})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in := Input{Snapshot: c.Snapshot(time.Minute)}
		if _, err := Text(in); err != nil {
			b.Fatal(err)
		}
		if _, err := Data(in); err != nil {
			b.Fatal(err)
		}
	}
}
