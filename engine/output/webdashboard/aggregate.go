package webdashboard

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/downsample"
	"github.com/buzzload/buzzload/engine/metrics"
)

// Window is one period of the run: every metric's numbers in it, and the
// Buzz operations and clients in the Buzz report's window form (ops,
// clients), so the page draws them as it draws a report's windows.
type Window struct {
	StartS  float64             `json:"start_s"`
	EndS    float64             `json:"end_s"`
	Metrics map[string]*Point   `json:"metrics"`
	Ops     map[string]*OpPoint `json:"ops,omitempty"`
	Clients map[string]float64  `json:"clients,omitempty"`
	// Steps are the ramp steps the Buzz operations of the window settled
	// in (their step tag: "0", "1", ..., "shutdown"), so a live page draws
	// the steps before the report gives their verdicts.
	Steps []string `json:"steps,omitempty"`
	// Merged is how many periods the window holds once old ones are merged
	// to keep memory flat (0: one).
	Merged int `json:"merged,omitempty"`
}

// Point is one metric over one window: a Counter
// has Sum, a Gauge its last Value, a Rate its share of non-zero samples
// in Value (Passes of N samples), a Trend its N samples' statistics.
type Point struct {
	Type   string  `json:"t"`           // counter, gauge, rate or trend
	N      int64   `json:"n,omitempty"` // a Rate's or a Trend's samples
	Sum    float64 `json:"sum,omitempty"`
	Value  float64 `json:"value,omitempty"`
	Passes int64   `json:"passes,omitempty"`
	Avg    float64 `json:"avg,omitempty"`
	Max    float64 `json:"max,omitempty"`
	P50    float64 `json:"p50,omitempty"`
	P95    float64 `json:"p95,omitempty"`
	P99    float64 `json:"p99,omitempty"`
}

// OpPoint is one Buzz operation over one window (the Buzz report's
// WindowOp fields): count is ok + errors + throttled.
type OpPoint struct {
	Count     int64   `json:"count"`
	Errors    int64   `json:"errors,omitempty"`
	Throttled int64   `json:"throttled,omitempty"`
	P50Ms     float64 `json:"p50_ms,omitempty"`
	P95Ms     float64 `json:"p95_ms,omitempty"`
	P99Ms     float64 `json:"p99_ms,omitempty"`
}

// maxWindows bounds the windows kept: past it the older half is merged
// pairwise (the last half hour at 10 s kept whole, a day in 135 to 180
// windows). A soak window holds about 6–7 KB (60 metrics, the ops): at 720
// the dashboard grew by 3.3 MB over the 2½-hour soak's last two hours, and
// at 360 it still grew until an hour in, past the soak's 30-minute warm-up
// (docs/benchmarks.md, issue 43); at 180 it is flat from half an hour on.
const maxWindows = 180

// OpMetrics name the metrics an operation view is read from (the caller's:
// the engine knows no extension's metrics): a Trend of successes' latency,
// a Rate of failures and a Counter of throttles, each tagged "op" (and
// "step"), and a Gauge of live clients tagged "kind". A name left empty is
// not read; all empty, the page has no operation view.
type OpMetrics struct {
	Duration, Failed, Throttled, Clients string
}

// opAcc is one Buzz operation in the current period: its settled count,
// errors, throttles and the latency of its successes.
type opAcc struct {
	n, errs, thr int64
	dur          *metrics.TrendSink
}

// aggregator turns samples into windows. A period's values go into the
// engine's own sinks (the summary's: exact count, sum, min and max, a
// sparse HDR histogram for a Trend's percentiles), emptied when it closes.
type aggregator struct {
	mu      sync.Mutex
	start   time.Time
	from    time.Time // the current period's start
	cur     map[*metrics.Metric]metrics.Sink
	held    map[string]float64 // a gauge's last value, held into periods without samples
	ops     map[string]*opAcc
	clients map[string]float64
	steps   map[string]bool // step tags seen in the current period
	done    []Window
	view    OpMetrics
}

