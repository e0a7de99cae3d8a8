package jshost

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/executor"
)

// BenchmarkInit1000VUs: 1,000 VUs of a small script initialised the way the
// runner does it (executor.Pool.Init from one Bundle, GOMAXPROCS at a time).
// Targets: the 1,000 in ≤ 5 s; an idle VU ≤ 1 MB RSS (architecture budget
// ≤ 60 KB). Reports the wall time for the 1,000 and, per VU, the Go heap
// and the process RSS grown (measured after a GC, from memory given back
// to the OS first, so earlier runs do not hide or inflate it).
func BenchmarkInit1000VUs(b *testing.B) {
	const n = 1000
	h := &harness{dir: writeFilesB(b, map[string]string{"main.js": `
import { check, sleep } from "k6";
import exec from "k6/execution";
export const options = { vus: 1000, duration: "10s" };
export default function () { check(1, { ok: (v) => v === 1 }); sleep(1); }`}), metrics: newMemMetrics(), log: &syncBuf{}, control: &StandaloneControl{}}
	cfg := h.config("main.js")
	cfg.Env = map[string]string{} // __ENV as the runner builds it: the system environment
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			cfg.Env[k] = v
		}
	}
	var took time.Duration
	var heap, rss float64
	for range b.N {
		debug.FreeOSMemory()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rss0 := rssBytes()
		start := time.Now()
		bundle, err := NewBundle(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		pool := executor.NewPool(func(ctx context.Context, id, idInTest uint64) (executor.VU, error) {
			vu, err := bundle.NewVU(ctx, id, idInTest)
			return idleVU{vu}, err
		}, nil, n)
		if err := pool.Init(context.Background(), n, runtime.GOMAXPROCS(0)); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		if pool.Allocated() != n {
			b.Fatalf("%d VUs initialised, want %d", pool.Allocated(), n)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += (float64(after.HeapInuse+after.StackInuse) - float64(before.HeapInuse+before.StackInuse)) / n
		rss += float64(rssBytes()-rss0) / n
		runtime.KeepAlive(pool)
	}
	b.ReportMetric(took.Seconds()/float64(b.N), "s/1000VUs")
	b.ReportMetric(heap/float64(b.N), "heap-B/VU")
	b.ReportMetric(rss/float64(b.N), "rss-B/VU")
}

// idleVU puts a *VU in the executor's pool, as the runner's adapter does;
// these VUs stay idle, so it runs nothing.
type idleVU struct{ vu *VU }

func (idleVU) Activate(*executor.ScenarioInfo)                   {}
func (idleVU) RunIteration(context.Context, *executor.Iteration) {}

// rssBytes is the process's resident set size (Linux), or 0.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
