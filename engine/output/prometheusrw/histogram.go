package prometheusrw

import (
	"math"
	"sort"
)

// Native histograms as Prometheus defines them (docs "Native Histograms",
// prompb.Histogram): for schema s, bucket k of the positive side holds the
// values in (2^((k-1)/2^s), 2^(k/2^s)], the negative side mirrors it, and
// values with |v| <= the zero threshold are counted in the zero bucket.
// Counts are cumulative since the start of the run, so two runners'
// histograms of the same schema add up bucket by bucket (sum by (le) ... in
// PromQL) into the histogram of the whole test.

// zeroThreshold is the client libraries' default (2^-128): in practice only
// exact zeros fall in the zero bucket.
const zeroThreshold = 2.938735877055719e-39

// maxBuckets bounds one side of a histogram: a value that would widen it
// past this many buckets is counted in the edge bucket. At schema 8 it
// spans 2^64, far more than any latency; only absurd values reach it.
const maxBuckets = 1 << 14

// nativeHist is one series' native histogram.
type nativeHist struct {
	schema  int32
	bounds  []float64 // for schema > 0: the 2^s fractions where buckets of an octave end
	count   uint64
	zero    uint64
	sum     float64
	pos     denseBuckets
	neg     denseBuckets
	clamped uint64
}

// denseBuckets are the counts of consecutive buckets from index first.
type denseBuckets struct {
	first  int32
	counts []uint64
}

func newNativeHist(schema int32) *nativeHist {
	h := &nativeHist{schema: schema}
	if schema > 0 {
		n := 1 << schema
		h.bounds = make([]float64, n)
		for j := range n {
			h.bounds[j] = math.Exp2(float64(j)/float64(n)) / 2
		}
	}
	return h
}

// bucketKey is the index of the bucket holding v > 0.
func (h *nativeHist) bucketKey(v float64) int32 {
	frac, exp := math.Frexp(v) // v = frac·2^exp, frac in [0.5, 1)
	if h.schema > 0 {
		n := len(h.bounds)
		return int32(sort.SearchFloat64s(h.bounds, frac) + (exp-1)*n)
	}
	k := int32(exp)
	if frac == 0.5 {
		k-- // v is a power of two: the upper bound of bucket exp-1
	}
	shift := -h.schema
	return (k + (1 << shift) - 1) >> shift // ceil(k / 2^-schema)
}

func (h *nativeHist) observe(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	h.count++
	h.sum += v
	switch {
	case math.Abs(v) <= zeroThreshold:
		h.zero++
	case v > 0:
		h.clamped += h.pos.inc(h.bucketKey(v))
	default:
		h.clamped += h.neg.inc(h.bucketKey(-v))
	}
}

// inc counts one value in bucket k; it returns 1 when k was beyond
// maxBuckets and the edge bucket took it.
func (b *denseBuckets) inc(k int32) uint64 {
	if len(b.counts) == 0 {
		b.first = k
		b.counts = append(b.counts, 1)
		return 0
	}
	var clamped uint64
	last := b.first + int32(len(b.counts)) - 1
	switch {
	case k < b.first:
		if last-k >= maxBuckets {
			k, clamped = last-maxBuckets+1, 1
		}
		grow := int(b.first - k)
		b.counts = append(make([]uint64, grow, grow+len(b.counts)), b.counts...)
		b.first = k
	case k > last:
		if k-b.first >= maxBuckets {
			k, clamped = b.first+maxBuckets-1, 1
		}
		for b.first+int32(len(b.counts))-1 < k {
			b.counts = append(b.counts, 0)
		}
	}
	b.counts[k-b.first]++
	return clamped
}

// span is a run of consecutive buckets: offset from the end of the previous
// span (from 0 for the first), then length.
type span struct {
	offset int32
	length uint32
}

// encode returns the spans and the delta-encoded counts of the populated
// buckets, as prompb wants them. Runs of up to two empty buckets stay inside
// a span (cheaper than a new span), longer ones start a new span.
func (b *denseBuckets) encode() ([]span, []int64) {
	var spans []span
	var deltas []int64
	var prev int64
	end := int32(0) // index after the last span
	started := false
	for i := 0; i < len(b.counts); {
		if b.counts[i] == 0 {
			i++
			continue
		}
		j := i // extend the span over non-empty buckets and short gaps
		for j < len(b.counts) {
			if b.counts[j] != 0 {
				j++
				continue
			}
			gap := j
			for gap < len(b.counts) && b.counts[gap] == 0 {
				gap++
			}
			if gap == len(b.counts) || gap-j > 2 {
				break
			}
			j = gap
		}
		idx := b.first + int32(i)
		off := idx
		if started {
			off = idx - end
		}
		spans = append(spans, span{offset: off, length: uint32(j - i)})
		for k := i; k < j; k++ {
			c := int64(b.counts[k])
			deltas = append(deltas, c-prev)
			prev = c
		}
		end = b.first + int32(j)
		started = true
		i = j
	}
	return spans, deltas
}
