package jshost

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/metrics"
)

// BenchmarkNewVU measures the cost of one more initialised VU with a small
// script (the budget is ≤ 60 KB of heap per idle VU).
func BenchmarkNewVU(b *testing.B) {
	h := &harness{dir: writeFilesB(b, map[string]string{"main.js": `
import { check, sleep } from "k6";
import exec from "k6/execution";
export const options = { vus: 1 };
export default function () { check(1, { ok: (v) => v === 1 }); }`}), metrics: newMemMetrics(), log: &syncBuf{}, control: &StandaloneControl{}}
	cfg := h.config("main.js")
	// A realistic __ENV: the system environment is included by default.
	cfg.Env = map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			cfg.Env[k] = v
		}
	}
	bundle, err := NewBundle(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	vus := make([]*VU, 0, b.N)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		vu, err := bundle.NewVU(context.Background(), uint64(i+1), uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		vus = append(vus, vu)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heapB/VU")
	runtime.KeepAlive(vus)
}

// BenchmarkEmptyIteration is the host's cost of one iteration of an empty
// default function, iteration metrics included.
func BenchmarkEmptyIteration(b *testing.B) {
	h := &harness{dir: writeFilesB(b, map[string]string{"main.js": `export default function () {}`}), metrics: newMemMetrics(), log: &syncBuf{}, control: &StandaloneControl{}}
	bundle, err := NewBundle(context.Background(), h.config("main.js"))
	if err != nil {
		b.Fatal(err)
	}
	vu, err := bundle.NewVU(context.Background(), 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	vu.Activate(&Scenario{Name: "default"}, "default", nil, map[string]string{"testid": "x"})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		vu.RunIteration(ctx, Iteration{InInstance: int64(i), InTest: int64(i), Stage: -1})
	}
}

// BenchmarkSleepCheckIteration is an iteration of scripts/idle-vu.sh's
// script (a check, then a sleep, here of 1 µs): what the host allocates per
// iteration of an idle VU is garbage that brings the next GC nearer, and
// RSS follows the heap's peak between GCs.
func BenchmarkSleepCheckIteration(b *testing.B) {
	h := &harness{dir: writeFilesB(b, map[string]string{"main.js": `
import http from "k6/http";
import { check, sleep } from "k6";
export default function () {
  check(http, { "module loaded": (h) => typeof h.get === "function" });
  sleep(0.000001);
}`}), log: &syncBuf{}, control: &StandaloneControl{}}
	// A collector with no consumer: only the host's own allocations count.
	h.metrics = &memMetrics{c: metrics.NewCollector(metrics.NewRegistry(), metrics.CollectorOptions{BatchSize: 64})}
	bundle, err := NewBundle(context.Background(), h.config("main.js"))
	if err != nil {
		b.Fatal(err)
	}
	vu, err := bundle.NewVU(context.Background(), 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	vu.RunIteration(ctx, Iteration{Stage: -1})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		vu.RunIteration(ctx, Iteration{Stage: -1})
	}
}
