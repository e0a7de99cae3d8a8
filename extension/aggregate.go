package extension

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// opAgg is one operation's outcomes within one cell. Every operation
// started is settled exactly once as one of ok, errors, throttled,
// abandoned (cut short by the client's own close: a session end, the
// stop) or cut (cut short by an abort); pending is what was still in flight
// at the end of the window (it settles in a later one).
type opAgg struct {
	trend                            metrics.Sink // successes, ms
	ok, errors, throttled, abandoned int64
	cut, unfinished, started         int64       // cut by an abort; of errors, unfinished at stop; started in the cell
	pending                          int64       // in flight at the end of the window (set when merging)
	errTexts                         errorCounts // normalised (errtext.go)
	// sched holds the operations a schedule made (Result.Due set): latency
	// from the due time and lag due → start (generator.go); nil until one.
	sched *schedAgg
}

func newOpAgg() *opAgg { return &opAgg{trend: metrics.NewSink(metrics.Trend)} }

func (o *opAgg) addError(text string) {
	o.errors++
	if text == "" {
		text = "(no error text)"
	}
	o.errTexts.add(NormaliseError(text), 1)
}

func (o *opAgg) add(r relayclient.Result, at time.Time) {
	if !r.Due.IsZero() {
		if o.sched == nil {
			o.sched = newSchedAgg()
		}
		o.sched.add(r, at)
	}
	switch r.Outcome {
	case relayclient.OutcomeOK:
		o.ok++
		o.trend.Add(ms(r.Duration), at)
	case relayclient.OutcomeError:
		o.addError(r.Error)
		if strings.HasPrefix(r.Error, "unfinished at stop") {
			o.unfinished++
		}
	case relayclient.OutcomeThrottled:
		o.throttled++
	case relayclient.OutcomePending:
		if isCut(r) {
			o.cut++
		} else {
			o.abandoned++
		}
	}
}

// isCut reports whether r is an operation an abort cut short.
func isCut(r relayclient.Result) bool {
	return r.Outcome == relayclient.OutcomePending && strings.HasPrefix(r.Error, models.CutByAbort)
}

// merge adds b's numbers to o.
func (o *opAgg) merge(b *opAgg) {
	o.ok += b.ok
	o.errors += b.errors
	o.throttled += b.throttled
	o.abandoned += b.abandoned
	o.cut += b.cut
	o.unfinished += b.unfinished
	o.started += b.started
	o.pending += b.pending
	_ = o.trend.Merge(b.trend) // both are Trend sinks: cannot fail
	o.errTexts.merge(&b.errTexts)
	if b.sched != nil {
		if o.sched == nil {
			o.sched = newSchedAgg()
		}
		o.sched.merge(b.sched)
	}
}

type exitKey struct {
	kind, reason string
}

// cellKey names one aggregation cell: a ramp stage (2i is step i's ramp,
// 2i+1 its hold; 2·len(plan) is the shutdown), the population that recorded
// it (customKind for the low-level API) and the operation.
type cellKey struct {
	stage, kind int
	op          string
}

// customKind is the population index of low-level operations.
const customKind = int(scenario.NumKinds)

// aggregator keeps the report's numbers: every operation by stage and
// population (a step merges its two stages and every population), the
// seed's operations and the clients' exits. Every sink of the loaded
// scenario feeds it.
type aggregator struct {
	sc   *scenario.Scenario
	plan []scenario.StepPlan

	mu          sync.Mutex
	cells       map[cellKey]*opAgg
	pendingEnd  map[cellKey]int64 // in flight at the end of a stage (kind 0)
	setup       map[string]*opAgg
	warmup      map[string]*opAgg // settled in the warm-up, not judged
	exits       map[exitKey]int64
	exitsByStep []map[exitKey]int64 // len(plan)+1
	exitTexts   []string
	interrupted [scenario.NumKinds]int64 // clients cut off by an abort
	started     [scenario.NumKinds]int64 // clients that ran a session
	live        [scenario.NumKinds]int64
	startTime   time.Time // the population scenarios' timeline start
	// abortAt is when the run was aborted (zero: it was not); the report's
	// timeline ends there.
	abortAt time.Time
	// firstSessions counts clients by the step their first session began
	// in (len(plan): after the last hold), so a step cut by an abort says
	// whether any client of its own ever started.
	firstSessions []map[string]int64
}

