package relaymetrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/modules/report"
)

// DefaultInterval is how often a watched source is read between the
// first and the last reading.
const DefaultInterval = 15 * time.Second

// maxSamples bounds the plotted readings per source (a week at 15 s
// would be 40,000): past it every other one is dropped.
const maxSamples = 2000

// Watcher reads its sources from when each is added until Finish: a
// reading at once, then every interval, then the last at Finish.
type Watcher struct {
	rd       Reader
	interval time.Duration
	// OnReading, when set, sees every reading after the first: the
	// counters' increases since the one before and the gauges' values,
	// summed by family (the live metrics; set before the first Add).
	OnReading func(src Source, at time.Time, increases, gauges map[string]float64)

	mu       sync.Mutex
	tracks   []*track
	finished bool
	stop     chan struct{}
	wg       sync.WaitGroup
}

// track is one source's readings.
type track struct {
	src     Source
	note    string
	first   *Scrape
	last    *Scrape
	incr    map[string]float64 // a counter's increase, resets counted from zero
	samples []report.RelayMetricsSample
	ok, bad int
	resets  int // readings where a counter went down: the relay restarted
	err     string
}

// NewWatcher returns a watcher reading every interval (0: DefaultInterval).
func NewWatcher(rd Reader, interval time.Duration) *Watcher {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Watcher{rd: rd, interval: interval, stop: make(chan struct{})}
}

// Add starts watching src: its first reading now, before Add returns (so
// nothing the run does is missed from the deltas; at most FirstTimeout),
// then every interval in the background. note is said in the report
// beside it. After Finish it does nothing.
func (w *Watcher) Add(src Source, note string) {
	t := &track{src: src, note: note, incr: map[string]float64{}}
	w.readWithin(t, FirstTimeout)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	w.tracks = append(w.tracks, t)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(w.interval)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.read(t)
			}
		}
	}()
}

// FirstTimeout bounds the first reading (the run waits for it); later
// ones have ReadTimeout.
const (
	FirstTimeout = 5 * time.Second
	ReadTimeout  = 10 * time.Second
)

// read takes one reading of t's source and folds it in.
func (w *Watcher) read(t *track) { w.readWithin(t, ReadTimeout) }

func (w *Watcher) readWithin(t *track, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	s, err := w.rd.Read(ctx, t.src)
	w.mu.Lock()
	if err != nil {
		t.bad++
		if t.err == "" {
			t.err = err.Error()
		}
		w.mu.Unlock()
		return
	}
	inc, first := t.fold(s)
	w.mu.Unlock()
	if w.OnReading != nil && !first {
		gauges := map[string]float64{}
		for k, v := range s.Values {
			if info := s.Series[k]; info.Type == "gauge" {
				gauges[info.Name] += v
			}
		}
		w.OnReading(t.src, s.At, inc, gauges)
	}
}

// fold adds a reading: a counter's increase since the last reading (a
// value below it is a reset: the relay restarted, count from zero). It
// returns the increases by family, and whether it was the first reading.
func (t *track) fold(s Scrape) (map[string]float64, bool) {
	t.ok++
	first := t.first == nil
	inc := map[string]float64{}
	resetNow := false
	if first {
		t.first = &s
	} else {
		for k, v := range s.Values {
			if s.Series[k].Type != "counter" {
				continue
			}
			prev, seen := t.last.Values[k]
			d := 0.0
			switch {
			case !seen:
				if _, atStart := t.first.Values[k]; !atStart {
					d = v // a series that appeared during the run
				}
			case v >= prev:
				d = v - prev
			default:
				d = v
				resetNow = true
			}
			t.incr[k] += d
			inc[s.Series[k].Name] += d
		}
	}
	if resetNow {
		t.resets++
	}
	t.last = &s
	totals := map[string]float64{}
	for k, v := range s.Values {
		totals[s.Series[k].Name] += v
	}
	t.samples = append(t.samples, report.RelayMetricsSample{Source: t.src.Spec, UnixMs: s.At.UnixMilli(), Values: totals})
	if len(t.samples) > maxSamples {
		kept := t.samples[:0]
		for i, x := range t.samples {
			if i%2 == 0 || i == len(t.samples)-1 {
				kept = append(kept, x)
			}
		}
		t.samples = kept
	}
	return inc, first
}

// Settle waits until the relay has stopped taking events: two readings
// every interval apart with the same buzz_events_received_total and
// buzz_events_stored_total on every source (publishes still in flight at
// the run's end answered or dropped), bounded by maxWait. It reports
// whether they settled; without a source there is nothing to wait for.
func (w *Watcher) Settle(ctx context.Context, every, maxWait time.Duration) bool {
	w.mu.Lock()
	tracks := append([]*track(nil), w.tracks...)
	w.mu.Unlock()
	if len(tracks) == 0 {
		return true
	}
	deadline := time.Now().Add(maxWait)
	prev := ""
	for {
		var b strings.Builder
		for _, t := range tracks {
			rctx, cancel := context.WithTimeout(ctx, ReadTimeout)
			s, err := w.rd.Read(rctx, t.src)
			cancel()
			if err != nil {
				return false
			}
			var recv, stored float64
			for k, v := range s.Values {
				switch s.Series[k].Name {
				case "buzz_events_received_total":
					recv += v
				case "buzz_events_stored_total":
					stored += v
				}
			}
			fmt.Fprintf(&b, "%g/%g;", recv, stored)
		}
		if b.String() == prev {
			return true
		}
		prev = b.String()
		if time.Now().Add(every).After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(every):
		}
	}
}

// Finish stops the periodic readings, takes the last of every source and
// returns the report (nil when no source was added).
func (w *Watcher) Finish() *report.RelayMetricsReport {
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return nil
	}
	w.finished = true
	close(w.stop)
	tracks := append([]*track(nil), w.tracks...)
	w.mu.Unlock()
	w.wg.Wait()
	if len(tracks) == 0 {
		return nil
	}
	rep := &report.RelayMetricsReport{}
	for _, t := range tracks {
		w.read(t)
		rep.Sources = append(rep.Sources, t.source())
		rep.Series = append(rep.Series, t.series()...)
		rep.Samples = append(rep.Samples, t.samples...)
	}
	return rep
}

func (t *track) source() report.RelayMetricsSource {
	s := report.RelayMetricsSource{Source: t.src.Spec, Scrapes: t.ok, Failed: t.bad, Error: t.err, Note: t.note, Resets: t.resets}
	if t.first != nil {
		s.StartUnixMs, s.EndUnixMs = t.first.At.UnixMilli(), t.last.At.UnixMilli()
	}
	return s
}

// series are t's series at the first and last readings, sorted by key.
func (t *track) series() []report.RelaySeries {
	if t.first == nil {
		return nil
	}
	keys := make([]string, 0, len(t.last.Series))
	for k := range t.last.Series {
		keys = append(keys, k)
	}
	for k := range t.first.Series {
		if _, ok := t.last.Series[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]report.RelaySeries, 0, len(keys))
	for _, k := range keys {
		info, ok := t.last.Series[k]
		if !ok {
			info = t.first.Series[k]
		}
		start, end := t.first.Values[k], t.last.Values[k]
		delta := end - start
		if info.Type == "counter" {
			delta = t.incr[k]
		}
		out = append(out, report.RelaySeries{Source: t.src.Spec, Name: info.Name, Labels: info.Labels,
			Type: info.Type, Start: start, End: end, Delta: delta})
	}
	return out
}
