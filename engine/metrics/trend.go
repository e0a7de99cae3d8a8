package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Trend histogram geometry (see the package doc for why).
const (
	trendScale   = 1e6  // histogram units per metric unit: ns for a time Trend (ms)
	trendHighest = 1e18 // units: 1e12 ms (about 31 years) for time
	trendSigFigs = 2
	// With 1 as the lowest value and 2 significant digits the histogram has
	// 256 sub-buckets: values below 256 have width 1, and a value v above
	// has width 2^(bitlen(v)-8). Two digits, not three: a run-long series
	// keeps filling rare buckets for hours, and at three digits that was the
	// largest growth of the 2½-hour soak (issue 43, docs/benchmarks.md).
	trendSubBucketBits = 8
	// exactLimit is how many values a Trend also keeps as they are, so short
	// runs and small groups get k6's exact percentiles; past it only the
	// histogram is kept and memory stays flat.
	exactLimit = 512
)

// int128 is a signed 128-bit accumulator, so sums of unit values never
// overflow and add up the same in any order.
type int128 struct {
	hi int64
	lo uint64
}

func (a *int128) add(x int64) {
	var carry uint64
	a.lo, carry = bits.Add64(a.lo, uint64(x), 0)
	a.hi += int64(carry) + (x >> 63) // x>>63 is -1 for negatives: sign extension
}

func (a *int128) addWide(b int128) {
	var carry uint64
	a.lo, carry = bits.Add64(a.lo, b.lo, 0)
	a.hi += b.hi + int64(carry)
}

func (a int128) float() float64 {
	// Within int64 convert directly: hi*2^64+lo in floats would cancel badly
	// for small negative sums.
	if (a.hi == 0 && a.lo < 1<<63) || (a.hi == -1 && a.lo >= 1<<63) {
		return float64(int64(a.lo))
	}
	f, _ := new(big.Float).SetInt(a.big()).Float64()
	return f
}

func (a int128) big() *big.Int {
	v := new(big.Int).SetInt64(a.hi)
	v.Lsh(v, 64)
	return v.Add(v, new(big.Int).SetUint64(a.lo))
}

