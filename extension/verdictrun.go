package extension

// The run side of the report (modules/report): the windows' ticker, the
// generator's meter, the report built from the aggregation and what the
// end of the run gathered.

import (
	"fmt"
	"io"
	"time"

	"github.com/buzzload/buzzload/internal/sysmem"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// pushSaturation counts buzz_generator_saturated{step} (1, or 0 to show
// the metric) for a step that just ended.
func (l *loaded) pushSaturation(step int, at time.Time) {
	push, met, tags := l.genOut.get()
	if push == nil {
		return
	}
	cell, cores := l.gen.Cell(step)
	rep := l.agg.StepGenerator(step, cell, cores, l.base.Abort.GeneratorMaxLagMs)
	v := 0.0
	if rep != nil && rep.Saturated {
		v = 1
	}
	push(metrics.Sample{Metric: met.generator, Tags: tags.With("step", l.stepLabel(step)), Time: at, Value: v})
}

// BuildReport assembles the report from the aggregation and the names of
// the thresholds that failed (from handleSummary's data).
func (l *loaded) BuildReport(failedThresholds []string) *report.Report {
	return l.buildReport(failedThresholds, nil)
}

// buildReport is BuildReport with a gateway profile's verdict (sc.report's
// profile option), judged with the rest.
func (l *loaded) buildReport(failedThresholds []string, profile *report.ProfileVerdict) *report.Report {
	l.finalWindow(time.Now())
	every, _ := l.reportInterval()
	in := report.Input{RunID: l.base.RunID, File: l.base.File, Abort: l.base.Abort, MaxDrift: l.base.Verify.MaxDrift, Plan: l.plan,
		Warmup: l.warmup(), GracefulStop: k6options.GracefulStop, ThresholdsFailed: failedThresholds,
		Expected: l.expected.Reports(), Profile: profile, Windows: l.win.List(), WindowSecs: every.Seconds(), Rules: builtRules(l)}
	if l.shard.Count > 1 {
		in.Shard = fmt.Sprintf("%d/%d", l.shard.Index, l.shard.Count)
	}
	if l.base.Desktop.Fraction > 0 {
		in.DesktopMode = l.base.Desktop.Mode
	}
	for _, st := range l.plan {
		counts := l.base.CountsAt(st.Users, l.shard)
		cl := map[string]int{}
		for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
			if counts[k] > 0 {
				cl[k.String()] = counts[k]
			}
		}
		in.Clients = append(in.Clients, cl)
	}
	for i := 0; i <= len(l.plan); i++ {
		c, cores := l.gen.Cell(i)
		in.CPU, in.Cores = append(in.CPU, c), cores
	}
	l.preMu.Lock()
	in.RelayLimits = l.relayLimits
	l.preMu.Unlock()
	l.seedMu.Lock()
	in.Seed = l.seedRes
	if l.seedErr != nil {
		in.SetupError = l.seedErr.Error()
	}
	l.seedMu.Unlock()
	in.Warnings = report.RelayLimitWarnings(l.base, in.RelayLimits)
	// The scenario's own warnings (a short run, a connect burst, …) are
	// checks at warn and in the JSON report, not only console lines
	// (issue 41 item 10).
	in.Warnings = append(in.Warnings, l.base.Warnings()...)
	if l.identityWarning != "" {
		in.Warnings = append(in.Warnings, l.identityWarning)
	}
	if l.m != nil {
		in.RunEnd = l.m.runEndReason()
		in.RelayLogs = l.m.relayLogs
		in.RelayMetrics = l.m.relayMetricsRep
		in.AckedByKind = l.acked.final
		in.Outputs = l.m.outputDeliveries()
	}
	in.Durability, in.Unacked, in.Sweep = l.durability, l.unackedRep, l.swept
	if l.ledger != nil && l.win.Started() {
		in.Ledger = l.ledger.l.Report()
		in.Ledger.Visibility = l.visRep
	}
	in.Drills = l.drillReports()
	in.Target = "embedded"
	if l.m != nil {
		in.Version = l.m.opts.Version
	}
	if !l.base.Embedded() {
		in.Target = l.base.Target.WSURL
	}
	if l.drills != nil && l.drills.det != nil {
		l.preMu.Lock()
		in.Connections = l.drills.det.Connections() + l.preflightSockets
		l.preMu.Unlock()
	}
	if st := l.ledger; st != nil {
		in.StartUnixMs = st.start.Load() / int64(time.Millisecond)
	}
	if t := l.win.Start(); in.StartUnixMs == 0 && !t.IsZero() {
		in.StartUnixMs = t.UnixMilli()
	}
	return report.Build(in, l.agg.Totals())
}

