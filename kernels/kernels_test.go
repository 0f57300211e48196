package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// testLengths are the element counts every kernel is checked at: all of
// 0..300 (every tail of every unrolled loop) and a few large ones.
var testLengths = func() []int {
	var ls []int
	for n := 0; n <= 300; n++ {
		ls = append(ls, n)
	}
	return append(ls, 511, 1000, 1023, 4097, 16384, 16384+63, 100003)
}()

// pad is how many elements of guard surround each slice in its backing array.
const pad = 80

// column carves an n-element slice out of a larger backing array at a
// random offset (so vectors start unaligned), and remembers the guard zones.
type column[T comparable] struct {
	back []T
	off  int
	n    int
}

func newColumn[T comparable](r *rand.Rand, n int, fill func() T) column[T] {
	c := column[T]{back: make([]T, n+2*pad), off: r.IntN(pad), n: n}
	for i := range c.back {
		c.back[i] = fill()
	}
	return c
}

func (c column[T]) s() []T { return c.back[c.off : c.off+c.n] }

func (c column[T]) clone() column[T] {
	c.back = slices.Clone(c.back)
	return c
}

// Per-type implementations of one kernel, taken from a kernelSet.
type (
	intKernel   func(dst, src *int64, n int)
	floatKernel func(dst, src *float64, n int)
	byteKernel  func(dst, src *uint8, n int)
)

// call runs a pointer kernel on slices with the exported functions' rules.
func call[T any](k func(dst, src *T, n int), dst, src []T) {
	if n := min(len(dst), len(src)); n > 0 {
		k(&dst[0], &src[0], n)
	}
}

func rawSets(t testing.TB) []kernelSet {
	var sets []kernelSet
	for _, l := range Supported() {
		ks, ok := rawSet(l)
		if !ok {
			t.Fatalf("no kernels for supported level %v", l)
		}
		sets = append(sets, ks)
	}
	return sets
}

// --- value generators ---

func randInt64(r *rand.Rand) int64 {
	switch r.IntN(8) {
	case 0:
		return math.MaxInt64 - r.Int64N(4)
	case 1:
		return math.MinInt64 + r.Int64N(4)
	case 2:
		return r.Int64N(2000) - 1000
	case 3:
		return int64(r.Uint64() >> 1) // large positive
	case 4:
		return -int64(r.Uint64() >> 1) // large negative
	default:
		return int64(r.Uint64())
	}
}

// smallInt64 never overflows when two are added.
func smallInt64(r *rand.Rand) int64 { return int64(r.Uint64()) >> 2 }

var specialFloats = []float64{
	0, math.Copysign(0, -1),
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	math.Float64frombits(0x000fffffffffffff), -math.Float64frombits(0x000fffffffffffff), // largest subnormal
	math.Float64frombits(0x0008000000000000), // a mid subnormal
	0x1p-1022, -0x1p-1022,                    // smallest normal
	math.MaxFloat64, -math.MaxFloat64,
	math.Inf(1), math.Inf(-1),
	1, -1, 0.1, -0.1, 1e308, -1e308, 1e-308, 0x1p52, 0x1p53 + 1,
}

// randFloat64 returns no NaN: specials, random bit patterns, and ordinary
// magnitudes, so sums hit rounding, overflow to ±Inf, subnormal results and
// exact cancellation to ±0.
func randFloat64(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return specialFloats[r.IntN(len(specialFloats))]
	case 1, 2:
		for {
			f := math.Float64frombits(r.Uint64())
			if !math.IsNaN(f) {
				return f
			}
		}
	case 3:
		return float64(r.IntN(7) - 3) // repeats, so equal pairs and x-x occur
	default:
		return (r.Float64()*2 - 1) * math.Pow(2, float64(r.IntN(40)-20))
	}
}

func randUint8(r *rand.Rand) uint8 { return uint8(r.Uint32()) }

// --- the comparison harness ---

