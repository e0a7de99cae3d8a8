package extension

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
)

// opSink turns every relayclient.Result of one VU's clients into samples and into
// the report's aggregation. The step of a Result is the ramp step its
// settlement falls in, by the clock from the population scenarios' start
// (stage 2i and 2i+1 are step i); what settles after the last hold is the
// "shutdown" step. Record is called from connection goroutines.
type opSink struct {
	l     *loaded
	kind  int // population (report.CustomKind for the low-level API)
	met   *metricSet
	push  func(...metrics.Sample)
	data  func(sent, received int64) // the VU's data_sent / data_received
	start time.Time                  // the scenario timeline's start
	// warmup is the warm-up from start: what settles in it is not judged.
	warmup time.Duration

	// idx is what the sinks with this sink's base tags (the VU's tags)
	// resolved per op and step (shared: a record reads memory every sink
	// uses, not its own). retag replaces it when the VU's tags change.
	idx atomic.Pointer[recIndex]
	// last is the sink's last record's entry (a connection's reader records
	// one op in one step, its deliveries, over and over).
	last atomic.Pointer[recInfo]

	// periodic: the sink of a population client, whose iteration lasts the
	// whole session. Its bytes are written as data_sent / data_received
	// samples at most every dataEvery while it runs, so live outputs see
	// the traffic as it happens (the host writes a VU's bytes only when an
	// iteration ends); flushData hands the rest to the VU at the end.
	periodic           bool
	pendSent, pendRecv atomic.Int64
	lastData           atomic.Int64 // unix ns of the last data samples
}

// dataEvery is how often a population client's traffic becomes samples.
const dataEvery = time.Second

// addData counts a result's bytes: for a population client as samples every
// dataEvery, otherwise through the VU (written when the iteration ends).
func (s *opSink) addData(sent, received int64, now time.Time) {
	if !s.periodic || s.met.dataSent == nil {
		s.data(sent, received)
		return
	}
	s.pendSent.Add(sent)
	s.pendRecv.Add(received)
	last := s.lastData.Load()
	if now.UnixNano()-last < int64(dataEvery) || !s.lastData.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	sent, received = s.pendSent.Swap(0), s.pendRecv.Swap(0)
	s.push(
		metrics.Sample{Metric: s.met.dataSent, Tags: s.base(), Time: now, Value: float64(sent)},
		metrics.Sample{Metric: s.met.dataReceived, Tags: s.base(), Time: now, Value: float64(received)},
	)
}

// flushData hands the bytes not yet written to the VU, which writes them
// when its iteration ends (call it when the client's session is over).
func (s *opSink) flushData() {
	if sent, received := s.pendSent.Swap(0), s.pendRecv.Swap(0); sent != 0 || received != 0 {
		s.data(sent, received)
	}
}

func newOpSink(l *loaded, kind int, met *metricSet, vu jsmodule.VU, base metrics.TagSet, start time.Time) *opSink {
	idx := l.recs.index(base)
	push := vu.Metrics().Push
	if sp, ok := vu.Metrics().(sharedPusher); ok {
		push = sp.PushShared
	}
	s := &opSink{l: l, kind: kind, met: met, push: push, data: vu.AddDataTransfer, start: start, warmup: l.warmup()}
	s.idx.Store(idx)
	return s
}

// Watching and Delivered make the sink a models.DeliveryWatcher: the
// deliveries of events the relay never acknowledged (unacked.go).
func (s *opSink) Watching() bool { return s.l.unacked.Watching() }

// Delivered implements models.DeliveryWatcher.
func (s *opSink) Delivered(id []byte) { s.l.unacked.Delivered(id) }

// base is the VU tags the sink's samples carry.
func (s *opSink) base() metrics.TagSet { return s.idx.Load().base }

// retag makes the sink's later samples carry base, the VU's tags now: k6
// tags a VU's samples with its tags as they are when each is emitted, so a
// script that sets exec.vu.metrics.tags (profiles.js's warm-up) sees its
// tag on the Buzz metrics too. Called from the VU's goroutine, cheap when
// nothing changed (TagMap's set is cached; Equal compares hashes first).
func (s *opSink) retag(base metrics.TagSet) {
	if cur := s.idx.Load(); !cur.base.Equal(base) {
		s.idx.Store(s.l.recs.index(base))
	}
}

