package relay

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// scaleEnv gates the long benchmarks: `make bench-scale` sets it (with the
// descriptor limit raised), `make bench` leaves them skipped.
const scaleEnv = "BUZZLOAD_BENCH_SCALE"

// BenchmarkScaleIdle10kConnections: the relay holding 10,000 idle
// authenticated connections (target: ≤ 400 MB RSS). The clients run in a
// child process (TestIdleClientHelper), so the figures are the relay
// process alone: its RSS with the connections held (after a GC, as a
// long-idle relay would be), the RSS grown per connection, the peak RSS of
// the process (VmHWM, which includes garbage from the AUTH handshakes), and
// how long the 10,000 connect+AUTH handshakes took, one after another.
func BenchmarkScaleIdle10kConnections(b *testing.B) {
	if os.Getenv(scaleEnv) != "1" {
		b.Skip("long benchmark: run by make bench-scale (" + scaleEnv + "=1)")
	}
	const n = 10_000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < n+512 {
		b.Fatalf("descriptor limit %d is below %d: raise it (ulimit -n) or use make bench-scale", lim.Cur, n+512)
	}
	r := benchRelay(b)
	for range b.N {
		// Start from memory given back to the OS, so the RSS growth is this
		// run's and not hidden by pages freed from an earlier one.
		debug.FreeOSMemory()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rss0 := rssBytes()
		start := time.Now()
		stop := startIdleClients(b, r, n)
		connect := time.Since(start)
		if got := r.Stats().Connections; got < n {
			b.Fatalf("relay holds %d connections, want %d", got, n)
		}
		for range 4 {
			runtime.GC() // each cycle may shrink an idle goroutine's grown stack
		}
		runtime.ReadMemStats(&after)
		rss1 := rssBytes()
		b.ReportMetric(float64(rss1)/(1<<20), "rss-MB")
		b.ReportMetric(float64(rss1-rss0)/n, "rss-B/conn")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MB")
		b.ReportMetric((float64(after.HeapInuse+after.StackInuse)-float64(before.HeapInuse+before.StackInuse))/n, "heap+stack-B/conn")
		b.ReportMetric(connect.Seconds(), "connect-s")
		stop()
		waitfor.Within(30*time.Second, func() bool { return r.Stats().Connections == 0 }) // the relay reaped the sockets
	}
}

// peakRSS is the process's peak resident set size (VmHWM, Linux), or 0.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(rest, &kb)
			return kb << 10
		}
	}
	return 0
}
