// Package genmeter is the load generator watching its own CPU (issue 14):
// the process's CPU time and the machine's busy time, sampled into the ramp
// steps of a run, so a step's latencies can be told apart from a generator
// short of CPU (report.StepGenerator judges a step from its cell).
package genmeter

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/buzzload/buzzload/modules/report"
)

// Every is how often the meter samples; GaugeEvery how often it reports
// the process's CPU share (over the last second, so a live output pushing
// every few seconds shows a second's CPU, not one sample's).
const (
	Every      = 250 * time.Millisecond
	GaugeEvery = time.Second
)

// Meter holds the CPU sampled into each step of a run.
type Meter struct {
	mu    sync.Mutex
	cells []report.CPUCell // len(plan)+1: the last is the shutdown
	cores int
}

// New is a meter of a run of steps ramp steps.
func New(steps int) *Meter {
	return &Meter{cells: make([]report.CPUCell, steps+1), cores: max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))}
}

// Cell is step's CPU so far and the cores the process may use.
func (m *Meter) Cell(step int) (report.CPUCell, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if step < 0 || step >= len(m.cells) {
		return report.CPUCell{}, m.cores
	}
	c := m.cells[step]
	c.Sched.Counts = append([]uint64(nil), c.Sched.Counts...) // Watch goes on adding to its own
	return c, m.cores
}

// Hooks are what Watch tells its caller: stepOf places a moment's offset
// from the start in a step (len(plan): the shutdown), gauge receives the
// process's CPU share every GaugeEvery, stepEnded each step (of the plan)
// as it ends, the last one when Watch stops.
type Hooks struct {
	StepOf    func(offset time.Duration) int
	Gauge     func(at time.Time, share float64)
	StepEnded func(step int, at time.Time)
}

// Watch samples the CPU into the step of each sample's time until stop.
func (m *Meter) Watch(start time.Time, stop <-chan struct{}, h Hooks) {
	t := time.NewTicker(Every)
	defer t.Stop()
	last, lastCPU := time.Now(), ProcessCPU()
	lastBusy, lastTotal := machineCPU()
	sched := newSchedReader()
	lastSched := sched.read()
	gaugeAt, gaugeCPU := last, lastCPU
	step := h.StepOf(last.Sub(start))
	steps := len(m.cells) - 1
	sample := func() {
		now, cpu := time.Now(), ProcessCPU()
		busy, total := machineCPU()
		schedNow := sched.read()
		m.mu.Lock()
		if step < len(m.cells) {
			c := &m.cells[step]
			c.CPU += cpu - lastCPU
			c.Wall += now.Sub(last)
			c.MBusy += busy - lastBusy
			c.MTotal += total - lastTotal
			addSched(&c.Sched, sched.buckets, lastSched, schedNow)
		}
		cores := m.cores
		m.mu.Unlock()
		last, lastCPU, lastBusy, lastTotal, lastSched = now, cpu, busy, total, schedNow
		if now.Sub(gaugeAt) >= GaugeEvery {
			h.Gauge(now, report.CPUShare(cpu-gaugeCPU, now.Sub(gaugeAt), cores))
			gaugeAt, gaugeCPU = now, cpu
		}
		if next := h.StepOf(now.Sub(start)); next != step {
			if step < steps {
				h.StepEnded(step, now)
			}
			step = next
		}
	}
	for {
		select {
		case <-stop:
			sample()
			// The run can end before a tick sees its last step end (a short
			// run, an abort): that step's verdict is written now, so every
			// step the run reached has its point.
			if step < steps {
				h.StepEnded(step, time.Now())
			}
			return
		case <-t.C:
			sample()
		}
	}
}

// schedMetric is the Go runtime's histogram of how long runnable goroutines
// waited to run: it rises when this process or the machine is short of CPU,
// not when goroutines are blocked on the network (issue 43 L8).
const schedMetric = "/sched/latencies:seconds"

// schedReader reads schedMetric's cumulative counts.
type schedReader struct {
	sample  []metrics.Sample
	buckets []float64 // nil: the runtime does not have the metric
}

func newSchedReader() *schedReader {
	r := &schedReader{sample: []metrics.Sample{{Name: schedMetric}}}
	metrics.Read(r.sample)
	if r.sample[0].Value.Kind() == metrics.KindFloat64Histogram {
		r.buckets = append([]float64(nil), r.sample[0].Value.Float64Histogram().Buckets...)
	}
	return r
}

// read is a copy of the counts so far (the runtime reuses its slices).
func (r *schedReader) read() []uint64 {
	if r.buckets == nil {
		return nil
	}
	metrics.Read(r.sample)
	return append([]uint64(nil), r.sample[0].Value.Float64Histogram().Counts...)
}

// addSched adds the counts between two reads to h.
func addSched(h *report.SchedHist, buckets []float64, before, after []uint64) {
	if buckets == nil || len(before) != len(after) || len(after)+1 != len(buckets) {
		return
	}
	if h.Counts == nil {
		h.Buckets, h.Counts = buckets, make([]uint64, len(after))
	}
	for i := range after {
		h.Counts[i] += after[i] - before[i]
	}
}

// machineCPU is the machine's busy and total CPU time so far, from
// /proc/stat's first line (user nice system idle iowait irq softirq steal,
// in clock ticks of 10 ms); zero where it cannot be read.
func machineCPU() (busy, total time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	var v [8]int64
	for i := 1; i < len(f) && i <= 8; i++ {
		v[i-1], _ = strconv.ParseInt(f[i], 10, 64)
	}
	tick := 10 * time.Millisecond
	idle := v[3] + v[4]
	all := v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]
	return time.Duration(all-idle) * tick, time.Duration(all) * tick
}

// ProcessCPU is the user and system CPU time of the process so far
// (its children not included).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
