package extension

import (
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/drill"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
)

// The run side of the drills (issue 42): the detector sees every
// connection of the scenario's clients through their sinks (opSink.Watcher)
// and the declared drills are performed at their moments of the timeline.

// drillRun is a loaded scenario's drills and detector.
type drillRun struct {
	det *drill.Detector

	mu     sync.Mutex
	start  time.Time
	done   []drill.Performed
	timers []*time.Timer
	ctx    context.Context
	cancel context.CancelFunc
	// open is when the last performed drill's window closes (unix ns; 0:
	// none yet): every Result reads it, and only one inside a window takes mu.
	open atomic.Int64
	// elsewhere: another instance of a distributed run performs the
	// drills (the one that seeds, SeedRole): this one keeps their moments
	// as declared windows and does nothing, so a command drill runs once,
	// not once per runner.
	elsewhere bool
}

// notePerformer says whether this instance performs the declared drills
// (before the timeline starts; the first caller decides).
func (in *instance) notePerformer(l *loaded) {
	d := l.drills
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.start.IsZero() || len(l.base.Drills) == 0 {
		return
	}
	tup, err := in.m.segmentTuple(in)
	if err != nil {
		return // performs: a drill done twice is said in both reports, one never done is not
	}
	d.elsewhere = SeedRole(l.base.Embedded(), tup.Segment(), l.shard) == RoleWait
}

func newDrillRun() *drillRun {
	ctx, cancel := context.WithCancel(context.Background())
	return &drillRun{det: drill.New(), ctx: ctx, cancel: cancel}
}

// Watcher makes the sink a relayclient.WatcherSource.
func (s *opSink) Watcher() relayclient.Watcher { return s.l.drills.det }

// watchResult feeds the detector what a Result says of the connections:
// a connection that could not be made, a publish lost with its socket.
func (d *drillRun) watchResult(r *relayclient.Result, end time.Time) {
	switch {
	case r.Outcome != relayclient.OutcomeError:
	case r.Op == relayclient.OpConnect || r.Op == relayclient.OpAuth:
		d.det.Failed(end)
	case r.Event != nil && strings.HasPrefix(r.Error, "connection lost"):
		d.det.LostInFlight(end)
	}
}

// during counts a Result that settled at t to the declared drill whose
// window holds t (its errors, throttles and slowest operation), and
// reports whether it was an error in one: the drill's consequence, not a
// failure of the relay under load.
func (d *drillRun) during(r *relayclient.Result, t time.Time) bool {
	if t.UnixNano() >= d.open.Load() {
		return false // no drill's window open: the common case, lock-free
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.done) - 1; i >= 0; i-- { // the latest drill whose window holds t
		p := &d.done[i]
		if t.Before(p.At) || t.Sub(p.At) >= p.Window() {
			continue
		}
		switch r.Outcome {
		case relayclient.OutcomeError:
			if p.Errors == nil {
				p.Errors = map[string]int64{}
			}
			p.Errors[r.Op]++
			return true
		case relayclient.OutcomeThrottled:
			if p.Throttled == nil {
				p.Throttled = map[string]int64{}
			}
			p.Throttled[r.Op]++
		case relayclient.OutcomeOK:
			if ms := float64(r.Duration.Microseconds()) / 1000; ms > p.SlowestMs {
				p.SlowestMs, p.SlowestOp = ms, r.Op
			}
		}
		return false
	}
	return false
}

// startDrills schedules the scenario's declared drills from the timeline's
// start (once).
func (l *loaded) startDrills(start time.Time) {
	d := l.drills
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.start.IsZero() {
		return
	}
	d.start = start
	for _, dr := range l.base.Drills {
		at := time.Until(start.Add(time.Duration(dr.AtSecs * float64(time.Second))))
		d.timers = append(d.timers, time.AfterFunc(max(at, 0), func() {
			var r drill.Relay
			if len(dr.Command) == 0 && l.base.Embedded() {
				if rl, err := l.m.embedded(); err == nil && rl != nil {
					r = rl
				}
			}
			var p drill.Performed
			if d.elsewhere {
				p = drill.Performed{Drill: dr, At: time.Now(), Note: "performed by the instance whose execution segment starts at 0 (this one keeps its window)"}
			} else {
				p = drill.Perform(d.ctx, dr, r)
			}
			d.mu.Lock()
			d.done = append(d.done, p)
			if end := p.At.Add(p.Window()).UnixNano(); end > d.open.Load() {
				d.open.Store(end)
			}
			d.mu.Unlock()
		}))
	}
}

// stopDrills stops what is still to come and ends the detector's watch:
// what closes after the run (the embedded relay's own shutdown) is not a
// disruption of it.
func (l *loaded) stopDrills() {
	d := l.drills
	d.mu.Lock()
	for _, t := range d.timers {
		t.Stop()
	}
	d.mu.Unlock()
	d.cancel()
	d.det.Close()
}

// drillReports are the run's drills and disruptions, matched.
func (l *loaded) drillReports() []report.DrillReport {
	d := l.drills
	d.mu.Lock()
	start, done := d.start, append([]drill.Performed(nil), d.done...)
	for i := range done {
		done[i].Errors, done[i].Throttled = maps.Clone(done[i].Errors), maps.Clone(done[i].Throttled)
	}
	d.mu.Unlock()
	if start.IsZero() {
		return nil
	}
	within := time.Duration(l.base.Verify.DrillRecoverWithinSecs * float64(time.Second))
	return drill.Match(d.det.Reports(start, within), done, start)
}
