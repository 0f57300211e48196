//go:build !race

// (The race detector's checkptr rejects the misaligned pointers below.)

package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestMisalignedElements feeds the kernels int64/float64 slices that are
// not 8-byte aligned, which only unsafe code can make: results must still
// be right, only slower.
func TestMisalignedElements(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	for _, ks := range rawSets(t) {
		for _, n := range []int{1, 7, 31, 32, 33, 64, 100, 257} {
			for mis := 1; mis < 8; mis++ {
				bd := make([]byte, 8*n+16)
				bs := make([]byte, 8*n+16)
				for i := range bd {
					bd[i], bs[i] = randUint8(r), randUint8(r)
				}
				d := unsafe.Slice((*int64)(unsafe.Pointer(&bd[mis])), n)
				s := unsafe.Slice((*int64)(unsafe.Pointer(&bs[8-mis])), n)
				want := make([]int64, n)
				for i := range n {
					want[i] = d[i] + s[i]
				}
				before := slices.Clone(bd)
				ks.addInt64(&d[0], &s[0], n)
				if !slices.Equal(d, want) {
					t.Fatalf("%v n=%d misaligned by %d: wrong sums", ks.level, n, mis)
				}
				if !slices.Equal(bd[:mis], before[:mis]) || !slices.Equal(bd[mis+8*n:], before[mis+8*n:]) {
					t.Fatalf("%v n=%d misaligned by %d: wrote outside dst", ks.level, n, mis)
				}
			}
		}
	}
}
