package value

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// strconvFloat is the oracle: the JSON of a float by strconv alone, as appendFloat wrote it
// before its short path ('f' format, shortest digits, ".0" for whole numbers).
func strconvFloat(f float64) string {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	for _, c := range s {
		if c == '.' || c == 'e' || c == 'E' {
			return s
		}
	}
	return s + ".0"
}

// TestShortFloat compares appendFloat with strconv on decimals of 0 to 3 fraction digits,
// sums of them (a Sum aggregate's results), floats near the short path's bounds and random
// bit patterns.
func TestShortFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	short := 0
	check := func(f float64) {
		t.Helper()
		if _, _, ok := shortFloat(f); ok {
			short++
		}
		if got, want := string(appendFloat(nil, f)), strconvFloat(f); got != want {
			t.Fatalf("appendFloat(%b) = %s, want %s", f, got, want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.05, 0.001, 0.0001, 1e-7, 12.34, 7303.3,
		999999999999.999, 1e12, 1e12 - 0.001, 1e12 + 1, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.NaN(), 0.1 + 0.2, 1.005, 2.675, 9007199254740993, 123456789.123} {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			continue // not JSON numbers: AppendJSON writes null before reaching appendFloat
		}
		check(f)
		check(-f)
	}
	pow := []float64{1, 10, 100, 1000, 10000}
	for range 300_000 {
		k := rng.IntN(5)
		m := rng.Int64N(int64(1) << uint(1+rng.IntN(52)))
		check(float64(m) / pow[k])
		check(-float64(m) / pow[k])
		sum := 0.0
		for range 1 + rng.IntN(40) {
			sum += float64(rng.Int64N(100_000)) / 100
		}
		check(sum)
		check(math.Float64frombits(rng.Uint64()))
		check(float64(rng.Int64N(2_000_000_000_000_000))/1e6 + rng.Float64())
	}
	if short < 500_000 {
		t.Fatalf("the short path took %d of the values, want most decimals", short)
	}
}
