//go:build linux

package nostr

import (
	"runtime"
	"syscall"
	"testing"
)

// threadCPU is this OS thread's user + system CPU time (RUSAGE_THREAD).
func threadCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkSignEventCPU is BenchmarkSignEvent in CPU time, not wall time:
// on a shared machine the wall time of a signature includes the time the
// thread waited for a core, while scripts/publish-cpu.sh measures the
// runner's CPU time; the two are compared in the same unit.
func BenchmarkSignEventCPU(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	k := DeriveKeys("bench", RoleHuman, 0)
	e := benchEvent()
	start := threadCPU(b)
	for i := 0; b.Loop(); i++ {
		e.CreatedAt = 1_800_000_000 + int64(i)
		if err := k.Sign(e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(threadCPU(b)-start)/float64(b.N), "cpu-ns/op")
}