// checkKernel runs got and want on identical random inputs of every test
// length, with dst and src of different lengths and offsets, and demands
// identical backing arrays afterwards (so the guards outside the n
// processed elements are untouched) and identical results.
func checkKernel[T comparable](t *testing.T, name string, fill func(*rand.Rand) T,
	want, got func(dst, src []T) bool, eq func(a, b T) bool) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, uint64(len(name))))
	for _, n := range testLengths {
		// dst as long as, shorter than, and longer than src.
		for _, sz := range [][2]int{{n, n}, {n, n + 3}, {n + 3, n}} {
			nd, ns := sz[0], sz[1]
			f := func() T { return fill(r) }
			d := newColumn(r, nd, f)
			s := newColumn(r, ns, f)
			d2, s2 := d.clone(), s.clone()
			wr := want(d.s(), s.s())
			gr := got(d2.s(), s2.s())
			if wr != gr {
				t.Fatalf("%s n=%d (dst %d, src %d): result %v, want %v", name, min(nd, ns), nd, ns, gr, wr)
			}
			for i := range d.back {
				if !eq(d.back[i], d2.back[i]) {
					t.Fatalf("%s len(dst)=%d len(src)=%d off=%d: dst backing[%d] = %v, want %v",
						name, nd, ns, d.off, i, d2.back[i], d.back[i])
				}
			}
			if !slices.Equal(s.back, s2.back) {
				t.Fatalf("%s n=%d: src modified", name, n)
			}
		}
	}
}

func void[T any](k func(dst, src *T, n int)) func(dst, src []T) bool {
	return func(dst, src []T) bool { call(k, dst, src); return false }
}

func eqBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
func eqInt(a, b int64) bool    { return a == b }
func eqUint8(a, b uint8) bool  { return a == b }
func eqNaNAware(a, b float64) bool {
	return eqBits(a, b) || (math.IsNaN(a) && math.IsNaN(b))
}

// TestKernelsMatchFallback checks every kernel written for every supported
// level against the portable fallback.
func TestKernelsMatchFallback(t *testing.T) {
	g := genericKernels
	for _, ks := range rawSets(t) {
		t.Run(ks.level.String(), func(t *testing.T) {
			t.Run("AddInt64", func(t *testing.T) {
				checkKernel(t, "AddInt64", randInt64, void(g.addInt64), void(ks.addInt64), eqInt)
			})
			t.Run("SubInt64", func(t *testing.T) {
				checkKernel(t, "SubInt64", randInt64, void(g.subInt64), void(ks.subInt64), eqInt)
			})
			t.Run("AddInt64Overflow", func(t *testing.T) {
				ov := func(k func(dst, src *int64, n int) bool) func(dst, src []int64) bool {
					return func(dst, src []int64) bool {
						if n := min(len(dst), len(src)); n > 0 {
							return k(&dst[0], &src[0], n)
						}
						return false
					}
				}
				checkKernel(t, "AddInt64Overflow", randInt64, ov(g.addInt64Overflow), ov(ks.addInt64Overflow), eqInt)
				checkKernel(t, "AddInt64Overflow/small", smallInt64, ov(g.addInt64Overflow), ov(ks.addInt64Overflow), eqInt)
			})
			t.Run("AddFloat64", func(t *testing.T) {
				checkKernel(t, "AddFloat64", randFloat64, void(g.addFloat64), void(ks.addFloat64), eqBits)
			})
			t.Run("SubFloat64", func(t *testing.T) {
				checkKernel(t, "SubFloat64", randFloat64, void(g.subFloat64), void(ks.subFloat64), eqBits)
			})
			t.Run("MinFloat64", func(t *testing.T) {
				checkKernel(t, "MinFloat64", randFloat64, void(g.minFloat64), void(ks.minFloat64), eqBits)
			})
			t.Run("MaxFloat64", func(t *testing.T) {
				checkKernel(t, "MaxFloat64", randFloat64, void(g.maxFloat64), void(ks.maxFloat64), eqBits)
			})
			t.Run("MaxUint8", func(t *testing.T) {
				checkKernel(t, "MaxUint8", randUint8, void(g.maxUint8), void(ks.maxUint8), eqUint8)
			})
		})
	}
}

