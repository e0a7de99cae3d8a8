package extension

import (
	"sort"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/scenario"
)

// maxErrorSamples is how many distinct error texts the report keeps per
// operation and step.
const maxErrorSamples = 3

// opAgg is one operation's outcomes within one step.
type opAgg struct {
	trend                          metrics.Sink // successes, ms
	ok, errors, throttled, pending int64
	errorTexts                     []string
}

func (a *opAgg) addError(text string) {
	a.errors++
	if text == "" || len(a.errorTexts) >= maxErrorSamples {
		return
	}
	for _, t := range a.errorTexts {
		if t == text {
			return
		}
	}
	a.errorTexts = append(a.errorTexts, text)
}

type exitKey struct {
	kind, reason string
}

// aggregator keeps the report's numbers: every operation by step (the
// shutdown is the step after the last), the seed's operations and the
// clients' exits. It is fed by every sink of the loaded scenario.
type aggregator struct {
	sc   *scenario.Scenario
	plan []scenario.StepPlan

	mu          sync.Mutex
	steps       []map[string]*opAgg // len(plan)+1: the last is the shutdown
	setup       map[string]*opAgg
	exits       map[exitKey]int64
	exitsByStep []map[exitKey]int64 // len(plan)+1
	exitTexts   []string
	started     [scenario.NumKinds]int64 // clients that ran a session
	live        [scenario.NumKinds]int64
	startTime   time.Time // the population scenarios' timeline start
}

func newAggregator(sc *scenario.Scenario, plan []scenario.StepPlan) *aggregator {
	a := &aggregator{sc: sc, plan: plan, steps: make([]map[string]*opAgg, len(plan)+1),
		setup: map[string]*opAgg{}, exits: map[exitKey]int64{}, exitsByStep: make([]map[exitKey]int64, len(plan)+1)}
	for i := range a.steps {
		a.steps[i] = map[string]*opAgg{}
		a.exitsByStep[i] = map[exitKey]int64{}
	}
	return a
}

func (a *aggregator) op(m map[string]*opAgg, name string) *opAgg {
	o := m[name]
	if o == nil {
		o = &opAgg{trend: metrics.NewSink(metrics.Trend)}
		m[name] = o
	}
	return o
}

// record adds one Result settled in step idx; straddled lists the steps
// whose end it was still in flight at. It returns the pending counts of
// those steps after the addition (for the pending gauge).
func (a *aggregator) record(r relay.Result, idx int, straddled []int, at time.Time) (pending []int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.op(a.steps[idx], r.Op)
	switch r.Outcome {
	case relay.OutcomeOK:
		o.ok++
		o.trend.Add(ms(r.Duration), at)
	case relay.OutcomeError:
		o.addError(r.Error)
	case relay.OutcomeThrottled:
		o.throttled++
	case relay.OutcomePending:
		o.pending++
	}
	for _, s := range straddled {
		p := a.op(a.steps[s], r.Op)
		p.pending++
		pending = append(pending, p.pending)
	}
	return pending
}

func (a *aggregator) recordSetup(r relay.Result, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.op(a.setup, r.Op)
	switch r.Outcome {
	case relay.OutcomeOK:
		o.ok++
		o.trend.Add(ms(r.Duration), at)
	case relay.OutcomeError:
		o.addError(r.Error)
	case relay.OutcomeThrottled:
		o.throttled++
	case relay.OutcomePending:
		o.pending++
	}
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

// sortedOps lists the op names of a step map in a stable order: the
// connection ops first as buzz-loadgen prints them, then alphabetical.
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
