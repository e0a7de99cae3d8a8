package extension

import (
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

type nopMetrics struct{ reg *metrics.Registry }

func (n nopMetrics) Registry() *metrics.Registry { return n.reg }
func (n nopMetrics) Push(...metrics.Sample)      {}

// BenchmarkSinkRecord is the cost of one operation's Result on its way to
// the samples and the report (the samples' own ingest is the runner's).
func BenchmarkSinkRecord(b *testing.B) { benchSinkRecord(b, 0) }

// BenchmarkSinkRecordScheduled: the same with Result.Due set (issue 14: the
// due-time latency and the lag cost two HDR adds, no allocation).
func BenchmarkSinkRecordScheduled(b *testing.B) { benchSinkRecord(b, 3*time.Millisecond) }

func benchSinkRecord(b *testing.B, lag time.Duration) {
	sc, err := scenario.Parse("b.toml", []byte(optsTOML))
	if err != nil {
		b.Fatal(err)
	}
	m := New(Options{})
	reg := metrics.NewRegistry()
	met, err := m.metrics(reg)
	if err != nil {
		b.Fatal(err)
	}
	l := newLoaded(m, sc, scenario.Shard{})
	start := time.Now()
	ops := []string{"publish", "deliver", "subscribe_eose", "http_query"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s := newOpSink(l, int(scenario.KindHuman), met, fakeVU{met: nopMetrics{reg}}, metrics.TagsFromMap(map[string]string{"scenario": "humans"}), start)
		i := 0
		for pb.Next() {
			now := time.Now()
			r := relayclient.Result{Op: ops[i%len(ops)], Start: now, Duration: time.Duration(i%1000) * time.Microsecond, Outcome: relayclient.OutcomeOK}
			if lag > 0 {
				r.Due = now.Add(-lag)
			}
			s.Record(r)
			i++
		}
	})
}
