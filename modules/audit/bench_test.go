package audit

import (
	"runtime"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// BenchmarkAckLogRetained is the memory an acknowledged event's record
// keeps alive once the event itself is gone: the live heap after 20,000
// records, per record (B-per-record). docs/benchmarks.md, "Long runs".
func BenchmarkAckLogRetained(b *testing.B) {
	k := nostr.DeriveKeys("audit-bench", nostr.RoleHuman, 1)
	const n = 20000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		log := NewAckLog(n)
		for i := range n {
			ev, err := k.NewEvent(9, [][]string{{"h", "0f0e0d0c-0000-4000-8000-000000000001"}}, "hello", time.Unix(int64(1_800_000_000+i), 0))
			if err != nil {
				b.Fatal(err)
			}
			log.Add(ev)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B-per-record")
		runtime.KeepAlive(log)
	}
}
