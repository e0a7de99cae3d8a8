package prometheusrw

import (
	"sort"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// aggregator keeps one state per series (metric + tag set) and turns the
// changed ones into a WriteRequest once per push interval: values are
// cumulative since the start of the run, as k6 writes them (k6-compat.md
// §7.3), so a push that fails loses resolution, not totals — the next one
// carries them. It is owned by one goroutine.
type aggregator struct {
	cfg     Config
	byKey   map[seriesKey][]*series
	list    []*series
	dropped int64 // samples of series past MaxSeries
	enc     encoder
}

type seriesKey struct {
	m    *metrics.Metric
	hash uint64
}

type series struct {
	m      *metrics.Metric
	tags   metrics.TagSet
	labels []label // sorted by name, without __name__
	names  []string

	sum           float64 // Counter
	last          float64 // Gauge
	passes, total int64   // Rate
	trend         *metrics.TrendSink
	hist          *nativeHist

	latest int64  // ms of the newest sample
	ver    uint64 // samples added
	sentMS int64  // timestamp of the last point the receiver took (0: none)
	sentV  uint64 // ver at that point
}

func newAggregator(cfg Config) *aggregator {
	return &aggregator{cfg: cfg, byKey: map[seriesKey][]*series{}}
}

// add aggregates a batch of samples.
func (a *aggregator) add(batch []metrics.Sample) {
	for i := range batch {
		s := &batch[i]
		if s.Metric == nil {
			continue
		}
		sr := a.series(s)
		if sr == nil {
			a.dropped++
			continue
		}
		switch s.Metric.Type {
		case metrics.Counter:
			sr.sum += s.Value
		case metrics.Gauge:
			sr.last = s.Value
		case metrics.Rate:
			sr.total++
			if s.Value != 0 {
				sr.passes++
			}
		case metrics.Trend:
			if sr.hist != nil {
				sr.hist.observe(adaptUnit(s.Metric.Contains, s.Value))
			} else {
				sr.trend.Add(s.Value, s.Time)
			}
		}
		if ms := s.Time.UnixMilli(); ms > sr.latest {
			sr.latest = ms
		}
		sr.ver++
	}
}

// series finds or creates the sample's series; nil past MaxSeries.
func (a *aggregator) series(s *metrics.Sample) *series {
	k := seriesKey{s.Metric, s.Tags.Hash()}
	for _, sr := range a.byKey[k] {
		if sr.tags.Equal(s.Tags) {
			return sr
		}
	}
	if len(a.list) >= a.cfg.MaxSeries {
		return nil
	}
	sr := &series{m: s.Metric, tags: s.Tags, labels: labelsOf(s.Tags)}
	base := "k6_" + s.Metric.Name
	switch s.Metric.Type {
	case metrics.Counter:
		sr.names = []string{base + "_total"}
	case metrics.Gauge:
		sr.names = []string{base}
	case metrics.Rate:
		sr.names = []string{base + "_rate"}
	case metrics.Trend:
		if a.cfg.NativeHistograms {
			sr.hist = newNativeHist(a.cfg.Schema)
			sr.names = []string{base + unitSuffix(s.Metric.Contains)}
		} else {
			sr.trend = metrics.NewTrendSink()
			for _, st := range a.cfg.TrendStats {
				sr.names = append(sr.names, base+"_"+st.Suffix)
			}
		}
	}
	a.byKey[k] = append(a.byKey[k], sr)
	a.list = append(a.list, sr)
	return sr
}

// labelsOf makes every tag with a value a label (k6 drops empty ones, so a
// root group="" is no label). Characters Prometheus does not allow in a
// label name become '_'; a reserved __ prefix is dropped with its tag.
func labelsOf(tags metrics.TagSet) []label {
	var out []label
	seen := map[string]bool{}
	for _, t := range tags.Tags() {
		if t.Value == "" {
			continue
		}
		name := sanitizeLabel(t.Key)
		if name == "" || len(name) >= 2 && name[:2] == "__" || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, label{name, t.Value})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func sanitizeLabel(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

func unitSuffix(vt metrics.ValueType) string {
	switch vt {
	case metrics.Time:
		return "_seconds"
	case metrics.Data:
		return "_bytes"
	}
	return ""
}

// adaptUnit converts time values from milliseconds to seconds (Prometheus's
// base unit); other values are sent as they are.
func adaptUnit(vt metrics.ValueType, v float64) float64 {
	if vt == metrics.Time {
		return v / 1000
	}
	return v
}

// sent is a series point a request carries, to settle once it is answered.
type sent struct {
	s   *series
	ms  int64
	ver uint64
}

// request is an encoded WriteRequest (not yet compressed).
type request struct {
	body   []byte
	points int // time series in it
	series []sent
	stale  bool
}

// build encodes every series that got samples since its last accepted
// point, at the time of its newest sample (truncated to ms, as k6 does). A
// point never repeats or precedes the last accepted timestamp of its series
// (Prometheus refuses out-of-order and duplicate samples), so a series that
// changed within the same millisecond moves 1 ms on.
func (a *aggregator) build() *request {
	a.enc.out, a.enc.n = a.enc.out[:0], 0
	var r request
	for _, sr := range a.list {
		if sr.ver == sr.sentV {
			continue
		}
		ms := sr.latest
		if ms <= sr.sentMS {
			ms = sr.sentMS + 1
		}
		a.encode(sr, ms)
		r.series = append(r.series, sent{sr, ms, sr.ver})
	}
	if len(r.series) == 0 {
		return nil
	}
	r.points = a.enc.n
	r.body = append([]byte(nil), a.enc.out...)
	return &r
}

func (a *aggregator) encode(sr *series, ms int64) {
	e := &a.enc
	switch sr.m.Type {
	case metrics.Counter:
		e.sample(sr.names[0], sr.labels, sr.sum, ms)
	case metrics.Gauge:
		e.sample(sr.names[0], sr.labels, sr.last, ms)
	case metrics.Rate:
		v := 0.0
		if sr.total > 0 {
			v = float64(sr.passes) / float64(sr.total)
		}
		e.sample(sr.names[0], sr.labels, v, ms)
	case metrics.Trend:
		if sr.hist != nil {
			e.histogram(sr.names[0], sr.labels, sr.hist, ms)
			return
		}
		for i, st := range a.cfg.TrendStats {
			// k6 converts every stat of a time Trend to seconds, count
			// included (3 values are sent as 0.003); dashboards built on
			// k6's series expect it (docs/k6-compat.md §7.3).
			e.sample(sr.names[i], sr.labels, adaptUnit(sr.m.Contains, st.value(sr.trend)), ms)
		}
	}
}

// staleMarkers marks every series that was ever sent stale, 1 ms after
// both now and its last point.
func (a *aggregator) staleMarkers(now time.Time) *request {
	a.enc.out, a.enc.n = a.enc.out[:0], 0
	var r request
	base := now.Truncate(time.Millisecond).UnixMilli() + 1
	for _, sr := range a.list {
		if sr.sentMS == 0 {
			continue
		}
		ms := max(base, sr.sentMS+1)
		for _, n := range sr.names {
			a.enc.sample(n, sr.labels, staleNaN, ms)
		}
		r.series = append(r.series, sent{sr, ms, sr.ver})
	}
	if len(r.series) == 0 {
		return nil
	}
	r.points, r.stale = a.enc.n, true
	r.body = append([]byte(nil), a.enc.out...)
	return &r
}

// settle records that the receiver took (or refused for good) a request's
// points: they are not sent again.
func (a *aggregator) settle(r *request) {
	for _, p := range r.series {
		if p.ms > p.s.sentMS {
			p.s.sentMS = p.ms
		}
		if p.ver > p.s.sentV {
			p.s.sentV = p.ver
		}
	}
}
