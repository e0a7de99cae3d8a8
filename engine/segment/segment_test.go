package segment

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func mustTuple(t *testing.T, seg, seq string) *Tuple {
	t.Helper()
	s, err := ParseSegment(seg)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseSequence(seq)
	if err != nil {
		t.Fatal(err)
	}
	tu, err := NewTuple(s, q)
	if err != nil {
		t.Fatal(err)
	}
	return tu
}

func TestParseSegment(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"empty means the whole run", "", "0:1"},
		{"bare value means from zero", "1/2", "0:1/2"},
		{"fractions", "0:1/2", "0:1/2"},
		{"fraction to one", "1/2:1", "1/2:1"},
		{"integer percentages", "50%:100%", "1/2:1"},
		{"decimals", "0.25:0.75", "1/4:3/4"},
		{"mixed forms", "1/2:75%", "1/2:3/4"},
		{"spaces are trimmed", " 1/3 : 2/3 ", "1/3:2/3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSegment(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if s.String() != c.want {
				t.Errorf("ParseSegment(%q) = %s, want %s", c.in, s, c.want)
			}
		})
	}
}

func TestParseSegmentErrors(t *testing.T) {
	cases := []struct {
		name, in, wantErr string
	}{
		{"fractional percentage is rejected", "0:12.5%", "'12.5%' is not a valid percentage"},
		{"start must be below end", "1/2:1/2", "must be below"},
		{"reversed segment", "3/4:1/4", "must be below"},
		{"above one", "0:2", "outside [0, 1]"},
		{"negative", "-1/2:1", "outside [0, 1]"},
		{"garbage", "0:abc", "'abc' is not a number"},
		{"missing end", "1/2:", "empty value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSegment(c.in)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ParseSegment(%q) error = %v, want it to contain %q", c.in, err, c.wantErr)
			}
		})
	}
}

func TestParseSequence(t *testing.T) {
	q, err := ParseSequence("0,1/3,66.6666%,1")
	if err == nil {
		t.Fatalf("fractional percentage accepted: %v", q)
	}
	q, err = ParseSequence("0, 25%, 0.5, 1")
	if err != nil {
		t.Fatal(err)
	}
	if q.String() != "0,1/4,1/2,1" {
		t.Errorf("got %s", q)
	}
	for _, bad := range []string{"1/2", "0,1/2,1/2,1", "0,3/4,1/2", "0,x"} {
		if _, err := ParseSequence(bad); err == nil {
			t.Errorf("ParseSequence(%q) accepted", bad)
		}
	}
}

func TestSegmentMustBeInSequence(t *testing.T) {
	s, _ := ParseSegment("1/4:1/2")
	q, _ := ParseSequence("0,1/3,1")
	_, err := NewTuple(s, q)
	if err == nil || err.Error() != "provided segment 1/4:1/2 can't be found in sequence 0,1/3,1" {
		t.Fatalf("error = %v", err)
	}
	// A sequence that does not start at 0 or end at 1 is filled.
	s, _ = ParseSegment("0:1/4")
	q, _ = ParseSequence("1/4,1/2")
	tu, err := NewTuple(s, q)
	if err != nil {
		t.Fatal(err)
	}
	if tu.Sequence().String() != "0,1/4,1/2,1" {
		t.Errorf("filled sequence = %s", tu.Sequence())
	}
}