// sharedPusher is jshost's VU: its PushShared takes a connection reader's
// samples into a buffer warm on the reader's core rather than the VU's own
// (a delivered event's push on a cold VU buffer: engine/jshost VU.PushShared).
type sharedPusher interface {
	PushShared(samples ...metrics.Sample)
}

// recIndexes holds a loaded scenario's recIndex per distinct base tag set
// (the VUs of one k6 scenario usually share theirs, so there are few).
type recIndexes struct {
	mu     sync.Mutex
	byHash map[uint64][]*recIndex
}

// index is base's recIndex, made on first use.
func (x *recIndexes) index(base metrics.TagSet) *recIndex {
	x.mu.Lock()
	defer x.mu.Unlock()
	h := base.Hash()
	for _, ri := range x.byHash[h] {
		if ri.base.Equal(base) {
			return ri
		}
	}
	if x.byHash == nil {
		x.byHash = map[uint64][]*recIndex{}
	}
	ri := &recIndex{base: base}
	ri.m.Store(&map[opStep]*recInfo{})
	x.byHash[h] = append(x.byHash[h], ri)
	return ri
}

// recIndex maps (op, step) to what a record of it needs, for the sinks of
// one base tag set: one tag set per (op, step) shared by every such sink
// (equal pointers hit the collector's routing cache at once), and the op's
// id (one opTable serves the aggregator and the windows). Read without a
// lock: the map is replaced, never changed (a miss copies it: ops × steps
// entries).
type recIndex struct {
	base metrics.TagSet
	m    atomic.Pointer[map[opStep]*recInfo]
	mu   sync.Mutex // serialises the misses
}

type opStep struct {
	op   string
	step int
}

type recInfo struct {
	opStep
	x    *recIndex // the index it belongs to (the sink's may have changed)
	id   int       // the op's id in the aggregator's and the windows' opTable
	tags metrics.TagSet
}

