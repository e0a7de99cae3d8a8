package relayclient

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkIdleConnRSS: the client process's RSS per idle authenticated
// connection (target ≤ 12 KB), over 2,000 connections to a relay in a
// child process. RSS is what the target names; BenchmarkIdleConnMemory
// reports the Go heap and stacks, which leave out the runtime's and the
// kernel-visible overhead. Memory is given back to the OS before each
// round so an earlier round's pages neither hide nor inflate the growth.
func BenchmarkIdleConnRSS(b *testing.B) {
	const n = 2000
	url := startChildServer(b)
	keys := testKeys(b, 1)
	var perConn float64
	for range b.N {
		debug.FreeOSMemory()
		rss0 := processRSS()
		conns := make([]*Conn, 0, n)
		for range n {
			c, err := Connect(context.Background(), Config{Target: Target{WSURL: url}, Keys: keys})
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		time.Sleep(50 * time.Millisecond) // let pooled buffers go back
		runtime.GC()
		perConn += float64(processRSS()-rss0) / n
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close(); <-c.Done() }()
		}
		wg.Wait()
	}
	b.ReportMetric(perConn/float64(b.N), "rss-B/conn")
}

// processRSS is the resident set size of this process (Linux), or 0.
func processRSS() int64 {
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
