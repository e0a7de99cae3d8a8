package metrics

import (
	"fmt"
	"testing"
	"time"
)

func benchCollector(b *testing.B, subs int) (*Collector, *Metric, []TagSet) {
	reg := NewRegistry()
	dur, _ := reg.New("x_op_duration", Trend, Time)
	c := NewCollector(reg, CollectorOptions{})
	ops := []string{"connect", "auth", "publish", "subscribe_eose", "history", "deliver"}
	for i := 0; i < subs; i++ {
		if err := c.Track(fmt.Sprintf("x_op_duration{op:%s}", ops[i%len(ops)]+fmt.Sprint(i/len(ops)))); err != nil {
			b.Fatal(err)
		}
	}
	var tags []TagSet
	for i, op := range ops {
		tags = append(tags, NewTagSet(Tag{"op", op}, Tag{"scenario", "default"}, Tag{"step", fmt.Sprint(i % 3)}))
	}
	return c, dur, tags
}

// BenchmarkRecordBuffer is one producer recording through its own Buffer
// (the aggregation of full batches is included, amortised).
func BenchmarkRecordBuffer(b *testing.B) {
	c, dur, tags := benchCollector(b, 0)
	buf := c.NewBuffer()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Add(Sample{Metric: dur, Tags: tags[i%len(tags)], Time: now, Value: float64(i%5000) * 0.37})
	}
	buf.Flush()
}

// BenchmarkRecordBufferParallel is many producers, each with its own Buffer.
func BenchmarkRecordBufferParallel(b *testing.B) {
	c, dur, tags := benchCollector(b, 0)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := c.NewBuffer()
		defer buf.Close()
		i := 0
		for pb.Next() {
			buf.Add(Sample{Metric: dur, Tags: tags[i%len(tags)], Time: now, Value: float64(i%5000) * 0.37})
			i++
		}
	})
}

// BenchmarkRecordSharedParallel is many goroutines recording through
// Collector.Add (no buffer of their own).
func BenchmarkRecordSharedParallel(b *testing.B) {
	c, dur, tags := benchCollector(b, 0)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Add(Sample{Metric: dur, Tags: tags[i%len(tags)], Time: now, Value: float64(i%5000) * 0.37})
			i++
		}
	})
}

// BenchmarkRecordWithSubmetricsAndGroups records into a metric with 12
// sub-metrics and an (op, step) grouping, so every sample is routed.
func BenchmarkRecordWithSubmetricsAndGroups(b *testing.B) {
	c, dur, tags := benchCollector(b, 12)
	if err := c.AddGroup("x_op_duration", "op", "step"); err != nil {
		b.Fatal(err)
	}
	buf := c.NewBuffer()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf.Add(Sample{Metric: dur, Tags: tags[i%len(tags)], Time: now, Value: float64(i%5000) * 0.37})
	}
	buf.Flush()
}

// BenchmarkSubmetricMatchUncached is the selector match itself (what a cache
// miss costs per sub-metric).
func BenchmarkSubmetricMatchUncached(b *testing.B) {
	sel, _ := ParseSelector("http_req_duration{status:200,method:GET}")
	tags := NewTagSet(Tag{"status", "200"}, Tag{"method", "GET"}, Tag{"url", "http://x"}, Tag{"name", "x"}, Tag{"group", ""})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !sel.Matches(tags) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkSnapshot copies a collector with 20 metrics, 12 sub-metrics and
// 60 grouped rows of populated trends.
func BenchmarkSnapshot(b *testing.B) {
	c, dur, tags := benchCollector(b, 12)
	_ = c.AddGroup("x_op_duration", "op", "step")
	for m := 0; m < 20; m++ {
		mt, _ := c.Registry().New(fmt.Sprintf("metric_%d", m), Trend, Time)
		for i := 0; i < 20000; i++ {
			c.Add(Sample{Metric: mt, Time: time.Now(), Value: float64(i%3000) * 1.1})
		}
	}
	for i := 0; i < 100000; i++ {
		step := fmt.Sprint(i % 10)
		c.Add(Sample{Metric: dur, Tags: tags[i%len(tags)].With("step", step), Time: time.Now(), Value: float64(i%7000) * 0.7})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = c.Snapshot(time.Minute)
	}
}
