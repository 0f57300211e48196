package aggregate

import (
	"errors"
	"math"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// MergeAll and RetractAll carry and borrow per lane, exactly.
func TestSumColumnsCarry(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	a := mustAgg(t, Spec{Func: "Sum"})
	dst, src := a.NewColumn(), a.NewColumn()
	dst.Resize(5)
	src.Resize(5)
	// lane: dst, src, dst+src by hand
	//   0: maxI,  1     → 2^63 (overflow)
	//   1: minI, -1     → -2^63-1 (overflow)
	//   2: 5,     7     → 12
	//   3: maxI,  maxI  → 2^64-2 (overflow)
	//   4: minI,  maxI  → -1
	d := []int64{maxI, minI, 5, maxI, minI}
	s := []int64{1, -1, 7, maxI, maxI}
	for k := range d {
		dst.Add(k, value.Int(d[k]), 0, 0)
		src.Add(k, value.Int(s[k]), 0, 1)
	}
	if err := dst.MergeAll(src); err != nil {
		t.Fatal(err)
	}
	want := []any{ErrSumOverflow, ErrSumOverflow, int64(12), ErrSumOverflow, int64(-1)}
	for k, w := range want {
		got, err := dst.Result(k)
		if e, ok := w.(error); ok {
			if !errors.Is(err, e) {
				t.Fatalf("lane %d: (%s, %v), want %v", k, jsonOf(got), err, e)
			}
		} else if err != nil || !sameValue(got, value.Int(w.(int64))) {
			t.Fatalf("lane %d: (%s, %v), want %d", k, jsonOf(got), err, w)
		}
	}
	// Retracting src brings every lane back to dst's own value, borrowing
	// where the low word wraps back.
	if err := dst.RetractAll(src); err != nil {
		t.Fatal(err)
	}
	for k := range d {
		if got, err := dst.Result(k); err != nil || !sameValue(got, value.Int(d[k])) {
			t.Fatalf("lane %d after RetractAll: (%s, %v), want %d", k, jsonOf(got), err, d[k])
		}
	}
	// Retracting what was never merged goes below int64 and back.
	if err := dst.RetractAll(src); err != nil { // lane 4: minI - maxI → overflow
		t.Fatal(err)
	}
	if _, err := dst.Result(4); !errors.Is(err, ErrSumOverflow) {
		t.Fatalf("lane 4: %v, want ErrSumOverflow", err)
	}
	if err := dst.MergeAll(src); err != nil {
		t.Fatal(err)
	}
	if got, err := dst.Result(4); err != nil || !sameValue(got, value.Int(minI)) {
		t.Fatalf("lane 4 back: (%s, %v), want minI", jsonOf(got), err)
	}
	// Floats in a source column turn only their lanes into floats.
	f := a.NewColumn()
	f.Resize(5)
	f.Add(2, value.Float(0.5), 0, 2)
	if err := dst.MergeAll(f); err != nil {
		t.Fatal(err)
	}
	if got, _ := dst.Result(2); !sameValue(got, value.Float(5.5)) {
		t.Fatalf("lane 2: %s, want 5.5", jsonOf(got))
	}
	if got, _ := dst.Result(4); got.Kind() != value.KindInt {
		t.Fatalf("lane 4 became %s", got.Kind())
	}
	if err := dst.RetractAll(f); err != nil {
		t.Fatal(err)
	}
	if got, _ := dst.Result(2); !sameValue(got, value.Int(5)) {
		t.Fatalf("lane 2 after retracting the float: %s, want 5", jsonOf(got))
	}
}

func BenchmarkMergeAll(b *testing.B) {
	const n = 1000
	for _, tc := range []struct {
		name string
		v    func(k int) value.Value
	}{
		{"Sum/ints", func(k int) value.Value { return value.Int(int64(k)) }},
		{"Sum/floats", func(k int) value.Value { return value.Float(float64(k) / 4) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a := mustAgg(b, Spec{Func: "Sum"})
			dst, src := a.NewColumn(), a.NewColumn()
			dst.Resize(n)
			src.Resize(n)
			for k := range n {
				src.Add(k, tc.v(k), 0, 0)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = dst.MergeAll(src)
			}
		})
	}
}
