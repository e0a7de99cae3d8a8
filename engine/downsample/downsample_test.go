package downsample

import (
	"reflect"
	"testing"
)

// The older half merges pairwise, an odd one at the boundary stays, the
// newer half is kept; nothing is lost (the sums add up).
func TestOlderHalf(t *testing.T) {
	sum := func(a, b int) int { return a + b }
	for _, c := range []struct{ in, want []int }{
		{[]int{1, 2, 3, 4, 5, 6, 7, 8}, []int{3, 7, 5, 6, 7, 8}},
		{[]int{1, 2, 3, 4, 5, 6}, []int{3, 3, 4, 5, 6}},
		{[]int{1}, []int{1}},
		{nil, []int{}},
	} {
		if got := OlderHalf(c.in, sum); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: %v, want %v", c.in, got, c.want)
		}
	}
}