// info is what a record of op in step needs.
func (s *opSink) info(op string, step int) *recInfo {
	x := s.idx.Load()
	if ri := s.last.Load(); ri != nil && ri.step == step && ri.op == op && ri.x == x {
		return ri
	}
	k := opStep{op, step}
	if ri := (*x.m.Load())[k]; ri != nil {
		s.last.Store(ri)
		return ri
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old := *x.m.Load()
	if ri := old[k]; ri != nil {
		return ri
	}
	ri := &recInfo{opStep: k, x: x, id: s.l.agg.OpID(op),
		tags: x.base.With("op", op).With("step", s.l.stepLabel(step))}
	m := make(map[opStep]*recInfo, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[k] = ri
	x.m.Store(&m)
	return ri
}

// samplePool holds the arrays a record's samples are pushed from: Push
// copies them, and an array of Record's own would escape to the heap
// through the variadic call (one allocation per record).
var samplePool = sync.Pool{New: func() any { return new([3]metrics.Sample) }}

// Record implements relayclient.Sink.
func (s *opSink) Record(r relayclient.Result) {
	if r.Op == "" {
		r.Op = "unknown"
	}
	s.l.expected.Classify(&r)
	if r.Event != nil {
		s.l.acked.add(&r)
		if r.Outcome == relayclient.OutcomeOK {
			s.l.acks.Add(r.Event)
			s.l.vis.Acked(r.Event, r.Start.Add(r.Duration))
		}
		s.l.unacked.Record(&r)
	}
	end := r.Start.Add(r.Duration)
	if r.Start.IsZero() {
		end = time.Now()
		r.Start = end
	}
	s.l.drills.watchResult(&r, end)
	if s.l.drills.during(&r, end) {
		r.Outcome = report.OutcomeExpected // a declared drill's doing: counted there
	}
	if s.warmup > 0 && end.Sub(s.start) < s.warmup {
		// Warm-up: reported apart (the report's warmup, the windows) and
		// not judged, so no buzz_op_* sample for the thresholds.
		o := s.info(r.Op, 0)
		home := s.l.agg.Homes.Get()
		s.l.agg.RecordWarmupID(o.id, home.I, r, end)
		s.l.win.AddID(o.id, home.I, r, end, true)
		s.l.agg.Homes.Put(home)
		if r.BytesSent != 0 || r.BytesReceived != 0 {
			s.data(r.BytesSent, r.BytesReceived)
		}
		return
	}
	stage := s.l.stageIndex(end.Sub(s.start))
	if at := s.l.agg.AbortTime(); !at.IsZero() && !end.Before(at) {
		// Settled after the abort (what it cut, recorded a moment later):
		// the timeline ends at the abort, so it counts where the abort fell.
		stage = min(stage, s.l.stageIndex(at.Sub(s.start)))
	}
	startStage := stage
	if !r.Start.Equal(end) {
		startStage = min(s.l.stageIndex(r.Start.Sub(s.start)), stage)
	}
	o := s.info(r.Op, stage/2)
	home := s.l.agg.Homes.Get()
	s.l.win.AddID(o.id, home.I, r, end, false)
	var straddled []int
	for i := startStage; i < stage; i++ {
		straddled = append(straddled, i)
	}
	pend := s.l.agg.RecordID(o.id, home.I, r, s.kind, startStage, stage, straddled, end)
	s.l.agg.Homes.Put(home)
	if r.BytesSent != 0 || r.BytesReceived != 0 {
		s.addData(r.BytesSent, r.BytesReceived, end)
	}
	tags := o.tags
	// One push per Result, the lag of a scheduled op in it: the generator's
	// health is live without a second push per op.
	buf := samplePool.Get().(*[3]metrics.Sample)
	defer samplePool.Put(buf)
	n := 0
	switch r.Outcome {
	case relayclient.OutcomeOK:
		buf[0] = metrics.Sample{Metric: s.met.duration, Tags: tags, Time: end, Value: ms(r.Duration)}
		buf[1] = metrics.Sample{Metric: s.met.failed, Tags: tags, Time: end, Value: 0}
		n = 2
	case relayclient.OutcomeError:
		buf[0] = metrics.Sample{Metric: s.met.failed, Tags: tags, Time: end, Value: 1}
		n = 1
	case relayclient.OutcomeThrottled:
		buf[0] = metrics.Sample{Metric: s.met.throttled, Tags: tags, Time: end, Value: 1}
		n = 1
	case report.OutcomeExpected:
		buf[0] = metrics.Sample{Metric: s.met.expected, Tags: tags, Time: end, Value: 1}
		n = 1
	}
	if !r.Due.IsZero() {
		// At the start, not the end: the lag is the generator's at that moment.
		buf[n] = metrics.Sample{Metric: s.met.generatorLag, Tags: tags, Time: r.Start, Value: ms(max(0, r.Start.Sub(r.Due)))}
		n++
	}
	if n > 0 {
		s.push(buf[:n]...)
	}
	for i, st := range straddled {
		if st%2 == 1 { // the end of a hold is the end of a step
			buf[0] = metrics.Sample{Metric: s.met.pending, Tags: s.info(r.Op, st/2).tags, Time: end, Value: float64(pend[i])}
			s.push(buf[:1]...)
		}
	}
}

// setupSink records the seed's operations (and low-level ones in setup or
// teardown) with step "setup" (or the phase): outside the steps, and not
// judged by the step thresholds, since they carry no population scenario
// tag. The report lists them under setup.
type setupSink struct {
	l    *loaded
	met  *metricSet
	push func(...metrics.Sample)
	base metrics.TagSet
	step string // "" is "setup"
	// seed: the seed's operations, on buzz_setup_duration and
	// buzz_setup_failed (not load: kept out of buzz_op_*).
	seed bool
}

func (s *setupSink) Record(r relayclient.Result) {
	s.l.expected.Classify(&r)
	s.l.acked.add(&r)
	end := r.Start.Add(r.Duration)
	s.l.agg.RecordSetup(r, end)
	step := s.step
	if step == "" {
		step = "setup"
	}
	tags := s.base.With("op", r.Op).With("step", step)
	duration, failed := s.met.duration, s.met.failed
	if s.seed {
		duration, failed = s.met.setupDuration, s.met.setupFailed
	}
	switch r.Outcome {
	case relayclient.OutcomeOK:
		s.push(
			metrics.Sample{Metric: duration, Tags: tags, Time: end, Value: ms(r.Duration)},
			metrics.Sample{Metric: failed, Tags: tags, Time: end, Value: 0},
		)
	case relayclient.OutcomeError:
		s.push(metrics.Sample{Metric: failed, Tags: tags, Time: end, Value: 1})
	case relayclient.OutcomeThrottled:
		s.push(metrics.Sample{Metric: s.met.throttled, Tags: tags, Time: end, Value: 1})
	case report.OutcomeExpected:
		s.push(metrics.Sample{Metric: s.met.expected, Tags: tags, Time: end, Value: 1})
	}
}

// ms is d in milliseconds, as the samples carry it.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
