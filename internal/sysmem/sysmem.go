// Package sysmem tells how much memory this process may still use: the
// kernel's MemAvailable, or the cgroup's limit when it is lower (a pod).
package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Available is the bytes this process may use, 0 when it cannot be told.
func Available() uint64 {
	avail := memAvailable("/proc/meminfo")
	if lim := cgroupLimit("/sys/fs/cgroup/memory.max"); lim > 0 && (avail == 0 || lim < avail) {
		return lim
	}
	return avail
}

// memAvailable reads the MemAvailable line of a /proc/meminfo (in kB).
func memAvailable(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// cgroupLimit reads a cgroup v2 memory.max ("max": none, 0).
func cgroupLimit(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// ProcessRSS is this process's resident memory in bytes (/proc/self/statm;
// 0 where it cannot be read).
func ProcessRSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