func newAggregator(start time.Time, view OpMetrics) *aggregator {
	return &aggregator{view: view, start: start, from: start, cur: map[*metrics.Metric]metrics.Sink{}, held: map[string]float64{},
		ops: map[string]*opAcc{}, clients: map[string]float64{}, steps: map[string]bool{}}
}

// add takes a batch of samples into the current period.
func (g *aggregator) add(samples []metrics.Sample) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range samples {
		s := &samples[i]
		if s.Metric == nil {
			continue
		}
		sk := g.cur[s.Metric]
		if sk == nil {
			if sk = metrics.NewSink(s.Metric.Type); sk == nil {
				continue
			}
			g.cur[s.Metric] = sk
		}
		sk.Add(s.Value, s.Time)
		name := s.Metric.Name
		if name == "" {
			continue
		}
		switch name {
		case g.view.Duration, g.view.Failed, g.view.Throttled:
			op, ok := s.Tags.Get("op")
			if !ok {
				continue
			}
			if st, ok := s.Tags.Get("step"); ok && !g.steps[st] {
				g.steps[st] = true
			}
			o := g.ops[op]
			if o == nil {
				o = &opAcc{dur: metrics.NewTrendSink()}
				g.ops[op] = o
			}
			switch name {
			case g.view.Duration:
				o.dur.Add(s.Value, s.Time)
			case g.view.Failed:
				o.n++
				if s.Value != 0 {
					o.errs++
				}
			case g.view.Throttled:
				o.n++
				o.thr++
			}
		case g.view.Clients:
			if kind, ok := s.Tags.Get("kind"); ok {
				g.clients[kind] = s.Value
			}
		}
	}
}

// point is one metric's sink over the period as a Point.
func point(sk metrics.Sink) *Point {
	p := &Point{Type: sk.Type().String()}
	switch x := sk.(type) {
	case *metrics.CounterSink:
		p.Sum = x.Sum()
	case *metrics.GaugeSink:
		p.Value = x.Last()
	case *metrics.RateSink:
		p.N, p.Passes = x.Total(), x.Passes()
		p.Value, _ = x.Ratio()
	case *metrics.TrendSink:
		p.N, p.Avg, p.Max = x.Count(), x.Avg(), x.Max()
		p.P50, p.P95, p.P99 = x.Percentile(50), x.Percentile(95), x.Percentile(99)
	}
	return p
}

// close ends the current period at now and returns its window.
func (g *aggregator) close(now time.Time) Window {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := Window{StartS: secs(g.from.Sub(g.start)), EndS: secs(now.Sub(g.start)), Metrics: make(map[string]*Point, len(g.cur))}
	for m, sk := range g.cur {
		if sk.IsEmpty() {
			continue
		}
		w.Metrics[m.Name] = point(sk)
		if gs, ok := sk.(*metrics.GaugeSink); ok {
			g.held[m.Name] = gs.Last()
		}
		sk.Reset()
	}
	for name, v := range g.held {
		if w.Metrics[name] == nil {
			// A gauge holds its value until the next sample (the VU count
			// is sampled once a second, not every period).
			w.Metrics[name] = &Point{Type: metrics.Gauge.String(), Value: v}
		}
	}
	if len(g.ops) > 0 {
		w.Ops = map[string]*OpPoint{}
		for name, o := range g.ops {
			if o.n == 0 {
				continue
			}
			pt := &OpPoint{Count: o.n, Errors: o.errs, Throttled: o.thr}
			if !o.dur.IsEmpty() {
				pt.P50Ms, pt.P95Ms, pt.P99Ms = o.dur.Percentile(50), o.dur.Percentile(95), o.dur.Percentile(99)
			}
			w.Ops[name] = pt
			o.n, o.errs, o.thr = 0, 0, 0
			o.dur.Reset()
		}
	}
	if len(g.clients) > 0 {
		w.Clients = make(map[string]float64, len(g.clients))
		for k, v := range g.clients {
			w.Clients[k] = v // a gauge: the last value holds until the next
		}
	}
	for st := range g.steps {
		w.Steps = append(w.Steps, st)
		delete(g.steps, st)
	}
	sort.Strings(w.Steps)
	g.from = now
	g.done = append(g.done, w)
	if len(g.done) > maxWindows {
		g.done = downsample.OlderHalf(g.done, mergeWindows)
	}
	return w
}

