package extension

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/report"
)

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

// generatorMeter samples the process's CPU into the steps.
type generatorMeter struct {
	mu    sync.Mutex
	cells []report.CPUCell // len(plan)+1: the last is the shutdown
	cores int

	push func(...metrics.Sample)
	met  *metricSet
	tags metrics.TagSet
}

func newGeneratorMeter(steps int) *generatorMeter {
	return &generatorMeter{cells: make([]report.CPUCell, steps+1), cores: max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))}
}

// attach gives the meter a VU's push for buzz_generator_saturated and
// buzz_generator_cpu (the first one wins). The process's CPU is no
// scenario's, so its samples carry the VU's tags without "scenario".
func (g *generatorMeter) attach(push func(...metrics.Sample), met *metricSet, tags metrics.TagSet) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.push == nil && met != nil {
		g.push, g.met, g.tags = push, met, tags.Without("scenario")
	}
}

// cpuGaugeEvery is how often buzz_generator_cpu is written: the share over
// the last second, so a live output pushing every few seconds shows a
// second's CPU, not one 250 ms sample's.
const cpuGaugeEvery = time.Second

func (g *generatorMeter) cell(step int) (report.CPUCell, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if step < 0 || step >= len(g.cells) {
		return report.CPUCell{}, g.cores
	}
	return g.cells[step], g.cores
}

// processCPU is the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuEvery is how often the meter samples.
const cpuEvery = 250 * time.Millisecond