// The §3.2 test vectors.
func TestStripingVectors(t *testing.T) {
	cases := []struct {
		seq, seg string
		start    int64
		offsets  []int64
		scale    string // ScaleInt64(1..12)
		globals  string // 1-based global ids of local 1..6
	}{
		{"0,1/3,2/3,1", "0:1/3", 0, []int64{3}, "1 1 1 2 2 2 3 3 3 4 4 4", "1 4 7 10 13 16"},
		{"0,1/3,2/3,1", "1/3:2/3", 1, []int64{3}, "0 1 1 1 2 2 2 3 3 3 4 4", "2 5 8 11 14 17"},
		{"0,1/3,2/3,1", "2/3:1", 2, []int64{3}, "0 0 1 1 1 2 2 2 3 3 3 4", "3 6 9 12 15 18"},
		{"0,1/2,3/4,1", "0:1/2", 0, []int64{2, 2}, "1 1 2 2 3 3 4 4 5 5 6 6", "1 3 5 7 9 11"},
		{"0,1/2,3/4,1", "1/2:3/4", 1, []int64{4}, "0 1 1 1 1 2 2 2 2 3 3 3", "2 6 10 14 18 22"},
		{"0,1/2,3/4,1", "3/4:1", 3, []int64{4}, "0 0 0 1 1 1 1 2 2 2 2 3", "4 8 12 16 20 24"},
	}
	for _, c := range cases {
		t.Run(c.seq+" "+c.seg, func(t *testing.T) {
			tu := mustTuple(t, c.seg, c.seq)
			if tu.Start() != c.start || !reflect.DeepEqual(tu.Offsets(), c.offsets) {
				t.Errorf("start %d offsets %v, want %d %v", tu.Start(), tu.Offsets(), c.start, c.offsets)
			}
			var scale, globals []string
			for v := int64(1); v <= 12; v++ {
				scale = append(scale, fmt.Sprint(tu.ScaleInt64(v)))
			}
			for l := int64(0); l < 6; l++ {
				globals = append(globals, fmt.Sprint(tu.GlobalIndex(l)+1))
			}
			if got := strings.Join(scale, " "); got != c.scale {
				t.Errorf("ScaleInt64(1..12) = %s, want %s", got, c.scale)
			}
			if got := strings.Join(globals, " "); got != c.globals {
				t.Errorf("global ids = %s, want %s", got, c.globals)
			}
		})
	}
}

// tuplesOf returns one tuple per segment of the sequence.
func tuplesOf(t *testing.T, seq string) []*Tuple {
	t.Helper()
	q, err := ParseSequence(seq)
	if err != nil {
		t.Fatal(err)
	}
	pts := filled(Full(), q)
	var out []*Tuple
	for i := 0; i+1 < len(pts); i++ {
		tu, err := NewTuple(Segment{From: pts[i], To: pts[i+1]}, q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tu)
	}
	return out
}

var sequences = []string{
	"0,1",
	"0,1/2,1",
	"0,1/3,2/3,1",
	"0,1/2,3/4,1",
	"0,1/4,1/2,3/4,1",
	"0,1/10,3/10,1",
	"0,1/7,2/5,1/2,5/6,1",
	"0,0.125,0.3,0.99,1",
	"0,1/1000,1",
	"0,2/3,1",
}

// Property: the instances of any sequence scale every value to shares that add
// up exactly to it, each share is monotone, and their global indices are a
// partition of 0…v−1 consistent with ScaleInt64.
func TestScaleAndGlobalIndexPartition(t *testing.T) {
	for _, seq := range sequences {
		tuples := tuplesOf(t, seq)
		for v := int64(0); v <= 250; v++ {
			var sum int64
			for _, tu := range tuples {
				s := tu.ScaleInt64(v)
				if v > 0 && s < tu.ScaleInt64(v-1) {
					t.Fatalf("%s: ScaleInt64 decreased at %d", seq, v)
				}
				sum += s
			}
			if sum != v {
				t.Fatalf("%s: shares of %d add up to %d", seq, v, sum)
			}
		}
		seen := map[int64]int{}
		const n = 500
		for i, tu := range tuples {
			for l := int64(0); ; l++ {
				g := tu.GlobalIndex(l)
				if g >= n {
					if got := tu.ScaleInt64(n); got != l {
						t.Fatalf("%s segment %d: %d locals below %d, ScaleInt64 says %d", seq, i, l, n, got)
					}
					break
				}
				if l > 0 && g <= tu.GlobalIndex(l-1) {
					t.Fatalf("%s: global index not increasing", seq)
				}
				if prev, dup := seen[g]; dup {
					t.Fatalf("%s: global %d used by segments %d and %d", seq, g, prev, i)
				}
				seen[g] = i
			}
		}
		if len(seen) != n {
			t.Fatalf("%s: %d of %d global indices covered", seq, len(seen), n)
		}
	}
}