func int128FromBig(v *big.Int) (int128, error) {
	if v.BitLen() > 127 {
		return int128{}, fmt.Errorf("sum %s does not fit 128 bits", v)
	}
	lo := new(big.Int).And(v, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(v, 64) // arithmetic shift (floor) for negatives
	return int128{hi: hi.Int64(), lo: lo}, nil
}

// TrendSink keeps the distribution of values in a sparse HDR histogram with
// exact count, min, max and sum.
type TrendSink struct {
	pos     *hdr.PackedHistogram // magnitudes of values >= 0
	neg     *hdr.PackedHistogram // magnitudes of values < 0, created on first use
	count   int64
	sum     int128 // in units (value*1e6)
	min     float64
	max     float64
	clamped int64 // values beyond the histogram's range, recorded at its edge
	// exact holds every value while count <= exactLimit (nil after).
	exact  []float64
	sorted bool
}

// NewTrendSink returns an empty Trend sink.
func NewTrendSink() *TrendSink {
	return &TrendSink{pos: newTrendHist()}
}

func newTrendHist() *hdr.PackedHistogram { return hdr.NewPacked(1, trendHighest, trendSigFigs) }

// Type is Trend.
func (t *TrendSink) Type() Type { return Trend }

// Add records v.
func (t *TrendSink) Add(v float64, _ time.Time) {
	if !finite(v) {
		return
	}
	u := math.Round(math.Abs(v) * trendScale)
	su := u
	if su > math.MaxInt64/2 {
		su = math.MaxInt64 / 2
	}
	if u > trendHighest {
		u = trendHighest
		t.clamped++
	}
	iu := int64(u)
	if v < 0 && iu > 0 {
		if t.neg == nil {
			t.neg = newTrendHist()
		}
		_ = t.neg.RecordValue(iu) // cannot fail: 0 < iu <= highest
		t.sum.add(-int64(su))
	} else {
		_ = t.pos.RecordValue(iu)
		t.sum.add(int64(su))
	}
	if t.count == 0 {
		t.min, t.max = v, v
	} else {
		t.min = math.Min(t.min, v)
		t.max = math.Max(t.max, v)
	}
	t.count++
	if t.count <= exactLimit {
		t.exact = append(t.exact, v)
		t.sorted = false
	} else {
		t.exact = nil
	}
}

// exactValues returns the sorted values while they are all kept, else nil.
func (t *TrendSink) exactValues() []float64 {
	if t.count == 0 || t.count > exactLimit {
		return nil
	}
	if !t.sorted {
		sort.Float64s(t.exact)
		t.sorted = true
	}
	return t.exact
}

// IsEmpty reports whether nothing was added.
func (t *TrendSink) IsEmpty() bool { return t.count == 0 }

// Count is the number of values.
func (t *TrendSink) Count() int64 { return t.count }

// Min is the smallest value (exact; 0 when empty).
func (t *TrendSink) Min() float64 { return t.min }

// Max is the largest value (exact; 0 when empty).
func (t *TrendSink) Max() float64 { return t.max }

// Sum is the sum of the values, exact to 1e-6 of the unit.
func (t *TrendSink) Sum() float64 { return t.sum.float() / trendScale }

// Avg is the mean (0 when empty).
func (t *TrendSink) Avg() float64 {
	if t.count == 0 {
		return 0
	}
	return t.sum.float() / trendScale / float64(t.count)
}

// Clamped is how many values were beyond ±1e12 and recorded at the edge of
// the histogram (min, max and sum still hold them exactly).
func (t *TrendSink) Clamped() int64 { return t.clamped }

// MemoryBytes estimates the histogram storage.
func (t *TrendSink) MemoryBytes() int {
	n := t.pos.GetMemorySize()
	if t.neg != nil {
		n += t.neg.GetMemorySize()
	}
	return n
}

// bucketMid is the middle of the bucket whose lowest value is v.
func bucketMid(v int64) int64 {
	if v < 1<<trendSubBucketBits {
		return v
	}
	w := int64(1) << (bits.Len64(uint64(v)) - trendSubBucketBits)
	return v + w/2
}

// valueAtRank returns the value at a 0-based rank in sorted order, read as the
// middle of its bucket; the first and last ranks are the exact min and max.
func (t *TrendSink) valueAtRank(r int64) float64 {
	if r <= 0 {
		return t.min
	}
	if r >= t.count-1 {
		return t.max
	}
	var cum int64
	if t.neg != nil && t.neg.TotalCount() > 0 {
		// Negative values sort by descending magnitude.
		type bucket struct{ v, c int64 }
		var bs []bucket
		t.neg.ForEachBucket(func(v, c int64) bool { bs = append(bs, bucket{v, c}); return true })
		for i := len(bs) - 1; i >= 0; i-- {
			cum += bs[i].c
			if r < cum {
				return -float64(bucketMid(bs[i].v)) / trendScale
			}
		}
	}
	out := t.max
	t.pos.ForEachBucket(func(v, c int64) bool {
		cum += c
		if r < cum {
			out = float64(bucketMid(v)) / trendScale
			return false
		}
		return true
	})
	return out
}

// Percentile returns p(N) for 0 <= p <= 100 the way k6 computes it: the
// sorted values are interpolated linearly at index (p/100)·(count−1). Empty
// gives 0 and a single value is returned as is.
func (t *TrendSink) Percentile(p float64) float64 {
	switch t.count {
	case 0:
		return 0
	case 1:
		return t.min
	}
	i := p / 100 * float64(t.count-1)
	lo := math.Floor(i)
	hi := math.Ceil(i)
	var a, b float64
	if ex := t.exactValues(); ex != nil {
		a, b = ex[int(lo)], ex[int(hi)]
	} else {
		a = t.valueAtRank(int64(lo))
		b = a
		if hi != lo {
			b = t.valueAtRank(int64(hi))
		}
	}
	v := a + (b-a)*(i-lo)
	return math.Min(math.Max(v, t.min), t.max)
}

// Value reads count, avg, min, max, med or p(N). Every value of an empty
// Trend is 0 (k6).
func (t *TrendSink) Value(s Stat, _ time.Duration) (float64, bool) {
	switch s.Kind {
	case StatCount:
		return float64(t.count), true
	case StatAvg:
		return t.Avg(), true
	case StatMin:
		return t.min, true
	case StatMax:
		return t.max, true
	case StatMed:
		return t.Percentile(50), true
	case StatPercentile:
		return t.Percentile(s.P), true
	}
	return 0, false
}

// Merge adds another Trend's content exactly: bucket counts, count, sum,
// min and max.
func (t *TrendSink) Merge(o Sink) error {
	ot, ok := o.(*TrendSink)
	if !ok {
		return fmt.Errorf("cannot merge a %s sink into a trend sink", o.Type())
	}
	if ot.count == 0 {
		return nil
	}
	if d := t.pos.Merge(ot.pos); d != 0 {
		return fmt.Errorf("trend merge dropped %d values", d)
	}
	if ot.neg != nil {
		if t.neg == nil {
			t.neg = newTrendHist()
		}
		if d := t.neg.Merge(ot.neg); d != 0 {
			return fmt.Errorf("trend merge dropped %d values", d)
		}
	}
	if t.count == 0 {
		t.min, t.max = ot.min, ot.max
	} else {
		t.min = math.Min(t.min, ot.min)
		t.max = math.Max(t.max, ot.max)
	}
	if t.count+ot.count <= exactLimit {
		t.exact = append(t.exact, ot.exact...)
		t.sorted = false
	} else {
		t.exact = nil
	}
	t.count += ot.count
	t.sum.addWide(ot.sum)
	t.clamped += ot.clamped
	return nil
}

// Clone returns a deep copy.
func (t *TrendSink) Clone() Sink {
	cp := *t
	cp.pos = t.pos.Clone()
	if t.neg != nil {
		cp.neg = t.neg.Clone()
	}
	cp.exact = append([]float64(nil), t.exact...)
	return &cp
}

// Reset empties the sink, keeping the histogram's storage.
func (t *TrendSink) Reset() {
	t.pos.Reset()
	if t.neg != nil {
		t.neg.Reset()
	}
	t.count, t.sum, t.min, t.max, t.clamped = 0, int128{}, 0, 0, 0
	t.exact = t.exact[:0]
}

// Buckets calls fn for each populated bucket in ascending value order with
// the bucket's middle value (in the metric's unit) and its count. Reports
// that want their own statistics use it.
func (t *TrendSink) Buckets(fn func(value float64, count int64)) {
	if t.neg != nil {
		type bucket struct{ v, c int64 }
		var bs []bucket
		t.neg.ForEachBucket(func(v, c int64) bool { bs = append(bs, bucket{v, c}); return true })
		for i := len(bs) - 1; i >= 0; i-- {
			fn(-float64(bucketMid(bs[i].v))/trendScale, bs[i].c)
		}
	}
	t.pos.ForEachBucket(func(v, c int64) bool { fn(float64(bucketMid(v))/trendScale, c); return true })
}

type trendJSON struct {
	Type     Type       `json:"type"`
	Count    int64      `json:"count"`
	SumUnits string     `json:"sum_units"`
	Min      float64    `json:"min"`
	Max      float64    `json:"max"`
	Clamped  int64      `json:"clamped,omitempty"`
	Pos      [][2]int64 `json:"pos"`
	Neg      [][2]int64 `json:"neg,omitempty"`
	Exact    []float64  `json:"exact,omitempty"`
}

func histPairs(h *hdr.PackedHistogram) [][2]int64 {
	out := [][2]int64{}
	if h == nil {
		return out
	}
	h.ForEachBucket(func(v, c int64) bool { out = append(out, [2]int64{v, c}); return true })
	return out
}

func (t *TrendSink) toJSON() any {
	j := trendJSON{Type: Trend, Count: t.count, SumUnits: t.sum.big().String(), Min: t.min, Max: t.max,
		Clamped: t.clamped, Pos: histPairs(t.pos)}
	if t.neg != nil && t.neg.TotalCount() > 0 {
		j.Neg = histPairs(t.neg)
	}
	j.Exact = t.exactValues()
	return j
}

func unmarshalTrend(b []byte) (*TrendSink, error) {
	var j trendJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("trend sink: %w", err)
	}
	t := NewTrendSink()
	var n int64
	record := func(h *hdr.PackedHistogram, pairs [][2]int64, what string) error {
		for i, p := range pairs {
			if p[0] < 0 || p[0] > trendHighest || p[1] <= 0 {
				return fmt.Errorf("trend sink: %s[%d]: invalid bucket [%d,%d]", what, i, p[0], p[1])
			}
			if err := h.RecordValues(p[0], p[1]); err != nil {
				return fmt.Errorf("trend sink: %s[%d]: %w", what, i, err)
			}
			n += p[1]
		}
		return nil
	}
	if err := record(t.pos, j.Pos, "pos"); err != nil {
		return nil, err
	}
	if len(j.Neg) > 0 {
		t.neg = newTrendHist()
		if err := record(t.neg, j.Neg, "neg"); err != nil {
			return nil, err
		}
	}
	if n != j.Count {
		return nil, fmt.Errorf("trend sink: buckets hold %d values but count is %d", n, j.Count)
	}
	if j.Count > 0 && j.Min > j.Max {
		return nil, fmt.Errorf("trend sink: min %v is above max %v", j.Min, j.Max)
	}
	sum, ok := new(big.Int).SetString(j.SumUnits, 10)
	if !ok {
		return nil, fmt.Errorf("trend sink: sum_units %q is not an integer", j.SumUnits)
	}
	s, err := int128FromBig(sum)
	if err != nil {
		return nil, fmt.Errorf("trend sink: %w", err)
	}
	if j.Count <= exactLimit && int64(len(j.Exact)) != j.Count {
		return nil, fmt.Errorf("trend sink: %d exact values for a count of %d", len(j.Exact), j.Count)
	}
	if j.Count <= exactLimit {
		t.exact = j.Exact
	}
	t.count, t.sum, t.min, t.max, t.clamped = j.Count, s, j.Min, j.Max, j.Clamped
	return t, nil
}
