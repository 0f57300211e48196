package kernels

import (
	"fmt"
	"testing"
	"unsafe"
)

// benchSizes: a typical batch of closed windows, and the 2^14 registers of
// a HyperLogLog sketch with precision 14.
var benchSizes = []int{1000, 16384}

// benchKernel times one kernel as written for every supported level
// ("generic" is the portable fallback), then "dispatch": what the exported
// function runs at the level chosen at init (at AVX512 that is, for some
// kernels, AVX2 above the L1D limit; see doc.go). Bytes/s counts the dst
// column only (n × element size); each call also reads src, so memory
// traffic is three times that.
func benchKernel[T any](b *testing.B, pick func(kernelSet) func(dst, src *T, n int), fill func(i int) (T, T)) {
	sets := rawSets(b)
	auto := *dispatch[Current()]
	sets = append(sets, auto)
	for i, ks := range sets {
		k := pick(ks)
		name := ks.level.String()
		if i == len(sets)-1 {
			name = "dispatch"
		}
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				dst, src := make([]T, n), make([]T, n)
				for i := range n {
					dst[i], src[i] = fill(i)
				}
				var z T
				b.SetBytes(int64(n) * int64(unsafe.Sizeof(z)))
				for b.Loop() {
					k(&dst[0], &src[0], n)
				}
			})
		}
	}
}

func ints(i int) (int64, int64)       { return int64(i) * 7, int64(i)%13 - 6 }
func floats(i int) (float64, float64) { return float64(i) + 0.25, float64(i%13) - 6.5 }
func bytesHLL(i int) (uint8, uint8)   { return uint8(i*7) % 40, uint8(i*13) % 40 }

func BenchmarkAddInt64(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *int64, n int) { return k.addInt64 }, ints)
}

func BenchmarkSubInt64(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *int64, n int) { return k.subInt64 }, ints)
}

func BenchmarkAddInt64Overflow(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *int64, n int) {
		return func(dst, src *int64, n int) { k.addInt64Overflow(dst, src, n) }
	}, ints)
}

func BenchmarkAddFloat64(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *float64, n int) { return k.addFloat64 }, floats)
}

func BenchmarkSubFloat64(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *float64, n int) { return k.subFloat64 }, floats)
}

func BenchmarkMinFloat64(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *float64, n int) { return k.minFloat64 }, floats)
}

func BenchmarkMaxFloat64(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *float64, n int) { return k.maxFloat64 }, floats)
}

func BenchmarkMaxUint8(b *testing.B) {
	benchKernel(b, func(k kernelSet) func(dst, src *uint8, n int) { return k.maxUint8 }, bytesHLL)
}