// TestDispatchMatchesFallback checks what the exported functions run at
// every level, with the AVX-512 size limits lowered so that the test lengths
// fall on both sides of them (AVX-512 below, AVX2 above).
func TestDispatchMatchesFallback(t *testing.T) {
	for _, limits := range [][2]int{{37, 150}, {0, 0}, {math.MaxInt32, math.MaxInt32}} {
		restore := setAVX512Limits(limits[0], limits[1])
		g := genericKernels
		for _, l := range Supported() {
			ks := dispatch[l]
			t.Run(fmt.Sprintf("%v/limits=%v", l, limits), func(t *testing.T) {
				checkKernel(t, "AddInt64", randInt64, void(g.addInt64), void(ks.addInt64), eqInt)
				checkKernel(t, "SubInt64", randInt64, void(g.subInt64), void(ks.subInt64), eqInt)
				checkKernel(t, "AddFloat64", randFloat64, void(g.addFloat64), void(ks.addFloat64), eqBits)
				checkKernel(t, "SubFloat64", randFloat64, void(g.subFloat64), void(ks.subFloat64), eqBits)
				checkKernel(t, "MinFloat64", randFloat64, void(g.minFloat64), void(ks.minFloat64), eqBits)
				checkKernel(t, "MaxFloat64", randFloat64, void(g.maxFloat64), void(ks.maxFloat64), eqBits)
				checkKernel(t, "MaxUint8", randUint8, void(g.maxUint8), void(ks.maxUint8), eqUint8)
				ov := func(k func(dst, src *int64, n int) bool) func(dst, src []int64) bool {
					return func(dst, src []int64) bool {
						if n := min(len(dst), len(src)); n > 0 {
							return k(&dst[0], &src[0], n)
						}
						return false
					}
				}
				checkKernel(t, "AddInt64Overflow", randInt64, ov(g.addInt64Overflow), ov(ks.addInt64Overflow), eqInt)
			})
		}
		restore()
	}
}

// TestFallbackIsScalarGo pins the fallbacks themselves to plain scalar Go
// and to exact big-integer arithmetic for the overflow flag.
func TestFallbackIsScalarGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	minI, maxI := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	for _, n := range []int{0, 1, 5, 64, 1000} {
		a := make([]int64, n)
		b := make([]int64, n)
		for i := range a {
			a[i], b[i] = randInt64(r), randInt64(r)
		}
		d := slices.Clone(a)
		got := AddInt64Overflow(d, b)
		want := false
		for i := range a {
			s := new(big.Int).Add(big.NewInt(a[i]), big.NewInt(b[i]))
			if s.Cmp(minI) < 0 || s.Cmp(maxI) > 0 {
				want = true
			}
			if d[i] != int64(uint64(a[i])+uint64(b[i])) {
				t.Fatalf("AddInt64Overflow lane %d: %d, want wrapped %d", i, d[i], a[i]+b[i])
			}
		}
		if got != want {
			t.Fatalf("n=%d: overflow %v, want %v", n, got, want)
		}

		fa := make([]float64, n)
		fb := make([]float64, n)
		for i := range fa {
			fa[i], fb[i] = randFloat64(r), randFloat64(r)
		}
		for _, c := range []struct {
			name string
			k    func(dst, src []float64)
			op   func(x, y float64) float64
		}{
			{"AddFloat64", AddFloat64, func(x, y float64) float64 { return x + y }},
			{"SubFloat64", SubFloat64, func(x, y float64) float64 { return x - y }},
			{"MinFloat64", MinFloat64, func(x, y float64) float64 { return min(x, y) }},
			{"MaxFloat64", MaxFloat64, func(x, y float64) float64 { return max(x, y) }},
		} {
			d := slices.Clone(fa)
			c.k(d, fb)
			for i := range d {
				if w := c.op(fa[i], fb[i]); !eqNaNAware(d[i], w) {
					t.Fatalf("%s(%v, %v) = %v, want %v", c.name, fa[i], fb[i], d[i], w)
				}
			}
		}
	}
}

