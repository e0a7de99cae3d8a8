package jshost

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// pushFixture is a collector as the runner makes it (batches of 64, a
// threshold's sub-metric so samples are routed, flushed every 50 ms) and
// VUs of a small script pushing into it.
type pushFixture struct {
	coll   *metrics.Collector
	vus    []*VU
	dur    *metrics.Metric
	fail   *metrics.Metric
	tags   metrics.TagSet
	stop   func()
	count  atomic.Int64 // samples the consumer saw
	shared bool         // push with PushShared
}

func (f *pushFixture) AddSamples(s []metrics.Sample) { f.count.Add(int64(len(s))) }

func newPushFixture(tb testing.TB, nVUs int) *pushFixture {
	tb.Helper()
	reg := metrics.NewRegistry()
	if _, err := reg.RegisterBuiltins(); err != nil {
		tb.Fatal(err)
	}
	f := &pushFixture{coll: metrics.NewCollector(reg, metrics.CollectorOptions{BatchSize: 64})}
	var err error
	if f.dur, err = reg.New("op_duration", metrics.Trend, metrics.Time); err != nil {
		tb.Fatal(err)
	}
	if f.fail, err = reg.New("op_failed", metrics.Rate, metrics.Default); err != nil {
		tb.Fatal(err)
	}
	if err := f.coll.Track("op_duration{op:deliver}"); err != nil {
		tb.Fatal(err)
	}
	f.coll.AddConsumer(f)
	f.tags = metrics.TagsFromMap(map[string]string{"op": "deliver", "scenario": "humans", "step": "1"})
	h := &harness{dir: writeFilesB(tb, map[string]string{"main.js": `export default function () {}`}),
		metrics: &memMetrics{c: f.coll}, log: &syncBuf{}, control: &StandaloneControl{}}
	bundle, err := NewBundle(context.Background(), h.config("main.js"))
	if err != nil {
		tb.Fatal(err)
	}
	for i := range nVUs {
		vu, err := bundle.NewVU(context.Background(), uint64(i+1), uint64(i+1))
		if err != nil {
			tb.Fatal(err)
		}
		f.vus = append(f.vus, vu)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.coll.Run(ctx, 50*time.Millisecond) }()
	f.stop = func() { cancel(); wg.Wait() }
	return f
}

// push is one delivered event's samples, as extension's opSink pushes them
// (into the VU's buffer, or with shared set the bundle's: VU.PushShared).
func (f *pushFixture) push(vu *VU, now time.Time) {
	p := vu.Push
	if f.shared {
		p = vu.PushShared
	}
	p(
		metrics.Sample{Metric: f.dur, Tags: f.tags, Time: now, Value: 1.5},
		metrics.Sample{Metric: f.fail, Tags: f.tags, Time: now, Value: 0},
	)
}

// BenchmarkVUPush is the delivery path's VU.Push: one delivered event's two
// samples per op, from connection reader goroutines (GOMAXPROCS of them),
// into one VU (a VU whose clients share it) or each into its own VU;
// cpu-ns/op is the process's CPU per push (the collector's ingest and
// flushes included).
func BenchmarkVUPush(b *testing.B) {
	spread := func(g, i, n int) int { return (g + i*64) % n }
	for _, c := range []struct {
		name string
		vus  int
		pick func(g, i, n int) int // the VU of goroutine g's i-th push
	}{
		{"oneVU", 1, spread},
		{"vuPerGoroutine", 16 * runtime.GOMAXPROCS(0), func(g, _, n int) int { return g % n }},
		// A human's VU: each gets a few samples per flush.
		{"5000VUs", 5000, spread},
		{"5000VUs-shared", 5000, spread}, // VU.PushShared, as opSink pushes
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newPushFixture(b, c.vus)
			f.shared = strings.HasSuffix(c.name, "-shared")
			var next atomic.Int64
			now := time.Now()
			// A long run's steady state: every buffer has grown once.
			for _, vu := range f.vus {
				for range 32 {
					f.push(vu, now)
				}
			}
			f.coll.Flush()
			f.count.Store(0)
			b.SetParallelism(16) // many more goroutines than cores, as the readers
			cpu0 := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				g := int(next.Add(1) - 1)
				for i := 0; pb.Next(); i++ {
					f.push(f.vus[c.pick(g, i, len(f.vus))], now)
				}
			})
			f.stop() // the last flush is part of the cost
			cpu := processCPU() - cpu0
			b.StopTimer()
			if got, want := f.count.Load(), int64(2*b.N); got != want {
				b.Fatalf("the consumer saw %d samples, want %d", got, want)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
