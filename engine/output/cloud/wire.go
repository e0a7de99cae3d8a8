package cloud

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/buzzload/buzzload/engine/metrics"
)

// The cloud's metrics protocol 2.0 (k6 v1.8.1, POST /v2/metrics/<ref>): a
// MetricSet protobuf message, snappy block-compressed. Field numbers:
//
//	MetricSet   1 test_run_id string, 2 aggregation_period uint32 (s), 3 metrics Metric*
//	Metric      1 name, 2 type (1 counter, 2 gauge, 3 rate, 4 trend), 3 time_series TimeSeries*
//	Label       1 name, 2 value
//	TimeSeries  1 labels Label*, one of 2 counter / 3 gauge / 4 rate / 5 trend_hdr samples {1 values*}
//	CounterValue  1 time Timestamp, 2 value double
//	GaugeValue    1 time, 2 last, 3 count uint32, 4 min, 5 max, 6 avg
//	RateValue     1 time, 2 nonzero_count uint32, 3 total_count uint32
//	TrendHdrValue 1 time, 2 counters packed uint32, 3 spans BucketSpan{1 offset, 2 length}*,
//	              5 sum, 6 count uint32, 7 min_value, 8 max_value,
//	              9 extra_low_values_counter (optional), 10 extra_high_values_counter (optional),
//	              11 min_resolution, 12 significant_digits (optional, unset)
//	Timestamp     1 seconds int64, 2 nanos int32 (k6 sends whole seconds)
//
// Written with protowire by hand: the schema is small, the encoder runs once
// per push, and it needs no generated code. Zero scalars are left out as
// proto3 does. engine/output/cloud's tests decode it with the protobuf
// library's dynamic messages, built from this schema, and decode k6's own
// pushes with the same decoder.

func metricType(t metrics.Type) uint64 {
	switch t {
	case metrics.Counter:
		return 1
	case metrics.Gauge:
		return 2
	case metrics.Rate:
		return 3
	case metrics.Trend:
		return 4
	}
	return 0
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendDouble(b []byte, num protowire.Number, v float64) []byte {
	if v == 0 && !math.Signbit(v) {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendLabel(b []byte, name, value string) []byte {
	var m []byte
	m = appendString(m, 1, name)
	m = appendString(m, 2, value)
	return appendMessage(b, 1, m)
}

// appendTime appends a Timestamp of the period's start, in whole seconds.
func appendTime(b []byte, startNS int64) []byte {
	var ts []byte
	if sec := startNS / 1e9; sec != 0 {
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(sec)) //nolint:gosec // int64 as protobuf's two's complement
	}
	return appendMessage(b, 1, ts)
}

// appendValue appends one period's value message of type t.
func appendValue(b []byte, t metrics.Type, startNS int64, v *value) []byte {
	m := appendTime(nil, startNS)
	switch t {
	case metrics.Counter:
		m = appendDouble(m, 2, v.sum)
	case metrics.Gauge:
		m = appendDouble(m, 2, v.last)
		m = appendVarint(m, 3, uint64(v.count))
		m = appendDouble(m, 4, v.gmin)
		m = appendDouble(m, 5, v.gmax)
		m = appendDouble(m, 6, v.avg)
	case metrics.Rate:
		m = appendVarint(m, 2, uint64(v.nonzero))
		m = appendVarint(m, 3, uint64(v.total))
	case metrics.Trend:
		m = appendHDR(m, v.hist)
	}
	return appendMessage(b, 1, m)
}

func appendHDR(m []byte, h *hdr) []byte {
	if h == nil {
		h = newHDR()
	}
	counters, spans := h.sparse()
	if len(counters) > 0 {
		var packed []byte
		for _, c := range counters {
			packed = protowire.AppendVarint(packed, uint64(c))
		}
		m = appendMessage(m, 2, packed)
	}
	for _, s := range spans {
		var sm []byte
		sm = appendVarint(sm, 1, uint64(s.offset))
		sm = appendVarint(sm, 2, uint64(s.length))
		m = appendMessage(m, 3, sm)
	}
	m = appendDouble(m, 5, h.sum)
	m = appendVarint(m, 6, uint64(h.count))
	m = appendDouble(m, 7, h.min)
	m = appendDouble(m, 8, h.max)
	// Optional fields: present only when non-zero, as k6 sends them.
	if h.extraLow > 0 {
		m = protowire.AppendTag(m, 9, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(h.extraLow))
	}
	if h.extraHigh > 0 {
		m = protowire.AppendTag(m, 10, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(h.extraHigh))
	}
	return appendDouble(m, 11, minResolution)
}

// samplesField is the TimeSeries oneof field of a metric type.
func samplesField(t metrics.Type) protowire.Number {
	return protowire.Number(1 + metricType(t)) //nolint:gosec // 2..5
}

// batchSeries is one series in a MetricSet: its values, one per period.
type batchSeries struct {
	sr     *series
	values []byte // encoded value messages (field 1 of the samples message)
}

// metricSet builds one MetricSet of at most max distinct series.
type metricSet struct {
	order   []*metrics.Metric
	metrics map[*metrics.Metric][]*batchSeries
	index   map[*series]*batchSeries
	points  int
}

func newMetricSet() *metricSet {
	return &metricSet{metrics: map[*metrics.Metric][]*batchSeries{}, index: map[*series]*batchSeries{}}
}

func (ms *metricSet) add(startNS int64, sr *series, v *value) {
	bs := ms.index[sr]
	if bs == nil {
		bs = &batchSeries{sr: sr}
		ms.index[sr] = bs
		if _, ok := ms.metrics[sr.m]; !ok {
			ms.order = append(ms.order, sr.m)
		}
		ms.metrics[sr.m] = append(ms.metrics[sr.m], bs)
	}
	bs.values = appendValue(bs.values, sr.m.Type, startNS, v)
	ms.points++
}

func (ms *metricSet) encode(testRunID string, periodSeconds uint32) []byte {
	var b []byte
	b = appendString(b, 1, testRunID)
	b = appendVarint(b, 2, uint64(periodSeconds))
	for _, m := range ms.order {
		var mb []byte
		mb = appendString(mb, 1, m.Name)
		mb = appendVarint(mb, 2, metricType(m.Type))
		for _, bs := range ms.metrics[m] {
			ts := append([]byte(nil), bs.sr.labels...)
			ts = appendMessage(ts, samplesField(m.Type), bs.values)
			mb = appendMessage(mb, 3, ts)
		}
		b = appendMessage(b, 3, mb)
	}
	return b
}

// batches splits the periods into MetricSets of at most maxSeries distinct
// series each (K6_CLOUD_MAX_TIME_SERIES_IN_BATCH), in period order.
func batches(buckets []*bucket, maxSeries int) []*metricSet {
	var out []*metricSet
	ms := newMetricSet()
	for _, b := range buckets {
		for sr, v := range b.values {
			ms.add(b.start, sr, v)
			if len(ms.index) >= maxSeries {
				out = append(out, ms)
				ms = newMetricSet()
			}
		}
	}
	if len(ms.index) > 0 {
		out = append(out, ms)
	}
	return out
}
