package prometheusrw

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The remote-write 1.0 messages (prometheus/prompb types.proto and
// remote.proto), written by hand with protowire: the output sends only
// WriteRequest{timeseries} with labels, float samples and integer native
// histograms, so six small encoders replace the generated prompb package and
// the large module that carries it.
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; repeated Histogram histograms = 4; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; }
//	Histogram    { uint64 count_int = 1; double sum = 3; sint32 schema = 4; double zero_threshold = 5;
//	               uint64 zero_count_int = 6; repeated BucketSpan negative_spans = 8; repeated sint64 negative_deltas = 9;
//	               repeated BucketSpan positive_spans = 11; repeated sint64 positive_deltas = 12; int64 timestamp = 15; }
//	BucketSpan   { sint32 offset = 1; uint32 length = 2; }

// staleNaN is Prometheus's stale marker (value.StaleNaN).
var staleNaN = math.Float64frombits(0x7ff0000000000002)

type label struct {
	name, value string
}

// encoder builds one WriteRequest; scratch buffers are reused between
// series.
type encoder struct {
	out []byte
	ts  []byte
	sub []byte
	n   int // time series written
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendDouble(b []byte, field protowire.Number, v float64) []byte {
	b = protowire.AppendTag(b, field, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func appendVarint(b []byte, field protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendMessage(b []byte, field protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

// labels appends the series' labels with name as __name__ at its sorted place.
func (e *encoder) labels(name string, ls []label) {
	e.ts = e.ts[:0]
	named := false
	for _, l := range ls {
		if !named && l.name > "__name__" {
			e.ts = e.label(e.ts, "__name__", name)
			named = true
		}
		e.ts = e.label(e.ts, l.name, l.value)
	}
	if !named {
		e.ts = e.label(e.ts, "__name__", name)
	}
}

func (e *encoder) label(b []byte, name, value string) []byte {
	e.sub = appendString(e.sub[:0], 1, name)
	e.sub = appendString(e.sub, 2, value)
	return appendMessage(b, 1, e.sub)
}

// sample writes a series with one float sample.
func (e *encoder) sample(name string, ls []label, v float64, ms int64) {
	e.labels(name, ls)
	e.sub = appendDouble(e.sub[:0], 1, v)
	e.sub = appendVarint(e.sub, 2, uint64(ms))
	e.ts = appendMessage(e.ts, 2, e.sub)
	e.out = appendMessage(e.out, 1, e.ts)
	e.n++
}

// histogram writes a series with one native histogram sample.
func (e *encoder) histogram(name string, ls []label, h *nativeHist, ms int64) {
	e.labels(name, ls)
	b := e.sub[:0]
	b = appendVarint(b, 1, h.count)
	b = appendDouble(b, 3, h.sum)
	b = appendVarint(b, 4, protowire.EncodeZigZag(int64(h.schema)))
	b = appendDouble(b, 5, zeroThreshold)
	b = appendVarint(b, 6, h.zero)
	b = appendBuckets(b, 8, 9, &h.neg)
	b = appendBuckets(b, 11, 12, &h.pos)
	b = appendVarint(b, 15, uint64(ms))
	e.sub = b
	e.ts = appendMessage(e.ts, 4, e.sub)
	e.out = appendMessage(e.out, 1, e.ts)
	e.n++
}

func appendBuckets(b []byte, spansField, deltasField protowire.Number, d *denseBuckets) []byte {
	spans, deltas := d.encode()
	if len(spans) == 0 {
		return b
	}
	var sp []byte
	for _, s := range spans {
		sp = appendVarint(sp[:0], 1, protowire.EncodeZigZag(int64(s.offset)))
		sp = appendVarint(sp, 2, uint64(s.length))
		b = appendMessage(b, spansField, sp)
	}
	var packed []byte
	for _, d := range deltas {
		packed = protowire.AppendVarint(packed, protowire.EncodeZigZag(d))
	}
	return appendMessage(b, deltasField, packed)
}
