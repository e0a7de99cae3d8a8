package extension

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// The generator watches itself (issue 14): a load generator short of CPU
// sends late, and every latency grows with nothing saying the relay is not
// to blame. Two signals per step: the scheduling lag of the operations a
// client's schedule made (Result.Due → Result.Start), and the process's CPU
// as a share of the cores it may use. A step over either limit is marked
// "generator saturated".

// saturationCPUPct is the CPU share above which a step is saturated.
const saturationCPUPct = 90

// minLagSamples: a step with fewer scheduled operations is not judged on
// its lag (one late wake-up on a busy machine is not saturation).
const minLagSamples = 10

// schedAgg is the scheduled operations of one cell: latency from the due
// time (successes) and the lag due → start (all).
type schedAgg struct {
	n        int64
	due, lag metrics.Sink
}

func newSchedAgg() *schedAgg {
	return &schedAgg{due: metrics.NewSink(metrics.Trend), lag: metrics.NewSink(metrics.Trend)}
}

func (s *schedAgg) add(r relayclient.Result, end time.Time) {
	s.n++
	s.lag.Add(ms(max(0, r.Start.Sub(r.Due))), end)
	if r.Outcome == relayclient.OutcomeOK {
		s.due.Add(ms(max(0, end.Sub(r.Due))), end)
	}
}

func (s *schedAgg) merge(b *schedAgg) {
	s.n += b.n
	_ = s.due.Merge(b.due) // both Trend sinks: cannot fail
	_ = s.lag.Merge(b.lag)
}

// fill writes the scheduled numbers into an op's report (nil: none).
func (s *schedAgg) fill(r *OpReport) {
	if s == nil || s.n == 0 {
		return
	}
	r.Scheduled = s.n
	if ts, ok := s.due.(*metrics.TrendSink); ok && ts.Count() > 0 {
		r.DueP50Ms, r.DueP95Ms, r.DueP99Ms = round3(ts.Percentile(50)), round3(ts.Percentile(95)), round3(ts.Percentile(99))
	}
	if ts, ok := s.lag.(*metrics.TrendSink); ok && ts.Count() > 0 {
		r.LagP50Ms, r.LagP99Ms = round3(ts.Percentile(50)), round3(ts.Percentile(99))
	}
}

// GeneratorReport is the generator's health in one step.
type GeneratorReport struct {
	// CPUPct is the process's CPU time over the step's wall time, as a
	// share of Cores (min(NumCPU, GOMAXPROCS)).
	CPUPct float64 `json:"cpu_pct"`
	Cores  int     `json:"cores"`
	// LagP99Ms is the p99 of due → started over the step's scheduled
	// operations (LagSamples of them).
	LagP99Ms   float64 `json:"lag_p99_ms"`
	LagSamples int64   `json:"lag_samples"`
	// MachinePct is the whole machine's busy CPU over the step, as a share
	// of all its CPUs (/proc/stat; 0 where it cannot be read): a lag while
	// the machine is busy and this process is not comes from elsewhere.
	MachinePct float64 `json:"machine_cpu_pct,omitempty"`
	Saturated  bool    `json:"saturated"`
	Reason     string  `json:"reason,omitempty"`
	// Elsewhere says the scheduling lag came from other processes (the
	// machine busy, this process not): a warning, not a saturation.
	Elsewhere string `json:"elsewhere,omitempty"`
}

