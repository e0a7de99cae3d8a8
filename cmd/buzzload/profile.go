package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Profiling flags of run and relay (docs/benchmarks.md, "Profiling your own
// run"): a CPU profile of the whole command and a heap profile written as it
// ends. The environment variables serve where the command line is not
// yours (a k6-operator runner, a container entrypoint).
const (
	envCPUProfile = "BUZZLOAD_CPUPROFILE"
	envMemProfile = "BUZZLOAD_MEMPROFILE"
	// envMemProfileAt writes the heap profile this long after the start
	// (a Go duration) instead of at the end: the live heap of a load test is
	// at its largest mid-run, not once its clients have gone.
	envMemProfileAt = "BUZZLOAD_MEMPROFILE_AT"
	// envMemProfileRate sets runtime.MemProfileRate (bytes per sample).
	envMemProfileRate = "BUZZLOAD_MEMPROFILE_RATE"
)

func registerProfileFlags(fs *pflag.FlagSet) {
	fs.String("cpuprofile", "", "write a CPU profile of the command to this file (go tool pprof) ["+envCPUProfile+"]")
	fs.String("memprofile", "", "write a heap profile to this file (and runtime.MemStats to FILE.memstats) when the command ends ["+envMemProfile+"]")
}

// profilePaths are the flag values, or the environment's when a flag is unset.
func profilePaths(fs *pflag.FlagSet, environ []string) (cpu, mem, memAt string) {
	lookup := lookupFrom(environ)
	get := func(flag, env string) string {
		if flag != "" {
			if v, _ := fs.GetString(flag); v != "" {
				return v
			}
		}
		v, _ := lookup(env)
		return v
	}
	return get("cpuprofile", envCPUProfile), get("memprofile", envMemProfile), get("", envMemProfileAt)
}

// startProfiles starts the CPU profile (when asked) and returns the stop
// function that ends it and writes the heap profile.
func startProfiles(cpu, mem, memAt string) (stop func() error, err error) {
	if v := os.Getenv(envMemProfileRate); v != "" {
		// A finer heap sample than Go's 512 KB, for a soak's small growth.
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number of bytes", envMemProfileRate, v)
		}
		runtime.MemProfileRate = n
	}
	if memAt != "" {
		// One moment ("5m": the profile is FILE) or several ("5m,25m": FILE.1,
		// FILE.2, …), so a soak can compare its heap early and late.
		var ats []time.Duration
		for _, s := range strings.Split(memAt, ",") {
			at, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || at <= 0 {
				return nil, fmt.Errorf("%s=%q: want positive durations such as 30s or 5m,25m", envMemProfileAt, memAt)
			}
			ats = append(ats, at)
		}
		if mem == "" {
			return nil, fmt.Errorf("%s needs --memprofile (or %s)", envMemProfileAt, envMemProfile)
		}
		path := mem
		mem = "" // written by the timers, not at the end
		var timers []*time.Timer
		for i, at := range ats {
			p := path
			if len(ats) > 1 {
				p = path + "." + strconv.Itoa(i+1)
			}
			timers = append(timers, time.AfterFunc(at, func() { _ = writeHeapProfile(p) }))
		}
		defer func() {
			if err != nil {
				for _, t := range timers {
					t.Stop()
				}
			}
		}()
	}
	var cpuFile *os.File
	if cpu != "" {
		if cpuFile, err = os.Create(cpu); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			cpuFile.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	return func() error {
		var errs []error
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
			}
		}
		if mem != "" {
			errs = append(errs, writeHeapProfile(mem))
		}
		return errors.Join(errs...)
	}, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	runtime.GC() // the profile then shows live memory as of the end
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := os.WriteFile(path+".memstats", memStats(), 0o644); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

// memStats is where the process's memory is, after the profile's GC: what
// a heap profile does not show (goroutine stacks, heap pages the GC freed
// and the scavenger kept, span metadata), and the goroutine count.
func memStats() []byte {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return fmt.Appendf(nil, "HeapAlloc=%d HeapInuse=%d HeapIdle=%d HeapReleased=%d StackInuse=%d MSpanInuse=%d GCSys=%d OtherSys=%d Sys=%d NextGC=%d NumGC=%d Goroutines=%d\n",
		m.HeapAlloc, m.HeapInuse, m.HeapIdle, m.HeapReleased, m.StackInuse, m.MSpanInuse, m.GCSys, m.OtherSys, m.Sys, m.NextGC, m.NumGC, runtime.NumGoroutine())
}
