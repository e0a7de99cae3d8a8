package report

import (
	"fmt"
	"math"
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
	// SchedP99Ms is the p99 of how long this process's runnable goroutines
	// waited for a CPU over the step (the Go runtime's
	// /sched/latencies:seconds; 0 with SchedSamples 0: not measured).
	SchedP99Ms   float64 `json:"sched_p99_ms,omitempty"`
	SchedSamples uint64  `json:"sched_samples,omitempty"`
	// WaitingOnTarget says the scheduling lag was the clients waiting on
	// the target (a write the relay did not take, an answer that did not
	// come), not the generator: its goroutines ran as soon as they could
	// (issue 43 L8: a paused relay was blamed on "other processes").
	WaitingOnTarget string `json:"waiting_on_target,omitempty"`
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
//
// The lag of a client's schedule is also the client waiting on the target
// (its write blocked on a relay that stopped reading): when the runtime
// says runnable goroutines got a CPU within half the limit (SchedP99Ms),
// neither this process nor the machine held them, and the lag is said to
// be the target's (WaitingOnTarget).
func judgeGenerator(g *GeneratorReport, maxLagMs float64) {
	var why string
	g.Elsewhere, g.WaitingOnTarget = "", ""
	if g.LagSamples >= minLagSamples && g.LagP99Ms > maxLagMs {
		lag := fmt.Sprintf("scheduling lag p99 %.1f ms above generator_max_lag_ms %g", g.LagP99Ms, maxLagMs)
		switch {
		case g.SchedSamples >= minLagSamples && g.SchedP99Ms <= maxLagMs/2:
			g.WaitingOnTarget = fmt.Sprintf("%s while this process ran its runnable goroutines within %.1f ms (p99): the clients were waiting on the target, not on the generator", lag, g.SchedP99Ms)
		case g.MachinePct >= busyMachinePct && g.CPUPct < idleProcessPct:
			g.Elsewhere = fmt.Sprintf("%s while the machine's CPU was %.0f %% busy and this process used %.0f %% of its cores: other processes slowed the generator", lag, g.MachinePct, g.CPUPct)
		default:
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

// CPUCell is the CPU and wall time sampled in one step, the machine's busy
// and total CPU time over it, and the runtime's scheduling latencies.
type CPUCell struct {
	CPU, Wall, MBusy, MTotal time.Duration
	Sched                    SchedHist
}

// SchedHist is a histogram of goroutine scheduling latencies in seconds:
// Counts[i] fell in [Buckets[i], Buckets[i+1]) (runtime/metrics layout).
type SchedHist struct {
	Buckets []float64
	Counts  []uint64
}

// Total is the number of latencies counted.
func (h SchedHist) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// QuantileMs is the q-quantile (0..1) in ms, as its bucket's upper bound
// (its lower bound for the last, unbounded bucket); 0 when empty.
func (h SchedHist) QuantileMs(q float64) float64 {
	n := h.Total()
	if n == 0 || len(h.Buckets) != len(h.Counts)+1 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			hi := h.Buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = h.Buckets[i]
			}
			return 1000 * hi
		}
	}
	return 1000 * h.Buckets[len(h.Buckets)-1]
}

// CPUShare is CPU time over wall time on cores cores, 0..1 (0 for no wall).
func CPUShare(cpu, wall time.Duration, cores int) float64 {
	if wall <= 0 || cores <= 0 {
		return 0
	}
	return cpu.Seconds() / (wall.Seconds() * float64(cores))
}

// StepGenerator is a step's generator report from its CPU cell and its
// scheduled operations (nil when neither was measured).
func StepGenerator(c CPUCell, cores int, ops map[string]*OpAgg, maxLagMs float64) *GeneratorReport {
	lag := newSchedAgg()
	for _, o := range ops {
		if o != nil && o.sched != nil {
			lag.merge(o.sched)
		}
	}
	if c.Wall <= 0 && lag.n == 0 {
		return nil
	}
	g := &GeneratorReport{Cores: cores, LagSamples: lag.n}
	if c.Wall > 0 {
		g.CPUPct = round3(100 * CPUShare(c.CPU, c.Wall, cores))
	}
	if c.MTotal > 0 {
		g.MachinePct = round3(100 * c.MBusy.Seconds() / c.MTotal.Seconds())
	}
	if n := c.Sched.Total(); n > 0 {
		g.SchedSamples, g.SchedP99Ms = n, round3(c.Sched.QuantileMs(0.99))
	}
	if ts, ok := lag.lag.(*metrics.TrendSink); ok && ts.Count() > 0 {
		g.LagP99Ms = round3(ts.Percentile(99))
	}
	judgeGenerator(g, maxLagMs)
	return g
}
