package extension

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

type nopMetrics struct{ reg *metrics.Registry }

func (n nopMetrics) Registry() *metrics.Registry { return n.reg }
func (n nopMetrics) Push(...metrics.Sample)      {}

// bufMetrics pushes into a VU's own collector buffer, as engine/jshost's VU.
type bufMetrics struct {
	reg *metrics.Registry
	buf *metrics.Buffer
}

func (m bufMetrics) Registry() *metrics.Registry    { return m.reg }
func (m bufMetrics) Push(samples ...metrics.Sample) { m.buf.AddAll(samples) }

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

// BenchmarkSinkRecordDeliver is the delivery path's record as a wide
// channel makes it: thousands of clients' sinks, each with its own sample
// buffer into a real Collector that tracks and windows the scenario's
// thresholds (as the runner does) and is flushed every 50 ms, recorded by
// many goroutines at once (the connections' readers). ns/op is wall time
// per record with every core busy; cpu-ns/op the process's CPU per record
// (the ingest into the collector included, the Results' making not).
func BenchmarkSinkRecordDeliver(b *testing.B) {
	for _, c := range []struct {
		name  string
		sinks int
	}{{"1sink", 1}, {"5000sinks", 5000}} {
		b.Run(c.name, func(b *testing.B) { benchSinkDeliver(b, c.sinks) })
	}
}

func benchSinkDeliver(b *testing.B, nSinks int) {
	sc, err := scenario.Parse("b.toml", []byte(optsTOML))
	if err != nil {
		b.Fatal(err)
	}
	m := New(Options{})
	reg := metrics.NewRegistry()
	if _, err := reg.RegisterBuiltins(); err != nil {
		b.Fatal(err)
	}
	met, err := m.metrics(reg)
	if err != nil {
		b.Fatal(err)
	}
	coll := metrics.NewCollector(reg, metrics.CollectorOptions{BatchSize: 64})
	opts, _ := k6options.Build(sc, scenario.Shard{})
	var wins []*metrics.Window
	for key, specs := range opts.Thresholds {
		if err := coll.Track(key); err != nil {
			b.Fatal(err)
		}
		for _, sp := range specs {
			if sp.Window != "" {
				w, err := coll.AddWindow(key)
				if err != nil {
					b.Fatal(err)
				}
				wins = append(wins, w)
				break
			}
		}
	}
	l := newLoaded(m, sc, scenario.Shard{})
	start := time.Now()
	coll.StartWindows(wins, start.Add(-time.Second))
	sinks := make([]*opSink, nSinks)
	bufs := make([]*metrics.Buffer, nSinks)
	base := metrics.TagsFromMap(map[string]string{"scenario": "humans"})
	for i := range sinks {
		bufs[i] = coll.NewBuffer()
		sinks[i] = newOpSink(l, int(scenario.KindHuman), met, fakeVU{met: bufMetrics{reg, bufs[i]}}, base, start)
	}
	stop := make(chan struct{})
	var flushed sync.WaitGroup
	flushed.Add(1)
	go func() {
		defer flushed.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				coll.Flush()
			}
		}
	}()
	var next atomic.Int64
	b.SetParallelism(16) // many more goroutines than cores, as the readers
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := rusageCPU()
	b.RunParallel(func(pb *testing.PB) {
		g := int(next.Add(1))
		i := 0
		for pb.Next() {
			// A delivery: sent 2 ms before it arrived, 0.1 s into the run.
			at := start.Add(100*time.Millisecond + time.Duration(i)*time.Microsecond)
			sinks[(g+i*64)%nSinks].Record(relayclient.Result{Op: models.OpDeliver, Start: at.Add(-2 * time.Millisecond),
				Duration: 2 * time.Millisecond, Outcome: relayclient.OutcomeOK})
			i++
		}
	})
	coll.Flush()
	cpu := rusageCPU() - cpu0
	b.StopTimer()
	close(stop)
	flushed.Wait()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if got := l.BuildReport(nil).Steps[0].Ops[models.OpDeliver]; got == nil || got.OK != int64(b.N) {
		b.Fatalf("aggregated %+v deliveries, recorded %d", got, b.N)
	}
}

// rusageCPU is the process's user and system CPU time so far.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