func newAggregator(sc *scenario.Scenario, plan []scenario.StepPlan) *aggregator {
	a := &aggregator{sc: sc, plan: plan, cells: map[cellKey]*opAgg{}, pendingEnd: map[cellKey]int64{},
		setup: map[string]*opAgg{}, warmup: map[string]*opAgg{}, exits: map[exitKey]int64{}, exitsByStep: make([]map[exitKey]int64, len(plan)+1),
		firstSessions: make([]map[string]int64, len(plan)+1)}
	for i := range a.exitsByStep {
		a.exitsByStep[i] = map[exitKey]int64{}
		a.firstSessions[i] = map[string]int64{}
	}
	return a
}

func (a *aggregator) cell(k cellKey) *opAgg {
	o := a.cells[k]
	if o == nil {
		o = newOpAgg()
		a.cells[k] = o
	}
	return o
}

// record adds one Result of population kind started in startStage and
// settled in stage; straddled lists the stages whose end it was still in
// flight at. It returns the in-flight counts at those ends after the
// addition (for the pending gauge).
func (a *aggregator) record(r relayclient.Result, kind, startStage, stage int, straddled []int, at time.Time) (pending []int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cell(cellKey{stage, kind, r.Op}).add(r, at)
	a.cell(cellKey{startStage, kind, r.Op}).started++
	for _, s := range straddled {
		k := cellKey{stage: s, op: r.Op}
		a.pendingEnd[k]++
		pending = append(pending, a.pendingEnd[k])
	}
	return pending
}

// merged is the ops of the given stages and of the populations keep
// accepts (nil: all), merged, plus as pending the operations in flight at
// the end of endStage (−1: none).
func (a *aggregator) merged(stages []int, keep func(kind int) bool, endStage int) map[string]*opAgg {
	in := map[int]bool{}
	for _, s := range stages {
		in[s] = true
	}
	out := map[string]*opAgg{}
	for k, c := range a.cells {
		if in[k.stage] && (keep == nil || keep(k.kind)) {
			opIn(out, k.op).merge(c)
		}
	}
	for k, n := range a.pendingEnd {
		if k.stage == endStage {
			opIn(out, k.op).pending += n
		}
	}
	return out
}

// opIn is m's aggregate of op, added when m has none.
func opIn(m map[string]*opAgg, op string) *opAgg {
	o := m[op]
	if o == nil {
		o = newOpAgg()
		m[op] = o
	}
	return o
}

// recordWarmup adds one Result settled in the warm-up.
func (a *aggregator) recordWarmup(r relayclient.Result, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	opIn(a.warmup, r.Op).add(r, at)
}

func (a *aggregator) recordSetup(r relayclient.Result, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	opIn(a.setup, r.Op).add(r, at)
}

func (a *aggregator) exit(kind scenario.Kind, step int, reason, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.exits[exitKey{kind.String(), reason}]++
	a.exitsByStep[step][exitKey{kind.String(), reason}]++
	if text != "" && len(a.exitTexts) < 10 {
		a.exitTexts = append(a.exitTexts, kind.String()+": "+text)
	}
}

// noteAbort records the abort moment (the first one wins).
func (a *aggregator) noteAbort(t time.Time) {
	a.mu.Lock()
	if a.abortAt.IsZero() {
		a.abortAt = t
	}
	a.mu.Unlock()
}

// abortTime is the abort moment (zero: none so far).
func (a *aggregator) abortTime() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.abortAt
}

// firstSession counts a client's first session, begun in step.
func (a *aggregator) firstSession(kind scenario.Kind, step int) {
	a.mu.Lock()
	a.firstSessions[min(step, len(a.firstSessions)-1)][kind.String()]++
	a.mu.Unlock()
}

func (a *aggregator) interrupt(kind scenario.Kind) {
	a.mu.Lock()
	a.interrupted[kind]++
	a.mu.Unlock()
}

// clientDelta changes the live count of a kind and returns it.
func (a *aggregator) clientDelta(kind scenario.Kind, d int64, first bool) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live[kind] += d
	if first {
		a.started[kind]++
	}
	return a.live[kind]
}

func (a *aggregator) noteStart(t time.Time) {
	a.mu.Lock()
	if a.startTime.IsZero() || t.Before(a.startTime) {
		a.startTime = t
	}
	a.mu.Unlock()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sortedOps lists op names in a stable order: the connection ops first as
// buzz-loadgen prints them, then alphabetical.
func sortedOps(m map[string]*opAgg) []string {
	order := map[string]int{"connect": 0, "auth": 1, "subscribe_eose": 2, "history": 3, "publish": 4, "deliver": 5,
		"http_query": 6, "http_events": 7, "hot_reply": 8, "thread_fetch": 9, "turn_context": 10}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		oi, iok := order[out[i]]
		oj, jok := order[out[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return out[i] < out[j]
	})
	return out
}
