package segment

import "testing"

// Bad flags never panic, and any tuple that parses splits values exactly.
func FuzzSegmentAndSequence(f *testing.F) {
	for _, s := range [][2]string{{"0:1/2", "0,1/2,1"}, {"50%:100%", ""}, {"1/3:2/3", "0,1/3,2/3,1"}, {"0:12.5%", ""}, {"0.1:0.2", "0.1,0.2,0.7"}, {"1/0", "1/0,1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, seg, seq string) {
		s, err := ParseSegment(seg)
		if err != nil {
			return
		}
		q, err := ParseSequence(seq)
		if err != nil {
			return
		}
		tu, err := NewTuple(s, q)
		if err != nil {
			return
		}
		for _, v := range []int64{0, 1, 7, 1000} {
			if n := tu.ScaleInt64(v); n < 0 || n > v {
				t.Fatalf("ScaleInt64(%d) = %d", v, n)
			}
		}
		if _, _, err := tu.Derive(17); err != nil {
			return
		}
	})
}