// closeLast closes the run's last period at now; one shorter than half a
// period joins the one before (a few milliseconds' counts over a few
// milliseconds would draw a spike in every rate).
func (g *aggregator) closeLast(now time.Time, period time.Duration) Window {
	w := g.close(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.done); n >= 2 && w.EndS-w.StartS < period.Seconds()/2 {
		m := mergeWindows(g.done[n-2], g.done[n-1])
		m.Merged = g.done[n-2].Merged // still one period's worth
		g.done = append(g.done[:n-2], m)
		return m
	}
	return w
}

// windows returns the closed windows (a copy of the list).
func (g *aggregator) windows() []Window {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Window(nil), g.done...)
}

// mergeWindows merges two adjacent periods by metric type: counts and sums
// add, a gauge keeps the later value, a percentile the larger of the two
// (an upper bound; p50 the mean weighted by samples, an op's by successes).
func mergeWindows(a, b Window) Window {
	w := Window{StartS: a.StartS, EndS: b.EndS, Metrics: map[string]*Point{}, Clients: b.Clients, Merged: max(a.Merged, 1) + max(b.Merged, 1)}
	seen := map[string]bool{}
	for _, st := range append(append([]string(nil), a.Steps...), b.Steps...) {
		if !seen[st] {
			seen[st] = true
			w.Steps = append(w.Steps, st)
		}
	}
	sort.Strings(w.Steps)
	for _, src := range []map[string]*Point{a.Metrics, b.Metrics} {
		for name, p := range src {
			q := w.Metrics[name]
			if q == nil {
				c := *p
				w.Metrics[name] = &c
				continue
			}
			switch q.Type {
			case metrics.Counter.String():
				q.Sum += p.Sum
			case metrics.Gauge.String():
				q.Value = p.Value // the later value
			case metrics.Rate.String():
				q.N, q.Passes = q.N+p.N, q.Passes+p.Passes
				q.Value = float64(q.Passes) / float64(max(q.N, 1))
			case metrics.Trend.String():
				if n := q.N + p.N; n > 0 {
					q.Avg = (q.Avg*float64(q.N) + p.Avg*float64(p.N)) / float64(n)
					q.P50 = (q.P50*float64(q.N) + p.P50*float64(p.N)) / float64(n)
					q.N = n
				}
				q.Max, q.P95, q.P99 = max(q.Max, p.Max), max(q.P95, p.P95), max(q.P99, p.P99)
			}
		}
	}
	if a.Ops != nil || b.Ops != nil {
		w.Ops = map[string]*OpPoint{}
		for _, src := range []map[string]*OpPoint{a.Ops, b.Ops} {
			for op, o := range src {
				q := w.Ops[op]
				if q == nil {
					c := *o
					w.Ops[op] = &c
					continue
				}
				// p50 weighted by successes, as extension's addWindowOp
				// merges the Buzz report's windows: durations are theirs.
				okA, okB := q.Count-q.Errors-q.Throttled, o.Count-o.Errors-o.Throttled
				if okA+okB > 0 {
					q.P50Ms = (q.P50Ms*float64(okA) + o.P50Ms*float64(okB)) / float64(okA+okB)
				}
				q.Count, q.Errors, q.Throttled = q.Count+o.Count, q.Errors+o.Errors, q.Throttled+o.Throttled
				q.P95Ms, q.P99Ms = max(q.P95Ms, o.P95Ms), max(q.P99Ms, o.P99Ms)
			}
		}
	}
	return w
}

func secs(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }
