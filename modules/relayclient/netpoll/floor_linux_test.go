package netpoll

import (
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The machine's floors under the issue 16 targets (docs/benchmarks.md,
// "The machine's floors"): what a system call costs here at all, and what
// one loopback write of a publish-sized frame costs the writer when the
// reader, in another process, sleeps until it arrives (on loopback the
// writer's syscall runs the receiver's TCP path and its wake-up). Both in
// this thread's CPU time (RUSAGE_THREAD), as the real runs count CPU, so
// they stand beside a signature's cpu-ns/op (modules/nostr
// BenchmarkSignEventCPU) measured the same way.

const floorChildEnv = "NETPOLL_FLOOR_CHILD"

// TestMain lets the test binary be the floor benchmark's reader process.
func TestMain(m *testing.M) {
	if addr := os.Getenv(floorChildEnv); addr != "" {
		floorReader(addr)
		return
	}
	os.Exit(m.Run())
}

// floorReader connects to addr and reads until EOF (a blocking read per
// arrival: the reader sleeps between frames, as an idle relay does).
func floorReader(addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		os.Exit(2)
	}
	_, _ = io.Copy(io.Discard, c)
	os.Exit(0)
}

func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkSyscallFloor(b *testing.B) {
	b.Run("null", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPU(b)
		for i := 0; i < b.N; i++ {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
		b.ReportMetric(float64(threadCPU(b)-t0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("loopback-write-wake", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), floorChildEnv+"="+ln.Addr().String())
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Wait() }()
		defer ln.Close() // before Wait: a child still dialling gets refused, not stuck
		// A child that cannot dial exits; the accept must not wait forever.
		_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			_ = cmd.Process.Kill()
			b.Fatal(err)
		}
		defer c.Close()
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			b.Fatal(err)
		}
		var fd int
		_ = raw.Control(func(f uintptr) { fd = int(f) })
		frame := make([]byte, 512) // a kind-9 EVENT frame is ~400–600 bytes
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var cpu time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// Spaced so the reader is asleep again: each write wakes it.
			time.Sleep(200 * time.Microsecond) // the benchmark's pace: the reader asleep before each write
			t0 := threadCPU(b)
			if _, err := unix.Write(fd, frame); err != nil && err != syscall.EAGAIN {
				b.Fatal(err)
			}
			cpu += threadCPU(b) - t0
		}
		b.StopTimer()
		// Two getrusage calls bracket each write: take their cost out.
		t0 := threadCPU(b)
		for i := 0; i < 1000; i++ {
			threadCPU(b)
		}
		per := (threadCPU(b) - t0) / 1001
		b.ReportMetric(float64(cpu-time.Duration(b.N)*per)/float64(b.N), "cpu-ns/op")
	})
}
