package main

import (
	"os/exec"
	"sync/atomic"
	"time"
)

// cpuTally adds up the CPU of the probes' runner processes on this machine
// (user + system, from each process's own accounting as it exits), so a
// search says what its own coordination cost beside them (issue 49: the
// capacity coordinator adds at most 5 % CPU to the load it measures).
// Relays, merges and remote workers are not counted.
type cpuTally struct{ ns atomic.Int64 }

func (t *cpuTally) add(cmd *exec.Cmd) {
	if t == nil || cmd.ProcessState == nil {
		return
	}
	t.ns.Add(int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()))
}

func (t *cpuTally) total() time.Duration { return time.Duration(t.ns.Load()) }

// capacityCPU is the report's account of the search's CPU.
type capacityCPU struct {
	// CoordinatorS is the `buzzload capacity` process's own CPU: the
	// search, the judging, starting and waiting for the probes.
	CoordinatorS float64 `json:"coordinator_s"`
	// RunnersS is the CPU of the probes' runner processes on this machine.
	RunnersS float64 `json:"runners_s"`
	// Share is CoordinatorS ÷ RunnersS (absent without local runners).
	Share *float64 `json:"coordinator_share,omitempty"`
}

func newCapacityCPU(self, runners time.Duration) capacityCPU {
	c := capacityCPU{CoordinatorS: self.Seconds(), RunnersS: runners.Seconds()}
	if runners > 0 {
		s := self.Seconds() / runners.Seconds()
		c.Share = &s
	}
	return c
}