// GeneratorSummary says whether any step was saturated.
type GeneratorSummary struct {
	Saturated bool     `json:"saturated"`
	Steps     []string `json:"steps,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

// judgeGenerator is the pure verdict of one step. The generator is
// saturated when this process is the cause (issue 29 item 5): its CPU
// above saturationCPUPct of its cores, or a scheduling lag above the limit
// unless the machine was busy (busyMachinePct) while this process used
// under a quarter of its cores (idleProcessPct) — then other processes
// took the CPU, and it is said apart (Elsewhere) rather than marked. A
// process that used more and still lagged is a cause itself (a generator
// with GOMAXPROCS=1 at 48 % of its core on a busy machine is saturated).
func judgeGenerator(g *GeneratorReport, maxLagMs float64) {
	var why string
	g.Elsewhere = ""
	if g.LagSamples >= minLagSamples && g.LagP99Ms > maxLagMs {
		lag := fmt.Sprintf("scheduling lag p99 %.1f ms above generator_max_lag_ms %g", g.LagP99Ms, maxLagMs)
		if g.MachinePct >= busyMachinePct && g.CPUPct < idleProcessPct {
			g.Elsewhere = fmt.Sprintf("%s while the machine's CPU was %.0f %% busy and this process used %.0f %% of its cores: other processes slowed the generator", lag, g.MachinePct, g.CPUPct)
		} else {
			why = lag
		}
	}
	if g.CPUPct > saturationCPUPct {
		why = joinReason(why, fmt.Sprintf("CPU %.0f %% of %d cores above %d %%", g.CPUPct, g.Cores, saturationCPUPct))
	}
	g.Saturated, g.Reason = why != "", why
}

// busyMachinePct is a machine busy enough to delay any process;
// idleProcessPct a generator too idle to be the cause of its own lag.
const (
	busyMachinePct = 90
	idleProcessPct = 25
)

// cpuCell is the CPU and wall time sampled in one step, and the machine's
// busy and total CPU time over it.
type cpuCell struct{ cpu, wall, mbusy, mtotal time.Duration }

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
	cells []cpuCell // len(plan)+1: the last is the shutdown
	cores int

	push func(...metrics.Sample)
	met  *metricSet
	tags metrics.TagSet
}

func newGeneratorMeter(steps int) *generatorMeter {
	return &generatorMeter{cells: make([]cpuCell, steps+1), cores: max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))}
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

// cpuShare is CPU time over wall time on cores cores, 0..1 (0 for no wall).
func cpuShare(cpu, wall time.Duration, cores int) float64 {
	if wall <= 0 || cores <= 0 {
		return 0
	}
	return cpu.Seconds() / (wall.Seconds() * float64(cores))
}

func (g *generatorMeter) cell(step int) (cpuCell, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if step < 0 || step >= len(g.cells) {
		return cpuCell{}, g.cores
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

// watchGenerator samples the CPU into the step of each sample's time until
// stop, writes buzz_generator_cpu every cpuGaugeEvery while the run goes,
// and buzz_generator_saturated{step} when a step ends.
func (l *loaded) watchGenerator(start time.Time, stop <-chan struct{}) {
	g := l.gen
	t := time.NewTicker(cpuEvery)
	defer t.Stop()
	last, lastCPU := time.Now(), processCPU()
	lastBusy, lastTotal := machineCPU()
	gaugeAt, gaugeCPU := last, lastCPU
	step := l.stepIndex(last.Sub(start))
	sample := func() {
		now, cpu := time.Now(), processCPU()
		busy, total := machineCPU()
		g.mu.Lock()
		if step < len(g.cells) {
			g.cells[step].cpu += cpu - lastCPU
			g.cells[step].wall += now.Sub(last)
			g.cells[step].mbusy += busy - lastBusy
			g.cells[step].mtotal += total - lastTotal
		}
		push, met, tags, cores := g.push, g.met, g.tags, g.cores
		g.mu.Unlock()
		last, lastCPU, lastBusy, lastTotal = now, cpu, busy, total
		if push != nil && now.Sub(gaugeAt) >= cpuGaugeEvery {
			push(metrics.Sample{Metric: met.generatorCPU, Tags: tags, Time: now, Value: cpuShare(cpu-gaugeCPU, now.Sub(gaugeAt), cores)})
			gaugeAt, gaugeCPU = now, cpu
		}
		if next := l.stepIndex(now.Sub(start)); next != step {
			if step < len(l.plan) {
				l.pushSaturation(step, now)
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
			if step < len(l.plan) {
				l.pushSaturation(step, time.Now())
			}
			return
		case <-t.C:
			sample()
		}
	}
}

// stepGenerator is step i's generator report from the meter and the
// step's scheduled operations.
func (l *loaded) stepGenerator(i int, ops map[string]*opAgg) *GeneratorReport {
	c, cores := l.gen.cell(i)
	lag := newSchedAgg()
	for _, o := range ops {
		if o != nil && o.sched != nil {
			lag.merge(o.sched)
		}
	}
	if c.wall <= 0 && lag.n == 0 {
		return nil
	}
	g := &GeneratorReport{Cores: cores, LagSamples: lag.n}
	if c.wall > 0 {
		g.CPUPct = round3(100 * cpuShare(c.cpu, c.wall, cores))
	}
	if c.mtotal > 0 {
		g.MachinePct = round3(100 * c.mbusy.Seconds() / c.mtotal.Seconds())
	}
	if ts, ok := lag.lag.(*metrics.TrendSink); ok && ts.Count() > 0 {
		g.LagP99Ms = round3(ts.Percentile(99))
	}
	judgeGenerator(g, l.base.Abort.GeneratorMaxLagMs)
	return g
}

// pushSaturation counts buzz_generator_saturated{step} (1, or 0 to show
// the metric) for a step
// that just ended.
func (l *loaded) pushSaturation(step int, at time.Time) {
	g := l.gen
	g.mu.Lock()
	push, met, tags := g.push, g.met, g.tags
	g.mu.Unlock()
	if push == nil {
		return
	}
	l.agg.mu.Lock()
	ops := l.agg.merged([]int{2 * step, 2*step + 1}, nil, 2*step+1)
	l.agg.mu.Unlock()
	rep := l.stepGenerator(step, ops)
	v := 0.0
	if rep != nil && rep.Saturated {
		v = 1
	}
	push(metrics.Sample{Metric: met.generator, Tags: tags.With("step", l.stepLabel(step)), Time: at, Value: v})
}