// TestOverflowExactlyWhenALaneOverflows plants a single overflowing lane
// at every position (main loop, single-vector loop, tail) among lanes that
// cannot overflow, in both directions, and checks the flag at every level.
func TestOverflowExactlyWhenALaneOverflows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pairs := [][2]int64{
		{math.MaxInt64, 1}, {1, math.MaxInt64}, {math.MinInt64, -1}, {-1, math.MinInt64},
		{math.MaxInt64, math.MaxInt64}, {math.MinInt64, math.MinInt64},
		{1 << 62, 1 << 62}, {-(1 << 62) - 1, -(1 << 62)},
	}
	// Edge lanes that do not overflow.
	safe := [][2]int64{
		{math.MaxInt64, 0}, {math.MinInt64, 0}, {math.MaxInt64, math.MinInt64},
		{math.MaxInt64, -1}, {math.MinInt64, math.MaxInt64}, {-(1 << 62), -(1 << 62)},
		{(1 << 62) - 1, 1 << 62},
	}
	for _, ks := range rawSets(t) {
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 39, 40, 41, 63, 64, 65, 100, 257} {
			for pos := 0; pos < n; pos++ {
				a := make([]int64, n)
				b := make([]int64, n)
				for i := range a {
					if r.IntN(4) == 0 {
						p := safe[r.IntN(len(safe))]
						a[i], b[i] = p[0], p[1]
					} else {
						a[i], b[i] = smallInt64(r), smallInt64(r)
					}
				}
				if got := ks.addInt64Overflow(&slices.Clone(a)[0], &b[0], n); got {
					t.Fatalf("%v n=%d: overflow reported with no overflowing lane", ks.level, n)
				}
				p := pairs[r.IntN(len(pairs))]
				a[pos], b[pos] = p[0], p[1]
				d := slices.Clone(a)
				if got := ks.addInt64Overflow(&d[0], &b[0], n); !got {
					t.Fatalf("%v n=%d: overflow in lane %d (%d + %d) not reported", ks.level, n, pos, p[0], p[1])
				}
				if d[pos] != int64(uint64(p[0])+uint64(p[1])) {
					t.Fatalf("%v: lane %d not wrapped", ks.level, pos)
				}
			}
		}
	}
}

// TestSignedZerosAndNaN checks the corner cases lane by lane at every
// position of a vector and of the tails.
func TestSignedZerosAndNaN(t *testing.T) {
	negZero := math.Copysign(0, -1)
	nan := math.NaN()
	cases := [][2]float64{
		{0, negZero}, {negZero, 0}, {negZero, negZero}, {0, 0},
		{math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64},
		{math.Inf(1), math.Inf(-1)}, {math.Inf(-1), math.Inf(-1)},
		{math.MaxFloat64, math.MaxFloat64}, {1, -1}, {-1, 1},
		{nan, 1}, {1, nan}, {nan, nan}, {nan, negZero}, {math.Inf(1), nan},
	}
	for _, ks := range rawSets(t) {
		for _, k := range []struct {
			name string
			k    floatKernel
			op   func(x, y float64) float64
		}{
			{"add", ks.addFloat64, func(x, y float64) float64 { return x + y }},
			{"sub", ks.subFloat64, func(x, y float64) float64 { return x - y }},
			{"min", ks.minFloat64, func(x, y float64) float64 { return min(x, y) }},
			{"max", ks.maxFloat64, func(x, y float64) float64 { return max(x, y) }},
		} {
			for _, n := range []int{1, 3, 4, 7, 8, 16, 31, 32, 33, 40} {
				for _, c := range cases {
					for pos := 0; pos < n; pos++ {
						a := make([]float64, n)
						b := make([]float64, n)
						for i := range a {
							a[i], b[i] = float64(i), float64(n-i)
						}
						a[pos], b[pos] = c[0], c[1]
						k.k(&a[0], &b[0], n)
						w := k.op(c[0], c[1])
						eq := eqBits
						if math.IsNaN(c[0]) || math.IsNaN(c[1]) {
							eq = eqNaNAware // documented: a NaN, payload unspecified
						}
						if !eq(a[pos], w) {
							t.Fatalf("%v %s(%v, %v) at lane %d of %d = %v (%#x), want %v (%#x)",
								ks.level, k.name, c[0], c[1], pos, n, a[pos], math.Float64bits(a[pos]), w, math.Float64bits(w))
						}
					}
				}
			}
		}
	}
}

