package metrics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The ingest design: producers append samples to a small buffer under a
// mutex only they (and the periodic Flush) touch, so the mutex is almost
// never contended and recording costs an append. When a buffer is full its
// producer aggregates the whole batch into the sinks under the Collector's
// mutex, once per batch instead of once per sample; Flush (every 50 ms for
// outputs, and before every snapshot) drains partial buffers. Per-sample
// routing to sub-metrics, grouped sinks and windows is cached per tag set.
// Sharded sinks were the alternative: they avoid the shared mutex entirely
// but multiply every sink (histograms included) by the number of producers,
// which does not fit thousands of VUs in bounded memory.

const (
	defaultBatchSize = 512
	numShards        = 16
	maxRoutes        = 4096 // cached tag sets per metric before the cache is dropped
	// MaxGroupRows bounds the rows of one grouped sink (AddGroup): past it,
	// samples of new values go into one row whose values are OtherGroup, so
	// a group by a high-cardinality tag (a url) keeps bounded memory and
	// every sample (code review D10).
	MaxGroupRows = 10000
	OtherGroup   = "(other)"
)

// CollectorOptions configure a Collector.
type CollectorOptions struct {
	// BatchSize is how many samples a buffer holds before its producer
	// aggregates them (default 512).
	BatchSize int
}

// Collector turns samples into sinks. It is safe for concurrent use.
type Collector struct {
	reg   *Registry
	batch int

	mu        sync.Mutex // guards the fields below and every sink they hold
	states    []*metricState
	allGroups [][]string // groupings applied to every metric
	late      int64      // window samples that arrived after their window moved on
	foreign   int64      // samples whose metric is not from this registry

	consumers atomic.Pointer[[]SampleConsumer]

	dirtyMu sync.Mutex
	dirty   []*Buffer // buffers that received samples since the last Flush

	flushMu   sync.Mutex // serialises Flush
	flushList []*Buffer  // reused by Flush (swapped with dirty)

	shards [numShards]shard
}

type shard struct {
	mu      sync.Mutex
	samples []Sample
	_       [40]byte // keep shards on separate cache lines
}

type metricState struct {
	m       *Metric
	sink    Sink
	tracked bool // asked for by a threshold or summary, shown even when empty
	subs    []*subState
	groups  []*groupState
	windows []*Window
	routes  map[uint64]*route
}

type subState struct {
	sel  Selector
	sink Sink
	// tracked: a threshold's, shown even when empty; an untracked one (the
	// expected_response sub-metric k6 adds by itself) only once a sample
	// matched it, as k6 v2.2.0 observes metrics (with a null response
	// callback its summary data has no such sub-metric).
	tracked bool
}

type groupState struct {
	by    []string
	rows  map[string]*groupRow
	order []*groupRow
}

type groupRow struct {
	values []string
	sink   Sink
}

type route struct {
	tags TagSet
	subs []Sink
	rows []*groupRow
	wins []*Window
}

func (st *metricState) hasExtras() bool {
	return len(st.subs) > 0 || len(st.groups) > 0 || len(st.windows) > 0
}

// NewCollector returns a Collector for the metrics of reg.
func NewCollector(reg *Registry, opts CollectorOptions) *Collector {
	if opts.BatchSize <= 0 {
		opts.BatchSize = defaultBatchSize
	}
	return &Collector{reg: reg, batch: opts.BatchSize}
}

// Registry returns the collector's registry.
func (c *Collector) Registry() *Registry { return c.reg }

// AddConsumer adds a receiver of every aggregated batch (an output). Call it
// before samples flow; consumers must copy what they keep and must not block.
func (c *Collector) AddConsumer(sc SampleConsumer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var list []SampleConsumer
	if old := c.consumers.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, sc)
	c.consumers.Store(&list)
}

// state returns the metric's state, creating it; c.mu must be held.
func (c *Collector) state(m *Metric) *metricState {
	if m.id < len(c.states) {
		if st := c.states[m.id]; st != nil {
			return st
		}
	}
	if c.reg.byID(m.id) != m {
		return nil
	}
	for m.id >= len(c.states) {
		c.states = append(c.states, nil)
	}
	st := &metricState{m: m, sink: NewSink(m.Type)}
	for _, by := range c.allGroups {
		st.groups = append(st.groups, &groupState{by: by, rows: map[string]*groupRow{}})
	}
	c.states[m.id] = st
	return st
}

