package report

import (
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// OpAgg is one operation's outcomes within one cell. Every operation
// started is settled exactly once as one of ok, errors, throttled,
// abandoned (cut short by the client's own close: a session end, the
// stop) or cut (cut short by an abort); pending is what was still in flight
// at the end of the window (it settles in a later one).
type OpAgg struct {
	trend                            metrics.Sink // successes, ms
	ok, errors, throttled, abandoned int64
	unavailable                      int64       // refused because the shared limiter was down (not a quota throttle)
	expected                         int64       // errors an [[expect]] rule matched (expected.go): not failures
	cut, unfinished, started         int64       // cut by an abort; of errors, unfinished at stop; started in the cell
	pending                          int64       // in flight at the end of the window (set when merging)
	errTexts                         errorCounts // normalised (errtext.go)
	// sched holds the operations a schedule made (Result.Due set): latency
	// from the due time and lag due → start (generator.go); nil until one.
	sched *schedAgg
}

// AdmissionUnavailableText is Buzz's answer while its shared limiter is
// unavailable (docs/buzz-names.md §h): "rate-limited: shared admission
// unavailable", OK false on the socket, HTTP 503 on the bridge.
const AdmissionUnavailableText = "shared admission unavailable"

func newOpAgg() *OpAgg { return &OpAgg{trend: metrics.NewSink(metrics.Trend)} }

func (o *OpAgg) addError(text string) {
	o.errors++
	if text == "" {
		text = "(no error text)"
	}
	o.errTexts.add(NormaliseError(text), 1)
}

func (o *OpAgg) add(r relayclient.Result, at time.Time) {
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
		// Buzz's limiter failing closed (Redis down) answers as a throttle
		// but is no quota: counted apart (issue 41 item 9).
		if strings.Contains(r.Error, AdmissionUnavailableText) {
			o.unavailable++
		} else {
			o.throttled++
		}
	case OutcomeExpected:
		o.expected++
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
func (o *OpAgg) merge(b *OpAgg) {
	o.ok += b.ok
	o.errors += b.errors
	o.throttled += b.throttled
	o.unavailable += b.unavailable
	o.expected += b.expected
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

// ExitKey is an unexpected exit's client kind and reason.
type ExitKey struct {
	Kind, Reason string
}

// cellKey names the in-flight count of an operation at the end of a ramp
// stage (2i is step i's ramp, 2i+1 its hold; 2·len(plan) is the shutdown).
type cellKey struct {
	stage int
	op    string
}

// CustomKind is the population index of low-level operations.
const CustomKind = int(scenario.NumKinds)

// Aggregator keeps the report's numbers: every operation by stage and
// population (a step merges its two stages and every population), the
// seed's operations and the clients' exits. Every sink of the loaded
// scenario feeds it.
//
// The operations settled in the stages and the warm-up are counted in a
// few shards (recShards), each with its own lock, so the connection
// goroutines of thousands of clients recording at once rarely wait for
// each other; readers merge the shards (every count adds up and an HDR
// histogram merge is exact, so the merge is what one aggregation would
// hold). A shard's cells are indexed by op id and stage, not looked up in
// a map: the sinks resolve an op's id once.
type Aggregator struct {
	sc   *scenario.Scenario
	plan []scenario.StepPlan

	ops    opTable
	shards []aggShard
	// Homes hands a record the shard it tries first.
	Homes Homes
	// abortSeen is abortAt once set, for the record path (no lock).
	abortSeen atomic.Pointer[time.Time]

	// mu guards the fields below; a reader of the shards takes it first
	// (then each shard's), as does a record that straddles a stage end.
	mu          sync.Mutex
	pendingEnd  map[cellKey]int64 // in flight at the end of a stage (kind 0)
	setup       map[string]*OpAgg
	exits       map[ExitKey]int64
	exitsByStep []map[ExitKey]int64 // len(plan)+1
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

// aggShard is one shard of the stage cells and the warm-up.
type aggShard struct {
	mu    sync.Mutex
	cells [][]*OpAgg // [op id][stage·(CustomKind+1) + kind]; nil until used
	warm  []*OpAgg   // [op id]: settled in the warm-up, not judged
	_     [64]byte   // keep shards' locks on separate cache lines
}

// recShards is how many shards the Aggregator and the windows count in:
// twice the cores that run goroutines at once (a record holds a shard
// for a few hundred ns; a busy one is skipped), at most 16.
func recShards() int {
	n := 2
	for n < 2*runtime.GOMAXPROCS(0) && n < 16 {
		n *= 2
	}
	return n
}

// opTable interns op names as small ids (the index of the shards' slices).
type opTable struct {
	mu    sync.Mutex
	ids   map[string]int
	names []string
}

// id is op's id, added when new.
func (t *opTable) id(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.ids[op]; ok {
		return i
	}
	if t.ids == nil {
		t.ids = map[string]int{}
	}
	t.ids[op] = len(t.names)
	t.names = append(t.names, op)
	return len(t.names) - 1
}

// list is the names by id so far (ids only grow: a copy of the prefix).
func (t *opTable) list() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.names[:len(t.names):len(t.names)]
}

func NewAggregator(sc *scenario.Scenario, plan []scenario.StepPlan) *Aggregator {
	a := &Aggregator{sc: sc, plan: plan, shards: make([]aggShard, recShards()), pendingEnd: map[cellKey]int64{},
		setup: map[string]*OpAgg{}, exits: map[ExitKey]int64{}, exitsByStep: make([]map[ExitKey]int64, len(plan)+1),
		firstSessions: make([]map[string]int64, len(plan)+1)}
	for i := range a.exitsByStep {
		a.exitsByStep[i] = map[ExitKey]int64{}
		a.firstSessions[i] = map[string]int64{}
	}
	return a
}

// Homes hands a record the shard it tries first, the same one to the
// records of one core (P) as far as sync.Pool keeps each P's last token:
// a core then mostly writes the shards' histograms in its own cache, where
// a shard per sink had both cores write every shard.
type Homes struct {
	pool sync.Pool
	next atomic.Uint32
}

// HomeTok is a record's shard to try first.
type HomeTok struct{ I int }

// Get is the caller's token; Put it back after the record.
func (h *Homes) Get() *HomeTok {
	if t, ok := h.pool.Get().(*HomeTok); ok {
		return t
	}
	return &HomeTok{I: int(h.next.Add(1) - 1)}
}

// Put returns a token.
func (h *Homes) Put(t *HomeTok) { h.pool.Put(t) }

// lockShard locks and returns a shard (lockFree).
func (a *Aggregator) lockShard(home int) *aggShard {
	return &a.shards[lockFree(len(a.shards), home, func(i int) *sync.Mutex { return &a.shards[i].mu })]
}

// lockFree locks one of n shards, whose locks mu gives, and returns its
// index: home's if free, else the first free one after it, else (all busy)
// home's once it is free. The Aggregator and the windows share it.
func lockFree(n, home int, mu func(i int) *sync.Mutex) int {
	for i := 0; i < n; i++ {
		if j := (home + i) % n; mu(j).TryLock() {
			return j
		}
	}
	mu(home % n).Lock()
	return home % n
}

// opAt is (*s)[id], grown and created when missing.
func opAt(s *[]*OpAgg, id int) *OpAgg {
	for id >= len(*s) {
		*s = append(*s, nil)
	}
	o := (*s)[id]
	if o == nil {
		o = newOpAgg()
		(*s)[id] = o
	}
	return o
}

// cellsPerOp is the number of (stage, kind) cells of one op.
func (a *Aggregator) cellsPerOp() int { return (2*len(a.plan) + 1) * (CustomKind + 1) }

// cell is the shard's cell of op id, stage and kind (sh.mu held).
func (a *Aggregator) cell(sh *aggShard, id, stage, kind int) *OpAgg {
	for id >= len(sh.cells) {
		sh.cells = append(sh.cells, nil)
	}
	row := sh.cells[id]
	if row == nil {
		row = make([]*OpAgg, a.cellsPerOp())
		sh.cells[id] = row
	}
	i := stage*(CustomKind+1) + kind
	o := row[i]
	if o == nil {
		o = newOpAgg()
		row[i] = o
	}
	return o
}

// RecordID adds one Result of population kind, op id (OpID), started in
// startStage and settled in stage, trying shard home first; straddled lists
// the stages whose end it was still in flight at. It returns the in-flight
// counts at those ends after the addition (for the pending gauge).
func (a *Aggregator) RecordID(id, home int, r relayclient.Result, kind, startStage, stage int, straddled []int, at time.Time) (pending []int64) {
	if len(straddled) > 0 {
		// Rare (in flight at a stage's end): under a.mu, so the cells and
		// the pending count change together for a reader.
		a.mu.Lock()
		defer a.mu.Unlock()
	}
	sh := a.lockShard(home)
	a.cell(sh, id, stage, kind).add(r, at)
	a.cell(sh, id, startStage, kind).started++
	sh.mu.Unlock()
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
func (a *Aggregator) merged(stages []int, keep func(kind int) bool, endStage int) map[string]*OpAgg {
	out := map[string]*OpAgg{}
	a.eachShard(func(sh *aggShard, names []string) {
		for id, row := range sh.cells {
			if row == nil {
				continue
			}
			for _, st := range stages {
				if st < 0 || (st+1)*(CustomKind+1) > len(row) {
					continue
				}
				for kind, c := range row[st*(CustomKind+1) : (st+1)*(CustomKind+1)] {
					if c != nil && (keep == nil || keep(kind)) {
						opIn(out, names[id]).merge(c)
					}
				}
			}
		}
	})
	for k, n := range a.pendingEnd {
		if k.stage == endStage {
			opIn(out, k.op).pending += n
		}
	}
	return out
}

// opIn is m's aggregate of op, added when m has none.
func opIn(m map[string]*OpAgg, op string) *OpAgg {
	o := m[op]
	if o == nil {
		o = newOpAgg()
		m[op] = o
	}
	return o
}

// RecordWarmupID adds one Result settled in the warm-up.
func (a *Aggregator) RecordWarmupID(id, home int, r relayclient.Result, at time.Time) {
	sh := a.lockShard(home)
	opAt(&sh.warm, id).add(r, at)
	sh.mu.Unlock()
}

// warmupOps is the warm-up's operations, merged (a.mu held).
func (a *Aggregator) warmupOps() map[string]*OpAgg {
	out := map[string]*OpAgg{}
	a.eachShard(func(sh *aggShard, names []string) {
		for id, o := range sh.warm {
			if o != nil {
				opIn(out, names[id]).merge(o)
			}
		}
	})
	return out
}

// eachShard calls f with each shard locked in turn and the op names by id,
// listed after the lock so that every id of the shard's cells is in it.
func (a *Aggregator) eachShard(f func(sh *aggShard, names []string)) {
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		f(sh, a.ops.list())
		sh.mu.Unlock()
	}
}

func (a *Aggregator) RecordSetup(r relayclient.Result, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	opIn(a.setup, r.Op).add(r, at)
}

func (a *Aggregator) Exit(kind scenario.Kind, step int, reason, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.exits[ExitKey{kind.String(), reason}]++
	a.exitsByStep[step][ExitKey{kind.String(), reason}]++
	if text != "" && len(a.exitTexts) < 10 {
		a.exitTexts = append(a.exitTexts, kind.String()+": "+text)
	}
}

// NoteAbort records the abort moment (the first one wins).
func (a *Aggregator) NoteAbort(t time.Time) {
	a.mu.Lock()
	if a.abortAt.IsZero() {
		a.abortAt = t
		a.abortSeen.Store(&t)
	}
	a.mu.Unlock()
}

// AbortTime is the abort moment (zero: none so far).
func (a *Aggregator) AbortTime() time.Time {
	if t := a.abortSeen.Load(); t != nil {
		return *t
	}
	return time.Time{}
}

// firstSession counts a client's first session, begun in step.
func (a *Aggregator) FirstSession(kind scenario.Kind, step int) {
	a.mu.Lock()
	a.firstSessions[min(step, len(a.firstSessions)-1)][kind.String()]++
	a.mu.Unlock()
}

func (a *Aggregator) Interrupt(kind scenario.Kind) {
	a.mu.Lock()
	a.interrupted[kind]++
	a.mu.Unlock()
}

// ClientDelta changes the live count of a kind and returns it.
func (a *Aggregator) ClientDelta(kind scenario.Kind, d int64, first bool) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live[kind] += d
	if first {
		a.started[kind]++
	}
	return a.live[kind]
}

func (a *Aggregator) NoteStart(t time.Time) {
	a.mu.Lock()
	if a.startTime.IsZero() || t.Before(a.startTime) {
		a.startTime = t
	}
	a.mu.Unlock()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// SortedOps lists op names in a stable order: the connection ops first as
// buzz-loadgen prints them, then alphabetical.
func SortedOps[V any](m map[string]V) []string {
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

// OpID is op's id, the index a record of it passes (RecordID, Windows.AddID).
func (a *Aggregator) OpID(op string) int { return a.ops.id(op) }

// Totals is what the aggregation holds at one moment, merged across its
// shards: Build's input.
type Totals struct {
	Setup, Warmup map[string]*OpAgg
	Steps         []map[string]*OpAgg // by step: its ramp and hold, pending at the hold's end
	Shutdown      map[string]*OpAgg
	Exits         map[ExitKey]int64
	ExitsByStep   []map[ExitKey]int64 // len(plan)+1: the last is the shutdown
	ExitTexts     []string
	Interrupted   [scenario.NumKinds]int64
	FirstSessions []map[string]int64 // len(plan)+1
	Start         time.Time          // the population scenarios' timeline start
	AbortAt       time.Time          // zero: no abort
}

// Totals merges the aggregation as it stands.
func (a *Aggregator) Totals() Totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := Totals{Warmup: a.warmupOps(), Shutdown: a.merged([]int{2 * len(a.plan)}, nil, -1),
		Exits: copyExits(a.exits), ExitTexts: append([]string(nil), a.exitTexts...), Interrupted: a.interrupted,
		Start: a.startTime, AbortAt: a.abortAt}
	t.Setup = map[string]*OpAgg{}
	for k, v := range a.setup {
		c := newOpAgg()
		c.merge(v)
		t.Setup[k] = c
	}
	for i := range a.plan {
		t.Steps = append(t.Steps, a.merged([]int{2 * i, 2*i + 1}, nil, 2*i+1))
	}
	for i := range a.exitsByStep {
		t.ExitsByStep = append(t.ExitsByStep, copyExits(a.exitsByStep[i]))
		t.FirstSessions = append(t.FirstSessions, copyCounts(a.firstSessions[i]))
	}
	return t
}

func copyExits(m map[ExitKey]int64) map[ExitKey]int64 {
	out := make(map[ExitKey]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// StepGenerator is step's generator report from its CPU cell and the
// step's scheduled operations so far.
func (a *Aggregator) StepGenerator(step int, cell CPUCell, cores int, maxLagMs float64) *GeneratorReport {
	a.mu.Lock()
	ops := a.merged([]int{2 * step, 2*step + 1}, nil, 2*step+1)
	a.mu.Unlock()
	return StepGenerator(cell, cores, ops, maxLagMs)
}