// TestAliasing: dst and src may be the same slice.
func TestAliasing(t *testing.T) {
	for _, l := range Supported() {
		restore, err := SetLevel(l)
		if err != nil {
			t.Fatal(err)
		}
		x := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
		AddInt64(x, x)
		for i, v := range x {
			if v != int64(2*(i+1)) {
				t.Fatalf("%v: AddInt64(x, x)[%d] = %d", l, i, v)
			}
		}
		SubInt64(x, x)
		if slices.ContainsFunc(x, func(v int64) bool { return v != 0 }) {
			t.Fatalf("%v: SubInt64(x, x) = %v", l, x)
		}
		restore()
	}
}

// TestSetLevel forces every supported level, checks that the exported
// functions then run that level's kernels and agree with the fallback,
// and that restore and the unsupported-level error work.
func TestSetLevel(t *testing.T) {
	initial := Current()
	if sup := Supported(); sup[0] != Generic || sup[len(sup)-1] != initial {
		t.Fatalf("Supported() = %v, Current() = %v: want Generic first and Current last", sup, initial)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, l := range Supported() {
		restore, err := SetLevel(l)
		if err != nil {
			t.Fatalf("SetLevel(%v): %v", l, err)
		}
		if Current() != l {
			t.Fatalf("after SetLevel(%v), Current() = %v", l, Current())
		}
		for _, n := range []int{0, 1, 13, 64, 129, 1000} {
			a, b := make([]int64, n), make([]int64, n)
			fa, fb := make([]float64, n), make([]float64, n)
			ua, ub := make([]uint8, n), make([]uint8, n)
			for i := range n {
				a[i], b[i] = randInt64(r), randInt64(r)
				fa[i], fb[i] = randFloat64(r), randFloat64(r)
				ua[i], ub[i] = randUint8(r), randUint8(r)
			}
			checkInt := func(name string, f func(dst, src []int64), g intKernel) {
				d, w := slices.Clone(a), slices.Clone(a)
				f(d, b)
				call(g, w, b)
				if !slices.Equal(d, w) {
					t.Fatalf("%v %s n=%d differs from fallback", l, name, n)
				}
			}
			checkFloat := func(name string, f func(dst, src []float64), g floatKernel) {
				d, w := slices.Clone(fa), slices.Clone(fa)
				f(d, fb)
				call(g, w, fb)
				if !slices.EqualFunc(d, w, eqBits) {
					t.Fatalf("%v %s n=%d differs from fallback", l, name, n)
				}
			}
			g := genericKernels
			checkInt("AddInt64", AddInt64, g.addInt64)
			checkInt("SubInt64", SubInt64, g.subInt64)
			checkInt("AddInt64Overflow", func(d, s []int64) {
				w := slices.Clone(d)
				want := n > 0 && g.addInt64Overflow(&w[0], &s[0], n)
				if got := AddInt64Overflow(d, s); got != want {
					t.Fatalf("%v AddInt64Overflow n=%d = %v, want %v", l, n, got, want)
				}
			}, g.addInt64)
			checkFloat("AddFloat64", AddFloat64, g.addFloat64)
			checkFloat("SubFloat64", SubFloat64, g.subFloat64)
			checkFloat("MinFloat64", MinFloat64, g.minFloat64)
			checkFloat("MaxFloat64", MaxFloat64, g.maxFloat64)
			d, w := slices.Clone(ua), slices.Clone(ua)
			MaxUint8(d, ub)
			call(g.maxUint8, w, ub)
			if !slices.Equal(d, w) {
				t.Fatalf("%v MaxUint8 n=%d differs from fallback", l, n)
			}
		}
		restore()
		if Current() != initial {
			t.Fatalf("restore after SetLevel(%v): Current() = %v, want %v", l, Current(), initial)
		}
	}
	for _, bad := range []Level{-1, numLevels, 42} {
		restore, err := SetLevel(bad)
		if err == nil {
			t.Fatalf("SetLevel(%v) succeeded", bad)
		}
		restore() // must be safe to call
		if Current() != initial {
			t.Fatalf("failed SetLevel(%v) changed the level to %v", bad, Current())
		}
	}
	if !slices.Contains(Supported(), AVX512) {
		if _, err := SetLevel(AVX512); err == nil {
			t.Fatal("SetLevel(AVX512) succeeded on a CPU without AVX-512")
		}
	}
}

func TestLevelString(t *testing.T) {
	for l, want := range map[Level]string{Generic: "generic", AVX2: "avx2", AVX512: "avx512", 9: "Level(9)"} {
		if got := l.String(); got != want {
			t.Errorf("Level(%d).String() = %q, want %q", int(l), got, want)
		}
	}
	t.Logf("supported %v, current %v", Supported(), Current())
}

// TestEmpty: zero lengths and nil slices are no-ops.
func TestEmpty(t *testing.T) {
	for _, l := range Supported() {
		restore, _ := SetLevel(l)
		AddInt64(nil, nil)
		SubInt64([]int64{1}, nil)
		if AddInt64Overflow([]int64{math.MaxInt64}, []int64{}) {
			t.Fatalf("%v: overflow on empty input", l)
		}
		AddFloat64(nil, []float64{1})
		SubFloat64(nil, nil)
		MinFloat64(nil, nil)
		MaxFloat64([]float64{}, nil)
		MaxUint8(nil, []uint8{1, 2})
		restore()
	}
}

// TestRapidProperties: for arbitrary columns at every level, AddInt64
// followed by SubInt64 restores dst, AddInt64Overflow agrees with exact
// 128-bit arithmetic, and MaxUint8 is idempotent and yields the
// element-wise maximum.
func TestRapidProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := rapid.SampledFrom(Supported()).Draw(t, "level")
		ks := dispatch[l]
		n := rapid.IntRange(0, 200).Draw(t, "n")
		a := rapid.SliceOfN(rapid.Int64(), n, n).Draw(t, "a")
		b := rapid.SliceOfN(rapid.Int64(), n, n).Draw(t, "b")

		d := slices.Clone(a)
		call(ks.addInt64, d, b)
		call(ks.subInt64, d, b)
		if !slices.Equal(d, a) {
			t.Fatalf("%v: (a+b)-b != a", l)
		}

		want := false
		for i := range a {
			hiA, hiB := uint64(a[i]>>63), uint64(b[i]>>63) // sign extension words
			lo, c := bits.Add64(uint64(a[i]), uint64(b[i]), 0)
			hi, _ := bits.Add64(hiA, hiB, c)
			// The 128-bit sum fits in int64 iff hi is the sign extension of lo.
			if hi != uint64(int64(lo)>>63) {
				want = true
			}
		}
		got := n > 0 && ks.addInt64Overflow(&d[0], &b[0], n)
		if got != want {
			t.Fatalf("%v: overflow = %v, want %v", l, got, want)
		}

		x := rapid.SliceOfN(rapid.Uint8(), n, n).Draw(t, "x")
		y := rapid.SliceOfN(rapid.Uint8(), n, n).Draw(t, "y")
		m := slices.Clone(x)
		call(ks.maxUint8, m, y)
		for i := range m {
			if m[i] != max(x[i], y[i]) {
				t.Fatalf("%v: max(%d, %d) = %d", l, x[i], y[i], m[i])
			}
		}
		m2 := slices.Clone(m)
		call(ks.maxUint8, m2, y)
		if !slices.Equal(m, m2) {
			t.Fatalf("%v: MaxUint8 not idempotent", l)
		}
	})
}

func Example() {
	// Merge two HyperLogLog register arrays and two count columns.
	regs, other := []uint8{3, 0, 7, 1}, []uint8{2, 5, 7, 0}
	MaxUint8(regs, other)
	counts := []int64{10, 20, 30}
	overflow := AddInt64Overflow(counts, []int64{1, 2, 3})
	fmt.Println(regs, counts, overflow)
	// Output: [3 5 7 1] [11 22 33] false
}