func (c *Collector) stateByName(name string) (*metricState, error) {
	m := c.reg.Get(name)
	if m == nil {
		return nil, fmt.Errorf("metric %q does not exist", name)
	}
	st := c.state(m)
	if st == nil {
		return nil, fmt.Errorf("metric %q is not from this collector's registry", name)
	}
	return st, nil
}

// Track makes a metric or sub-metric key (`name` or `name{k:v}`) part of
// every snapshot even while it has no samples, creating the sub-metric's
// sink on demand. Thresholds and the summary call it for the keys they use.
// Samples recorded before a sub-metric was created are not in it.
func (c *Collector) Track(key string) error { return c.track(key, true) }

// Submetric creates a sub-metric's sink without tracking its metric: it is
// in a snapshot with its metric, once that has samples (k6's
// http_req_duration{expected_response:true}, in the summary of a run that
// made HTTP requests and not of one that made none).
func (c *Collector) Submetric(key string) error { return c.track(key, false) }

func (c *Collector) track(key string, tracked bool) error {
	sel, err := ParseSelector(key)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.stateByName(sel.Metric)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	st.tracked = st.tracked || tracked
	if !sel.IsSubmetric() {
		return nil
	}
	for _, s := range st.subs {
		if s.sel.Name == sel.Name {
			s.tracked = s.tracked || tracked
			return nil
		}
	}
	st.subs = append(st.subs, &subState{sel: sel, sink: NewSink(st.m.Type), tracked: tracked})
	st.routes = nil
	return nil
}

// AddGroup keeps one sink per distinct combination of the values of the tags
// `by` for a metric (a missing tag counts as ""), e.g. per op and step. An
// empty metric name applies the grouping to every metric, now and later.
func (c *Collector) AddGroup(metric string, by ...string) error {
	if len(by) == 0 {
		return fmt.Errorf("group for %q: no tag keys given", metric)
	}
	by = append([]string(nil), by...)
	c.mu.Lock()
	defer c.mu.Unlock()
	add := func(st *metricState) {
		for _, g := range st.groups {
			if equalStrings(g.by, by) {
				return
			}
		}
		st.groups = append(st.groups, &groupState{by: by, rows: map[string]*groupRow{}})
		st.routes = nil
	}
	if metric == "" {
		for _, g := range c.allGroups {
			if equalStrings(g, by) {
				return nil
			}
		}
		c.allGroups = append(c.allGroups, by)
		for _, st := range c.states {
			if st != nil {
				add(st)
			}
		}
		return nil
	}
	st, err := c.stateByName(metric)
	if err != nil {
		return fmt.Errorf("group %s by %s: %w", metric, strings.Join(by, ","), err)
	}
	add(st)
	return nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Window is a resettable sink over the samples of one metric key recorded
// between two instants (a ramp stage). See AddWindow.
type Window struct {
	sel    Selector
	active bool
	start  time.Time // samples before it are late and dropped
	cut    time.Time // during EndWindows: samples at or after it go to next
	cur    Sink
	next   Sink
}

// Selector is the key the window was made for.
func (w *Window) Selector() Selector { return w.sel }

// add routes a value by its time; c.mu is held.
func (w *Window) add(c *Collector, v float64, t time.Time) {
	if !w.active {
		return // no stage in progress: nothing to judge these samples in
	}
	if t.Before(w.start) {
		c.late++
		return
	}
	if w.next != nil && !t.Before(w.cut) {
		w.next.Add(v, t)
		return
	}
	w.cur.Add(v, t)
}

// AddWindow creates a window for a key (`name` or `name{k:v,...}`). It takes
// samples once StartWindows opened it.
func (c *Collector) AddWindow(key string) (*Window, error) {
	sel, err := ParseSelector(key)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.stateByName(sel.Metric)
	if err != nil {
		return nil, fmt.Errorf("window %s: %w", key, err)
	}
	w := &Window{sel: sel, cur: NewSink(st.m.Type)}
	st.windows = append(st.windows, w)
	st.routes = nil
	return w, nil
}

// StartWindows opens windows at start. A window that EndWindows already
// moved to start keeps what it holds; otherwise it is emptied and samples
// before start are dropped.
func (c *Collector) StartWindows(ws []*Window, start time.Time) {
	c.Flush() // samples recorded before the stage are dropped, not counted late
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		if w.active && !start.After(w.start) {
			continue
		}
		w.cur.Reset()
		w.start = start
		w.active = true
	}
}

