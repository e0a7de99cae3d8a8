package store

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestListKeepsRankOrderThroughInsertsAndRemovals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l list
	var ref []*record
	for i := 0; i < 5000; i++ {
		r := &record{at: int64(rng.IntN(300)), id: hexID(i)}
		l.insert(r)
		ref = append(ref, r)
		if i%3 == 0 { // remove a random earlier record
			j := rng.IntN(len(ref))
			if !l.remove(ref[j]) {
				t.Fatalf("remove of a present record failed")
			}
			if l.remove(ref[j]) {
				t.Fatalf("second remove of the same record succeeded")
			}
			ref = slices.Delete(ref, j, j+1)
		}
	}
	slices.SortFunc(ref, func(a, b *record) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	var got []*record
	l.each(func(r *record) bool { got = append(got, r); return true })
	if l.len() != len(ref) || !slices.Equal(got, ref) {
		t.Fatalf("list has %d records (len %d), want %d in rank order", len(got), l.len(), len(ref))
	}
	for _, c := range l.chunks {
		if len(c) == 0 || len(c) > chunkMax {
			t.Fatalf("chunk of %d records", len(c))
		}
	}
	// seek to a cursor lands on the first record ranking after it.
	cur := ref[len(ref)/2]
	p := l.seek(afterCursor(cur.at, cur.id))
	if got := l.at(&p); got != ref[len(ref)/2+1] {
		t.Fatalf("seek after cursor landed on the wrong record")
	}
	// prev walks back to the start.
	end, n := l.end(), 0
	for l.prev(&end) != nil {
		n++
	}
	if n != len(ref) {
		t.Fatalf("prev walked %d records, want %d", n, len(ref))
	}
}
