package segment

import (
	"fmt"
	"math/big"
	"sort"
)

// MaxDenominator bounds the common denominator D of a sequence's segment
// lengths: the stripe pattern stores D positions, so a pathological decimal
// such as 0.12345678 is refused rather than exhausting memory.
const MaxDenominator = 1 << 22

// Tuple is one instance's view of a distributed run: the full (filled)
// sequence, which of its segments this instance runs, and the stripe pattern
// of every segment. It is immutable and safe for concurrent use.
type Tuple struct {
	seq     Sequence // filled points
	index   int      // this instance's segment
	d       int64    // common denominator: the pattern repeats every d elements
	shares  []int64  // n_i: segment i's elements per block
	members [][]int64
	// members[i] lists, ascending, the positions 0…d−1 of one block that
	// belong to segment i.
}

// NewTuple builds the tuple for segment seg of sequence seq. seq may be empty
// (the sequence is then completed from the segment alone, §3.1); a given
// sequence must contain seg as one of its segments.
func NewTuple(seg Segment, seq Sequence) (*Tuple, error) {
	if seg.From == nil || seg.To == nil {
		seg = Full()
	}
	pts := filled(seg, seq)
	index := -1
	for i := 0; i+1 < len(pts); i++ {
		if pts[i].Cmp(seg.From) == 0 && pts[i+1].Cmp(seg.To) == 0 {
			index = i
			break
		}
	}
	if index < 0 {
		return nil, fmt.Errorf("provided segment %s can't be found in sequence %s", seg, seq)
	}
	lengths := make([]*big.Rat, len(pts)-1)
	for i := range lengths {
		lengths[i] = new(big.Rat).Sub(pts[i+1], pts[i])
	}
	t, err := stripe(lengths)
	if err != nil {
		return nil, fmt.Errorf("execution segment sequence %s: %w", pts, err)
	}
	t.seq, t.index = pts, index
	return t, nil
}

// FullTuple is the tuple of a run that is not split: everything maps to itself.
func FullTuple() *Tuple {
	return &Tuple{
		seq:     Sequence{new(big.Rat), big.NewRat(1, 1)},
		d:       1,
		shares:  []int64{1},
		members: [][]int64{{0}},
	}
}

// stripe runs the §3.2 algorithm over segment lengths that add up to 1.
func stripe(lengths []*big.Rat) (*Tuple, error) {
	d := big.NewInt(1)
	for _, l := range lengths {
		den := l.Denom()
		g := new(big.Int).GCD(nil, nil, d, den)
		d.Mul(d, new(big.Int).Quo(den, g))
		if d.Cmp(big.NewInt(MaxDenominator)) > 0 {
			return nil, fmt.Errorf("segments too fine: their common denominator exceeds %d", MaxDenominator)
		}
	}
	D := d.Int64()
	shares := make([]int64, len(lengths))
	for i, l := range lengths {
		n := new(big.Int).Mul(l.Num(), d)
		shares[i] = n.Quo(n, l.Denom()).Int64()
	}
	// Larger shares first; ties keep sequence order.
	order := make([]int, len(lengths))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return shares[order[a]] > shares[order[b]] })

	// Element e goes to the first segment (in that order) whose count c
	// satisfies e·n ≥ c·D. A segment becomes eligible at element
	// ceil(c·D/n) and stays so until it takes one; so rather than scanning
	// every segment per element (O(D·S)), keep the waiting segments in a
	// heap by eligibility and the eligible ones in a heap by rank: O(D log S).
	members := make([][]int64, len(lengths))
	waiting := &minHeap{}
	ready := &minHeap{}
	for rank, s := range order {
		members[s] = make([]int64, 0, shares[s])
		if shares[s] > 0 {
			waiting.push(item{key: 0, rank: rank, seg: s})
		}
	}
	for e := int64(0); e < D; e++ {
		for waiting.len() > 0 && waiting.peek().key <= e {
			it := waiting.pop()
			ready.push(item{key: int64(it.rank), rank: it.rank, seg: it.seg})
		}
		if ready.len() == 0 {
			return nil, fmt.Errorf("internal error: no segment can take element %d", e)
		}
		it := ready.pop()
		s := it.seg
		members[s] = append(members[s], e)
		if c := int64(len(members[s])); c < shares[s] {
			waiting.push(item{key: (c*D + shares[s] - 1) / shares[s], rank: it.rank, seg: s})
		}
	}
	return &Tuple{d: D, shares: shares, members: members}, nil
}

