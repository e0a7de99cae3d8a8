package thresholds

import (
	"fmt"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Options configure an Evaluator.
type Options struct {
	// RunStart is when the run timer started (before setup): Counter rates
	// and delayAbortEval count from it.
	RunStart time.Time
	// Now is the clock (time.Now when nil); tests inject their own.
	Now func() time.Time
}

// Status is a threshold's most recent result.
type Status struct {
	*Threshold
	// Evaluated is false until the threshold was judged once.
	Evaluated bool
	// OK is true when it passed (or its value was missing).
	OK bool
	// Value is the aggregation it was judged on, when HasValue.
	Value    float64
	HasValue bool
}

// Outcome is what one evaluation found.
type Outcome struct {
	// Failed lists the thresholds that failed in this evaluation.
	Failed []Status
	// Abort is true when a failing abortOnFail threshold asks to stop the
	// run now (exit code 99); AbortedBy is the first such threshold.
	Abort     bool
	AbortedBy *Status
}

// StageVerdict is a windowed threshold's result for one ramp stage, or
// for a run of consecutive stages judged as one window.
type StageVerdict struct {
	Key, Source string
	Scenario    string // the scenario whose stage ended
	// Stage is the window's first stage; StageName the name of the one
	// that ended it (a named run's stages share it).
	Stage      int
	StageName  string
	Start, End time.Time
	OK         bool
	Value      float64
	HasValue   bool
	// Samples is how many values the window held.
	Samples int64
}

// Evaluator judges a Set over a Collector's sinks. Safe for concurrent use.
type Evaluator struct {
	set   *Set
	c     *metrics.Collector
	opts  Options
	keys  []string
	mu    sync.Mutex
	state []Status // parallel to set.Thresholds
	win   []*windowState
	stage map[string]stageInfo // scenario → the stage in progress
	verd  []StageVerdict
}

type windowState struct {
	key      string // the threshold's selector
	scenario string
	w        *metrics.Window
	idx      []int // thresholds judged on it
}

type stageInfo struct {
	index int
	name  string
	start time.Time
}

// NewEvaluator tracks every threshold key on the collector (so sub-metrics
// get their sinks and empty metrics still show) and creates the stage
// windows of windowed thresholds.
func NewEvaluator(set *Set, c *metrics.Collector, opts Options) (*Evaluator, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RunStart.IsZero() {
		opts.RunStart = opts.Now()
	}
	e := &Evaluator{set: set, c: c, opts: opts, keys: set.Keys(), state: make([]Status, len(set.Thresholds)),
		stage: map[string]stageInfo{}}
	type winID struct{ key, scenario string }
	byKey := map[winID]*windowState{}
	for i, t := range set.Thresholds {
		e.state[i] = Status{Threshold: t, OK: true}
		if err := c.Track(t.Key); err != nil {
			return nil, &Error{Metric: t.Key, Expr: t.Source, Err: err}
		}
		if t.Window == "" {
			continue
		}
		// One window per selector and stage clock: `scenario` says whose
		// stage events cut it, the selector which samples it holds.
		id := winID{t.Key, t.Scenario}
		ws := byKey[id]
		if ws == nil {
			w, err := c.AddWindow(t.Key)
			if err != nil {
				return nil, &Error{Metric: t.Key, Expr: t.Source, Err: err}
			}
			ws = &windowState{key: t.Key, scenario: t.Scenario, w: w}
			byKey[id] = ws
			e.win = append(e.win, ws)
		}
		ws.idx = append(ws.idx, i)
	}
	return e, nil
}

func (e *Evaluator) runTime(at time.Time) time.Duration {
	d := at.Sub(e.opts.RunStart)
	if d < 0 {
		return 0
	}
	return d
}

// judge evaluates one threshold on a sink; nil sink means an empty one.
func judge(t *Threshold, sink metrics.Sink, runTime time.Duration) (ok bool, v float64, has bool) {
	if sink == nil {
		sink = metrics.NewSink(t.Metric.Type)
	}
	v, has = sink.Value(t.Stat, runTime)
	if !has {
		return true, 0, false // a missing value passes
	}
	return t.Op.Compare(v, t.Value), v, true
}

func (e *Evaluator) abortDue(t *Threshold, runTime time.Duration) bool {
	return t.AbortOnFail && (t.DelayAbortEval == 0 || t.DelayAbortEval < runTime)
}

// Check is the periodic evaluation (every 2 s): thresholds whose sink is
// still empty are skipped, and a failing abortOnFail threshold past its
// delayAbortEval sets Abort.
func (e *Evaluator) Check() Outcome { return e.evaluate(false) }

// Final is the end-of-test evaluation: empty sinks are judged too, and
// windowed thresholds report failure when any stage failed them. It never
// sets Abort.
func (e *Evaluator) Final() Outcome { return e.evaluate(true) }

func (e *Evaluator) evaluate(final bool) Outcome {
	now := e.opts.Now()
	rt := e.runTime(now)
	var snap *metrics.Snapshot
	if len(e.keys) > 0 {
		snap = e.c.Snapshot(rt, e.keys...)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out Outcome
	for i := range e.state {
		st := &e.state[i]
		t := st.Threshold
		if t.Window != "" {
			if final {
				st.Evaluated = true
				if !st.OK {
					out.Failed = append(out.Failed, *st)
				}
			}
			continue
		}
		sink, _ := snap.Lookup(t.Key)
		if !final && (sink == nil || sink.IsEmpty()) {
			continue
		}
		ok, v, has := judge(t, sink, rt)
		st.Evaluated, st.OK, st.Value, st.HasValue = true, ok, v, has
		if ok {
			continue
		}
		out.Failed = append(out.Failed, *st)
		if !final && !out.Abort && e.abortDue(t, rt) {
			out.Abort = true
			cp := *st
			out.AbortedBy = &cp
		}
	}
	return out
}

// StageStarted opens the stage windows of thresholds that follow this
// scenario (or every scenario).
func (e *Evaluator) StageStarted(scenario string, index int, name string, at time.Time) {
	e.mu.Lock()
	e.stage[scenario] = stageInfo{index: index, name: name, start: at}
	ws := e.windowsFor(scenario)
	e.mu.Unlock()
	if len(ws) > 0 {
		e.c.StartWindows(ws, at)
	}
}

func (e *Evaluator) windowsFor(scenario string) []*metrics.Window {
	var ws []*metrics.Window
	for _, w := range e.win {
		if w.scenario == "" || w.scenario == scenario {
			ws = append(ws, w.w)
		}
	}
	return ws
}

// StageEnded judges the windowed thresholds of this scenario over the
// samples of the stage that ended at `at`, records the verdicts, and sets
// Abort when a failing one has abortOnFail (respecting delayAbortEval).
// The window is everything since the last StageStarted of the scenario, so
// a caller that skips the inner end/start pairs of stages i..j (the runner
// does for stages named alike) gets one window over all of them.
func (e *Evaluator) StageEnded(scenario string, index int, name string, at time.Time) Outcome {
	e.mu.Lock()
	var states []*windowState
	for _, w := range e.win {
		if w.scenario == "" || w.scenario == scenario {
			states = append(states, w)
		}
	}
	info, started := e.stage[scenario]
	e.mu.Unlock()
	if len(states) == 0 {
		return Outcome{}
	}
	ws := make([]*metrics.Window, len(states))
	for i, s := range states {
		ws[i] = s.w
	}
	sinks := e.c.EndWindows(ws, at)
	rt := e.runTime(at)
	// A window may span several stages (the runner's named runs): it
	// started at info.index, at or before this one.
	if !started || info.index > index {
		info = stageInfo{index: index, name: name}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out Outcome
	for i, s := range states {
		for _, ti := range s.idx {
			st := &e.state[ti]
			t := st.Threshold
			ok, v, has := judge(t, sinks[i], rt)
			e.verd = append(e.verd, StageVerdict{Key: t.Key, Source: t.Source, Scenario: scenario, Stage: info.index,
				StageName: name, Start: info.start, End: at, OK: ok, Value: v, HasValue: has, Samples: sampleCount(sinks[i])})
			if !st.Evaluated || st.OK {
				st.Value, st.HasValue = v, has
			}
			st.Evaluated = true
			if ok {
				continue
			}
			st.OK = false
			out.Failed = append(out.Failed, *st)
			if !out.Abort && e.abortDue(t, rt) {
				out.Abort = true
				cp := *st
				out.AbortedBy = &cp
			}
		}
	}
	return out
}

func sampleCount(s metrics.Sink) int64 {
	switch s := s.(type) {
	case *metrics.TrendSink:
		return s.Count()
	case *metrics.RateSink:
		return s.Total()
	}
	if s.IsEmpty() {
		return 0
	}
	return -1 // counters and gauges do not count samples in a way worth reporting
}

// Statuses returns every threshold's most recent result, in Set order.
func (e *Evaluator) Statuses() []Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Status(nil), e.state...)
}

// StageVerdicts returns every windowed verdict so far, in the order judged.
func (e *Evaluator) StageVerdicts() []StageVerdict {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]StageVerdict(nil), e.verd...)
}

// String describes a failure for logs: `p(95)<200 on http_req_duration`.
func (s Status) String() string {
	if s.HasValue {
		return fmt.Sprintf("%s on %s (%s=%g)", s.Source, s.Key, s.Stat.Name, s.Value)
	}
	return fmt.Sprintf("%s on %s", s.Source, s.Key)
}