// stepsJSON is sc.steps(): the ramp steps' plan.
func stepsJSON(l *loaded) []map[string]any {
	var out []map[string]any
	for i, st := range l.plan {
		out = append(out, map[string]any{"index": i, "users": st.Users, "start_s": st.Start.Seconds(),
			"ramp_end_s": st.RampEnd.Seconds(), "end_s": st.End.Seconds()})
	}
	return out
}

// startWindows begins the windows at the population scenarios' start
// (once): a ticker closes one every interval and prints it to the console,
// and the generator's meter starts.
func (l *loaded) startWindows(start time.Time) {
	every, print := l.reportInterval()
	from, ok := l.win.Begin(start, every, time.Now())
	if !ok {
		return
	}
	done := make(chan struct{})
	l.winMu.Lock()
	l.genDone = done
	l.winMu.Unlock()
	go func() { defer close(done); l.watchGenerator(start, l.winStop) }()
	go l.runLedger(start, l.winStop)
	l.startDrills(start)
	go func() {
		next := from.Add(every)
		for time.Until(next) < 0 {
			next = next.Add(every)
		}
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		for {
			select {
			case <-l.winStop:
				return
			case <-t.C:
				l.win.NoteRSS(float64(sysmem.ProcessRSS()) / (1 << 20))
				wr := l.win.Close(next, l.agg.LiveClients())
				if print && l.m.opts.Console != nil {
					_, _ = io.WriteString(l.m.opts.Console, wr.Text(l.base.RunID))
				}
				next = next.Add(every)
				t.Reset(time.Until(next))
			}
		}
	}()
}

// stopWindows stops the ticker; the partial window is closed by the report.
// It waits (briefly) for the generator's watcher, so the last step's
// buzz_generator_saturated is pushed while teardown still runs, before the
// run's last flush to the outputs.
func (l *loaded) stopWindows() {
	l.winStopOnce.Do(func() { close(l.winStop) })
	l.winMu.Lock()
	done := l.genDone
	l.winMu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}
}

// finalWindow closes the partial window at the end of the run, if it holds
// anything, so the report's windows cover the run to its end.
func (l *loaded) finalWindow(now time.Time) {
	if l.win.Started() && !l.win.Empty() {
		l.win.Close(now, l.agg.LiveClients())
	}
}

// reportInterval is the window length and whether blocks are printed:
// --report-interval, or DefaultReportInterval of the scenario's length
// (also when --report-interval 0s prints none).
func (l *loaded) reportInterval() (time.Duration, bool) {
	iv := l.m.opts.ReportInterval
	if iv > 0 {
		return iv, true
	}
	// By default the window blocks are printed only for runs of
	// report.PrintWindowsFrom or longer: a shorter run's step tables say the same,
	// and 4 blocks were 40 of a smoke run's lines (issue 26 item 8). The
	// windows are recorded either way (the JSON, the HTML plots).
	d := l.base.Duration()
	return report.DefaultReportInterval(d), iv == 0 && d >= report.PrintWindowsFrom
}

// warmup is --warmup, else [abort] warmup_secs.
func (l *loaded) warmup() time.Duration {
	if w := l.m.opts.Warmup; w != nil {
		return *w
	}
	return scenario.Secs(l.base.Abort.WarmupSecs)
}
