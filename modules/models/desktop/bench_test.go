package desktop

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
)

// The model's cost per client: a cold start (plan, 7 REQs, 15 reads) and a
// quiet current-mode tick.
func BenchmarkModelColdStart25Channels(b *testing.B) {
	p := params(ModeCurrent, 25)
	b.ReportAllocs()
	for b.Loop() {
		m, _ := NewModel(p)
		m.Step(Start{At: t0})
		acts := m.Step(Connected{At: t0, Epoch: 1})
		for len(acts) > 0 {
			var next []Action
			for _, a := range acts {
				switch a := a.(type) {
				case OpenSub:
					next = append(next, m.Step(EOSE{Sub: a.Spec.ID, At: t0})...)
				case StartRead:
					next = append(next, m.Step(ReadSettled{Read: a.Read.Key, At: t0, OK: true, SnapshotOK: true})...)
				}
			}
			acts = next
		}
	}
}

func BenchmarkModelQuietTick(b *testing.B) {
	m, _ := NewModel(params(ModeCurrent, 25))
	m.Step(Start{At: t0})
	m.Step(Connected{At: t0, Epoch: 1})
	at := t0
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(time.Minute)
		m.Step(Wake{At: at, LastFrame: at})
		m.lastRoster, m.lastFullRepair = at, at // stay under the backstop
		for i := range m.routes {
			m.routes[i].lastReplaced = at
		}
	}
}

// BenchmarkConnectedDesktopClientMemory reports the heap a connected,
// subscribed, caught-up desktop client holds (5 channels, current mode,
// a shared HTTP pool). The embedded relay runs in the same process, so its
// side of each connection is counted too: an upper bound on the client's.
func BenchmarkConnectedDesktopClientMemory(b *testing.B) {
	const n = 50
	e := newE2EB(b, 5)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var cancels []context.CancelFunc
	pool, err := relayclient.NewTransport(relayclient.TransportOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		p := Params{Mode: ModeCurrent, Windows: 3, Threads: 1, Tick: time.Hour, Backstop: time.Hour}
		c, err := New(Config{Params: p, Target: e.target, Keys: e.keys, Channels: e.chans, Sink: relayclient.NopSink{}, Transport: pool})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		go c.Run(ctx, nil)
	}
	time.Sleep(2 * time.Second) // connected and caught up
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, c := range cancels {
		c()
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/client")
}
