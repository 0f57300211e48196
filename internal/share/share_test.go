package share

import (
	"math"
	"testing"
)

// By hand: 100 among 10, 20, 50 and 80: 10 and 20 keep theirs, the other two share 70,
// 35 each; among 10 and 20 everything fits; among 60 and 60, 50 each; none: all fits.
func TestMaxMin(t *testing.T) {
	for _, c := range []struct {
		held []int64
		want int64
	}{
		{[]int64{80, 10, 50, 20}, 35},
		{[]int64{10, 20}, math.MaxInt64},
		{[]int64{60, 60}, 50},
		{[]int64{0, 0, 300}, 100},
		{nil, math.MaxInt64},
	} {
		if got := MaxMin(c.held, 100); got != c.want {
			t.Errorf("MaxMin(%v, 100) = %d, want %d", c.held, got, c.want)
		}
	}
}
