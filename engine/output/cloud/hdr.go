package cloud

import (
	"math"
	"math/bits"
	"slices"
)

// hdr is a Trend's aggregate for one period in the form Grafana Cloud k6
// reads (TrendHdrValue): values in units of minResolution (1 µs for
// milliseconds), bucketed log-linearly with 2^7 sub-buckets per power of
// two above 255. The bucket index is a wire contract — the cloud computes
// percentiles from it — so it follows k6 v1.8.1's histogram as documented by
// its behaviour: index = ⌈v/res⌉ below 256; above, with n the index of the
// highest set bit of ⌈v/res⌉ >> 7, (n << 7) + (⌈v/res⌉ >> n). Negative values
// go to the extra-low counter, values past int64 to the extra-high one.
type hdr struct {
	buckets             map[uint32]uint32
	extraLow, extraHigh uint32
	min, max, sum       float64
	count               uint32
}

// minResolution is k6's: Trend values (ms) kept to the microsecond.
const minResolution = 0.001

func newHDR() *hdr {
	return &hdr{buckets: map[uint32]uint32{}, min: math.MaxFloat64, max: -math.MaxFloat64}
}

func (h *hdr) add(v float64) {
	h.max = max(h.max, v)
	h.min = min(h.min, v)
	h.count++
	h.sum += v
	scaled := v / minResolution
	switch {
	case scaled < 0:
		h.extraLow++
	case scaled > math.MaxInt64:
		h.extraHigh++
	default:
		h.buckets[bucketIndex(scaled)]++
	}
}

// bucketIndex is the log-linear index of a non-negative scaled value.
func bucketIndex(scaled float64) uint32 {
	const subBits = 7
	u := uint64(math.Ceil(scaled))
	if u < 1<<(subBits+1) {
		return uint32(u)
	}
	n := uint64(bits.Len64(u>>subBits)) - 1
	return uint32(n<<subBits + u>>n) //nolint:gosec // < 2^13 for any uint64
}

// span is a run of consecutive non-empty buckets: offset is the first
// index for the first span, the count of empty buckets since the previous
// span for the others.
type span struct{ offset, length uint32 }

// sparse returns the non-empty buckets in index order as counters and spans.
func (h *hdr) sparse() (counters []uint32, spans []span) {
	if len(h.buckets) == 0 {
		return nil, nil
	}
	idx := make([]uint32, 0, len(h.buckets))
	for i := range h.buckets {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	counters = make([]uint32, len(idx))
	for k, i := range idx {
		counters[k] = h.buckets[i]
		switch {
		case k == 0:
			spans = append(spans, span{offset: i, length: 1})
		case i == idx[k-1]+1:
			spans[len(spans)-1].length++
		default:
			spans = append(spans, span{offset: i - idx[k-1] - 1, length: 1})
		}
	}
	return counters, spans
}
