package value

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// JSONEncoder against AppendJSON for any sequence of records drawn from key
// slices that share backing arrays (prefixes, sub-slices, equal copies) and values around
// the cached-integer bound.
func TestJSONEncoderRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := []string{"a", "b\"", "c", "é", "\x01"}
		keySets := [][]string{base, base[:1], base[:2], base[1:], base[2:4], {"a", "b\""}, {"x"}, nil, base[:0]}
		ints := []int64{0, 1, -1, 999_999_999, -999_999_999, 1_000_000_000, -1_000_000_000, 1_000_000_001,
			9_999_999_999, 10_000_000_000, 1_700_000_000_000, 1_700_000_010_000, math.MaxInt64, math.MinInt64,
			math.MaxInt64 - 1, math.MinInt64 + 1}
		var leaf func(depth int) *rapid.Generator[Value]
		leaf = func(depth int) *rapid.Generator[Value] {
			return rapid.Custom(func(t *rapid.T) Value {
				switch rapid.IntRange(0, 7).Draw(t, "kind") {
				case 0:
					return Null()
				case 1:
					return Bool(rapid.Bool().Draw(t, "b"))
				case 2, 3:
					return Int(rapid.SampledFrom(ints).Draw(t, "i"))
				case 4:
					return Int(rapid.Int64().Draw(t, "ri"))
				case 5:
					return Float(rapid.Float64().Draw(t, "f"))
				case 6:
					return String(rapid.String().Draw(t, "s"))
				}
				if depth > 0 {
					ks := rapid.SampledFrom(keySets).Draw(t, "nk")
					vs := make([]Value, len(ks))
					for i := range vs {
						vs[i] = leaf(depth-1).Draw(t, "nv")
					}
					if rapid.Bool().Draw(t, "list") {
						return List(vs)
					}
					return NewRecord(ks, vs)
				}
				return Null()
			})
		}
		var e JSONEncoder
		n := rapid.IntRange(1, 40).Draw(t, "n")
		for i := 0; i < n; i++ {
			var v Value
			if rapid.IntRange(0, 9).Draw(t, "top") == 0 {
				v = leaf(1).Draw(t, "other")
			} else {
				ks := rapid.SampledFrom(keySets).Draw(t, "keys")
				vs := make([]Value, len(ks))
				for j := range vs {
					vs[j] = leaf(1).Draw(t, "v")
				}
				v = NewRecord(ks, vs)
			}
			prefix := []byte("p")
			if got, want := string(e.Append(prefix, v)), "p"+string(AppendJSON(nil, v)); got != want {
				t.Fatalf("value %d: %s, want %s", i, got, want)
			}
		}
	})
}

// oldShortFloat is shortFloat as it was before 76aa987 (k = 0..3).
func oldShortFloat(f float64) (m uint64, k int, ok bool) {
	a := math.Abs(f)
	if !(a > 0 && a < 1e12) {
		return 0, 0, false
	}
	for k = 0; k <= 3; k++ {
		r := math.Round(a * float64Pow10[k])
		if r/float64Pow10[k] == a {
			return uint64(r), k, true
		}
	}
	return 0, 0, false
}

// the new shortFloat accepts exactly what the old one did, with the same (m, k),
// and its digits are strconv's shortest (ParseFloat of "m/10^k" gives back f, and strconv's
// 'f' -1 digits are the same decimal) on decimals of up to 6 fraction digits at every
// magnitude below and around 1e12, their neighbouring floats, and random bits.
func TestShortFloatOneCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	n, short := 0, 0
	check := func(f float64) {
		n++
		m, k, ok := shortFloat(f)
		om, ok2, ook := oldShortFloat(f)
		if ok != ook || m != om || k != ok2 {
			t.Fatalf("%v (%b): new (%d, %d, %v), old (%d, %d, %v)", f, f, m, k, ok, om, ok2, ook)
		}
		if !ok {
			return
		}
		short++
		if k > 0 && m%10 == 0 {
			t.Fatalf("%v: m %d k %d has a trailing zero", f, m, k)
		}
		s := strconv.FormatUint(m, 10)
		for len(s) <= k {
			s = "0" + s
		}
		dec := s[:len(s)-k]
		if k > 0 {
			dec += "." + s[len(s)-k:]
		}
		back, err := strconv.ParseFloat(dec, 64)
		if err != nil || back != math.Abs(f) {
			t.Fatalf("%v: %s reads back as %v", f, dec, back)
		}
		want := strconv.FormatFloat(math.Abs(f), 'f', -1, 64)
		if k == 0 {
			if want != dec {
				t.Fatalf("%v: %s, strconv %s", f, dec, want)
			}
		} else if want != dec {
			t.Fatalf("%v: %s, strconv %s", f, dec, want)
		}
	}
	pow := []float64{1, 10, 100, 1000, 1e4, 1e5, 1e6}
	for range 400_000 {
		k := rng.IntN(len(pow))
		m := rng.Int64N(int64(1) << uint(1+rng.IntN(53)))
		f := float64(m) / pow[k]
		for _, g := range []float64{f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)), -f} {
			check(g)
		}
		// near the bound: decimals just under 1e12 and products just under 1e15
		r := 1e15 - float64(rng.Int64N(1_000_000))
		check(r / 1000)
		check(math.Nextafter(r/1000, 0))
		check(math.Float64frombits(rng.Uint64()))
		check(float64(rng.Int64N(1_000_000)) / 1000 * float64(rng.Int64N(1000)+1))
	}
	// every 3-digit decimal of [0, 100) and its neighbours
	for r := int64(0); r < 100_000; r++ {
		f := float64(r) / 1000
		check(f)
		check(math.Nextafter(f, 0))
		check(math.Nextafter(f, 1e300))
	}
	// every float of some full binades' tops: [2^39 - 4096 ulp, 2^40) near 1e12
	for f, i := 1e12, 0; i < 200_000; i++ {
		f = math.Nextafter(f, 0)
		check(f)
	}
	t.Logf("%d floats, %d short", n, short)
}