// §3.3: shared-iterations with vus 5 and 10 iterations on thirds gives VUs
// 2/2/1, iterations 4/4/2, ids {0,3,5,8}/{1,4,6,9}/{2,7}.
func TestDeriveFromVUs(t *testing.T) {
	tuples := tuplesOf(t, "0,1/3,2/3,1")
	wantVUs := []int64{2, 2, 1}
	wantIters := [][]int64{{0, 3, 5, 8}, {1, 4, 6, 9}, {2, 7}}
	for i, tu := range tuples {
		if got := tu.ScaleInt64(5); got != wantVUs[i] {
			t.Errorf("segment %d: %d VUs, want %d", i, got, wantVUs[i])
		}
		d, ok, err := tu.Derive(5)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if d.Sequence().String() != "0,2/5,4/5,1" {
			t.Errorf("derived sequence %s", d.Sequence())
		}
		n := d.ScaleInt64(10)
		var ids []int64
		for l := int64(0); l < n; l++ {
			ids = append(ids, d.GlobalIndex(l))
		}
		if !reflect.DeepEqual(ids, wantIters[i]) {
			t.Errorf("segment %d: iteration ids %v, want %v", i, ids, wantIters[i])
		}
	}
}

// Arrival-rate example of §3.3: rate 12/s for 1s, 5 VUs, thirds: instance 1
// gets events 0,3,5,8,10 (0, 250, 417, 667, 833 ms), instance 3 gets 2.
func TestDeriveArrivalEvents(t *testing.T) {
	tuples := tuplesOf(t, "0,1/3,2/3,1")
	want := [][]int64{{0, 3, 5, 8, 10}, {1, 4, 6, 9, 11}, {2, 7}}
	for i, tu := range tuples {
		d, ok, err := tu.Derive(5)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		var ev []int64
		for l := int64(0); d.GlobalIndex(l) < 12; l++ {
			ev = append(ev, d.GlobalIndex(l))
		}
		if !reflect.DeepEqual(ev, want[i]) {
			t.Errorf("instance %d events %v, want %v", i+1, ev, want[i])
		}
	}
}

func TestDeriveZeroShareDoesNotRun(t *testing.T) {
	tuples := tuplesOf(t, "0,1/3,2/3,1")
	// One VU lands on the first instance only.
	for i, tu := range tuples {
		_, ok, err := tu.Derive(1)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (i == 0) {
			t.Errorf("instance %d runs=%v", i, ok)
		}
	}
}

// Property: derived tuples still partition every quantity exactly.
func TestDerivedPartitions(t *testing.T) {
	for _, seq := range sequences {
		tuples := tuplesOf(t, seq)
		for _, v := range []int64{1, 2, 3, 5, 7, 10, 13, 100} {
			for _, total := range []int64{0, 1, 9, 10, 77, 1000} {
				var sum int64
				seen := map[int64]bool{}
				for _, tu := range tuples {
					d, ok, err := tu.Derive(v)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						continue
					}
					n := d.ScaleInt64(total)
					sum += n
					for l := int64(0); l < n; l++ {
						g := d.GlobalIndex(l)
						if g >= total || seen[g] {
							t.Fatalf("%s v=%d total=%d: bad or duplicate global %d", seq, v, total, g)
						}
						seen[g] = true
					}
				}
				if sum != total {
					t.Fatalf("%s v=%d: derived shares of %d add up to %d", seq, v, total, sum)
				}
			}
		}
	}
}