// EndWindows closes the current span of each window at end and returns what
// each held (samples timed before end), leaving the windows open from end on
// with the samples already timed at or after it. It flushes every buffer in
// between, so all samples recorded before the call are counted.
func (c *Collector) EndWindows(ws []*Window, end time.Time) []Sink {
	c.mu.Lock()
	for _, w := range ws {
		w.cut = end
		w.next = NewSink(w.cur.Type())
	}
	c.mu.Unlock()
	c.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Sink, len(ws))
	for i, w := range ws {
		out[i] = w.cur
		w.cur, w.next = w.next, nil
		w.start = end
		w.cut = time.Time{}
		w.active = true
	}
	return out
}

// LateWindowSamples counts samples a window dropped because they were timed
// before its current span (recorded after the stage they belong to ended).
func (c *Collector) LateWindowSamples() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.late
}

// ingest aggregates a batch and hands it to the consumers.
func (c *Collector) ingest(batch []Sample) {
	if len(batch) == 0 {
		return
	}
	c.mu.Lock()
	for i := range batch {
		s := &batch[i]
		if s.Metric == nil {
			continue
		}
		st := c.state(s.Metric)
		if st == nil {
			c.foreign++
			continue
		}
		st.sink.Add(s.Value, s.Time)
		if st.hasExtras() {
			c.routeSample(st, s)
		}
	}
	c.mu.Unlock()
	if cs := c.consumers.Load(); cs != nil {
		for _, sc := range *cs {
			sc.AddSamples(batch)
		}
	}
}

func (c *Collector) routeSample(st *metricState, s *Sample) {
	h := s.Tags.Hash()
	r := st.routes[h]
	if r == nil || !r.tags.Equal(s.Tags) {
		r = st.buildRoute(s.Tags)
		if st.routes == nil || len(st.routes) >= maxRoutes {
			st.routes = make(map[uint64]*route)
		}
		st.routes[h] = r
	}
	for _, sk := range r.subs {
		sk.Add(s.Value, s.Time)
	}
	for _, row := range r.rows {
		row.sink.Add(s.Value, s.Time)
	}
	for _, w := range r.wins {
		w.add(c, s.Value, s.Time)
	}
}

func (st *metricState) buildRoute(tags TagSet) *route {
	r := &route{tags: tags}
	for _, s := range st.subs {
		if s.sel.Matches(tags) {
			r.subs = append(r.subs, s.sink)
		}
	}
	for _, g := range st.groups {
		vals := make([]string, len(g.by))
		for i, k := range g.by {
			vals[i], _ = tags.Get(k)
		}
		key := strings.Join(vals, "\x00")
		row := g.rows[key]
		if row == nil && len(g.rows) >= MaxGroupRows {
			for i := range vals {
				vals[i] = OtherGroup
			}
			key = strings.Join(vals, "\x00")
			row = g.rows[key]
		}
		if row == nil {
			row = &groupRow{values: vals, sink: NewSink(st.m.Type)}
			g.rows[key] = row
			g.order = append(g.order, row)
		}
		r.rows = append(r.rows, row)
	}
	for _, w := range st.windows {
		if w.sel.Matches(tags) {
			r.wins = append(r.wins, w)
		}
	}
	return r
}

// Add records a sample from any goroutine, into one of a few shards picked at
// random (so concurrent callers rarely meet). Producers that record often
// should prefer their own Buffer.
func (c *Collector) Add(s Sample) {
	i := rand.Uint32() % numShards
	sh := &c.shards[i]
	if !sh.mu.TryLock() {
		sh = &c.shards[(i+1)%numShards]
		sh.mu.Lock()
	}
	sh.samples = append(sh.samples, s)
	if len(sh.samples) >= c.batch {
		c.ingest(sh.samples)
		sh.samples = sh.samples[:0]
	}
	sh.mu.Unlock()
}

// Flush aggregates every sample recorded so far (all buffers and shards).
func (c *Collector) Flush() {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.dirtyMu.Lock()
	list := c.dirty
	c.dirty = c.flushList[:0]
	c.dirtyMu.Unlock()
	for _, b := range list {
		b.drain()
	}
	clear(list)
	c.flushList = list
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		c.ingest(sh.samples)
		sh.samples = sh.samples[:0]
		sh.mu.Unlock()
	}
}

// Run flushes every interval until ctx is done, then once more. The engine
// runs it in a goroutine (50 ms matches k6's thresholds ingester).
func (c *Collector) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.Flush()
			return
		case <-t.C:
			c.Flush()
		}
	}
}
