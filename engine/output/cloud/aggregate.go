package cloud

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// value is one series' aggregate over one aggregation period, per metric
// type as the cloud reads it (k6's CounterValue, GaugeValue, RateValue,
// TrendHdrValue).
type value struct {
	sum                   float64 // Counter
	last, gmin, gmax, avg float64 // Gauge (avg of the period, as k6)
	gsum                  float64
	count                 uint32 // Gauge samples
	nonzero, total        uint32 // Rate
	hist                  *hdr   // Trend
}

func (v *value) add(t metrics.Type, x float64) {
	switch t {
	case metrics.Counter:
		v.sum += x
	case metrics.Gauge:
		if v.count == 0 || x < v.gmin {
			v.gmin = x
		}
		if v.count == 0 || x > v.gmax {
			v.gmax = x
		}
		v.last = x
		v.count++
		v.gsum += x
		v.avg = v.gsum / float64(v.count)
	case metrics.Rate:
		v.total++
		if x != 0 {
			v.nonzero++
		}
	case metrics.Trend:
		if v.hist == nil {
			v.hist = newHDR()
		}
		v.hist.add(x)
	}
}

// series is a metric with one tag set: what the cloud calls a time series.
// Its labels are encoded once, when first seen.
type series struct {
	m      *metrics.Metric
	tags   metrics.TagSet
	labels []byte // encoded Label messages (field 1 of TimeSeries)
	// The period the series' last sample fell in and its value there: most
	// samples of a series land in the same period as its previous one.
	curID int64
	cur   *value
}

// bucket is one aggregation period: start time (ns, a multiple of the
// period) and each series' value in it.
type bucket struct {
	start  int64
	values map[*series]*value
}

// aggregator sorts samples into periods of the aggregation period by the
// sample's time and hands a period out once the wait period has passed
// after its end (late samples of a period still land in it), as k6's
// collector does (K6_CLOUD_AGGREGATION_PERIOD, _WAIT_PERIOD). Owned by one
// goroutine.
type aggregator struct {
	period, wait time.Duration
	byKey        map[uint64][]*series // by tag hash; metric and tags compared
	nseries      int
	maxSeries    int
	buckets      map[int64]*bucket
	dropped      int64 // samples of series past maxSeries
	discarded    map[string]bool
	warn         func(string)
}

// maxSeries bounds the output's memory; k6 has no bound, a run this wide
// is an error in the script (a tag per request id).
const maxSeries = 200_000

func newAggregator(period, wait time.Duration) *aggregator {
	return &aggregator{period: period, wait: wait, byKey: map[uint64][]*series{},
		buckets: map[int64]*bucket{}, maxSeries: maxSeries, discarded: map[string]bool{}}
}

func (a *aggregator) add(batch []metrics.Sample) {
	var (
		lastID int64 = -1
		b      *bucket
	)
	// Only the loop goroutine touches series' caches and buckets.
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
		id := s.Time.UnixNano() / int64(a.period)
		if sr.cur != nil && sr.curID == id {
			sr.cur.add(s.Metric.Type, s.Value)
			continue
		}
		if id != lastID || b == nil {
			lastID = id
			b = a.buckets[id]
			if b == nil {
				b = &bucket{start: id * int64(a.period), values: map[*series]*value{}}
				a.buckets[id] = b
			}
		}
		v := b.values[sr]
		if v == nil {
			v = &value{}
			b.values[sr] = v
		}
		sr.curID, sr.cur = id, v
		v.add(s.Metric.Type, s.Value)
	}
}

func (a *aggregator) series(s *metrics.Sample) *series {
	k := s.Tags.Hash()
	for _, sr := range a.byKey[k] {
		if sr.m == s.Metric && sr.tags.Equal(s.Tags) {
			return sr
		}
	}
	if a.nseries >= a.maxSeries {
		return nil
	}
	sr := &series{m: s.Metric, tags: s.Tags, labels: a.encodeLabels(s.Tags)}
	a.byKey[k] = append(a.byKey[k], sr)
	a.nseries++
	return sr
}

// encodeLabels writes the tags as Label messages, leaving out the names the
// cloud reserves (k6: `__`-prefixed and test_run_id), which are reported once.
func (a *aggregator) encodeLabels(tags metrics.TagSet) []byte {
	var out []byte
	for _, t := range tags.Tags() {
		if strings.HasPrefix(t.Key, "__") || t.Key == "test_run_id" {
			if !a.discarded[t.Key] && a.warn != nil {
				a.warn(fmt.Sprintf("Tag %s has been discarded since it is reserved for Cloud operations.", t.Key))
			}
			a.discarded[t.Key] = true
			continue
		}
		out = appendLabel(out, t.Key, t.Value)
	}
	return out
}

// expired removes and returns the periods whose end is at least the wait
// period before now (all of them when all is set), oldest first.
func (a *aggregator) expired(now time.Time, all bool) []*bucket {
	// A period ends at (id+1)·period; it goes once that end is a wait period
	// past. (k6 hands it out a period earlier, when its start is: with a
	// wait shorter than the period that splits one period over two pushes.)
	cutoff := now.Add(-a.wait).UnixNano() / int64(a.period)
	var out []*bucket
	for id, b := range a.buckets {
		if all || id < cutoff {
			for sr := range b.values {
				if sr.curID == id {
					sr.cur = nil
				}
			}
			out = append(out, b)
			delete(a.buckets, id)
		}
	}
	slices.SortFunc(out, func(x, y *bucket) int { return cmp.Compare(x.start, y.start) })
	return out
}