func TestWithoutSequenceEachInstanceCompletesItsOwn(t *testing.T) {
	// The §3.1 pitfall: 0:1/3, 1/3:2/3, 2/3:1 each without a sequence scale 10
	// VUs to 3+3+3... only when every instance is given the full sequence do they add up.
	var sum int64
	for _, seg := range []string{"0:1/3", "1/3:2/3", "2/3:1"} {
		sum += mustTuple(t, seg, "").ScaleInt64(10)
	}
	if sum == 10 {
		t.Fatalf("expected the documented mismatch without a sequence, got exactly 10")
	}
	sum = 0
	for _, seg := range []string{"0:1/3", "1/3:2/3", "2/3:1"} {
		sum += mustTuple(t, seg, "0,1/3,2/3,1").ScaleInt64(10)
	}
	if sum != 10 {
		t.Fatalf("with the sequence: %d", sum)
	}
}

func TestFullTupleIsIdentity(t *testing.T) {
	for _, tu := range []*Tuple{FullTuple(), mustTuple(t, "", "")} {
		if !tu.IsFull() || tu.ScaleInt64(17) != 17 || tu.GlobalIndex(41) != 41 {
			t.Fatalf("full tuple is not the identity")
		}
		d, ok, _ := tu.Derive(3)
		if !ok || d.ScaleInt64(9) != 9 {
			t.Fatalf("derived full tuple is not the identity")
		}
	}
}

func TestTooFineSequenceIsAnError(t *testing.T) {
	s := Segment{From: new(big.Rat), To: big.NewRat(1, 7919)}
	q := Sequence{new(big.Rat), big.NewRat(1, 7919), big.NewRat(1, 7907), big.NewRat(1, 2)}
	if _, err := NewTuple(s, q); err == nil || !strings.Contains(err.Error(), "too fine") {
		t.Fatalf("error = %v", err)
	}
}

// naiveMembers is §3.2 step 3 written the obvious way, O(D·S).
func naiveMembers(shares []int64, d int64) [][]int64 {
	order := make([]int, len(shares))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return shares[order[a]] > shares[order[b]] })
	members := make([][]int64, len(shares))
	for e := int64(0); e < d; e++ {
		for _, s := range order {
			if shares[s] > 0 && e*shares[s] >= int64(len(members[s]))*d {
				members[s] = append(members[s], e)
				break
			}
		}
	}
	return members
}

// Property: the heap-based striping equals the plain scan on random sequences.
func TestStripingMatchesPlainScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		n := 2 + rng.IntN(7)
		den := int64(2 + rng.IntN(60))
		// n−1 distinct cut points k/den in (0,1)
		cuts := map[int64]bool{}
		for len(cuts) < n-1 && len(cuts) < int(den-1) {
			cuts[1+rng.Int64N(den-1)] = true
		}
		var ks []int64
		for k := range cuts {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
		var lengths []*big.Rat
		prev := int64(0)
		for _, k := range append(ks, den) {
			lengths = append(lengths, big.NewRat(k-prev, den))
			prev = k
		}
		tu, err := stripe(lengths)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveMembers(tu.shares, tu.d)
		if !reflect.DeepEqual(tu.members, want) {
			t.Fatalf("lengths %v: heap %v, scan %v", lengths, tu.members, want)
		}
	}
}

// BenchmarkStripeManySegments: 1000 segments over a common denominator of
// 4,000,000 (near MaxDenominator); a plain scan would do 4·10⁹ steps.
func BenchmarkStripeManySegments(b *testing.B) {
	var q Sequence
	for i := int64(0); i <= 1000; i++ {
		q = append(q, big.NewRat(i*3999, 4_000_000))
	}
	q = append(q, big.NewRat(1, 1))
	for i := 0; i < b.N; i++ {
		if _, err := NewTuple(Segment{From: q[1], To: q[2]}, q); err != nil {
			b.Fatal(err)
		}
	}
}