// Segment is this instance's segment.
func (t *Tuple) Segment() Segment { return Segment{From: t.seq[t.index], To: t.seq[t.index+1]} }

// Sequence is the filled sequence the run uses.
func (t *Tuple) Sequence() Sequence { return t.seq }

// Index is the position of this instance's segment in Sequence.
func (t *Tuple) Index() int { return t.index }

// IsFull reports whether this instance runs the whole test.
func (t *Tuple) IsFull() bool { return len(t.seq) == 2 }

// Start is the first element of this instance's pattern (0-based).
func (t *Tuple) Start() int64 { return t.members[t.index][0] }

// Offsets are the gaps between this segment's consecutive elements; the last
// gap wraps around into the next block.
func (t *Tuple) Offsets() []int64 {
	m := t.members[t.index]
	out := make([]int64, len(m))
	for i := range m {
		if i+1 < len(m) {
			out[i] = m[i+1] - m[i]
		} else {
			out[i] = m[0] + t.d - m[i]
		}
	}
	return out
}

// ScaleInt64 is how many of the global indices 0…v−1 belong to this
// instance. Summed over all segments it is exactly v, and it never decreases
// as v grows.
func (t *Tuple) ScaleInt64(v int64) int64 { return t.scaleSegment(t.index, v) }

func (t *Tuple) scaleSegment(i int, v int64) int64 {
	if v <= 0 {
		return 0
	}
	m := t.members[i]
	rem := v % t.d
	below := sort.Search(len(m), func(k int) bool { return m[k] >= rem })
	return (v/t.d)*t.shares[i] + int64(below)
}

// GlobalIndex maps this instance's local 0-based index to the global 0-based
// index. Local indices 0,1,2,… of all instances map onto disjoint sets that
// together are 0,1,2,….
func (t *Tuple) GlobalIndex(local int64) int64 {
	m := t.members[t.index]
	n := int64(len(m))
	if n == 1 {
		return local*t.d + m[0]
	}
	return (local/n)*t.d + m[local%n]
}

// Derive builds the tuple k6 uses to split a quantity v across instances in
// proportion to each instance's share of v, not to its segment length
// (shared-iterations derives from vus, the arrival-rate executors from maxVUs,
// §3.3). ok is false when this instance's share of v is 0: the scenario does
// not run here.
func (t *Tuple) Derive(v int64) (derived *Tuple, ok bool, err error) {
	if t.IsFull() {
		return t, v > 0, nil
	}
	if v <= 0 {
		return nil, false, nil
	}
	own := t.ScaleInt64(v)
	if own == 0 {
		return nil, false, nil
	}
	var lengths []*big.Rat
	pts := Sequence{new(big.Rat)}
	index := -1
	for i := range t.shares {
		c := t.scaleSegment(i, v)
		if c == 0 {
			continue
		}
		if i == t.index {
			index = len(lengths)
		}
		l := big.NewRat(c, v)
		lengths = append(lengths, l)
		pts = append(pts, new(big.Rat).Add(pts[len(pts)-1], l))
	}
	d, err := stripe(lengths)
	if err != nil {
		return nil, false, fmt.Errorf("splitting %d across %s: %w", v, t.seq, err)
	}
	d.seq, d.index = pts, index
	return d, true, nil
}

// item is a heap entry: ordered by key, then rank.
type item struct {
	key  int64
	rank int
	seg  int
}

type minHeap []item

func (h *minHeap) len() int   { return len(*h) }
func (h *minHeap) peek() item { return (*h)[0] }
func (h *minHeap) less(i, j int) bool {
	a, b := (*h)[i], (*h)[j]
	return a.key < b.key || (a.key == b.key && a.rank < b.rank)
}

func (h *minHeap) push(it item) {
	*h = append(*h, it)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *minHeap) pop() item {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		(*h)[i], (*h)[m] = (*h)[m], (*h)[i]
		i = m
	}
	return top
}
