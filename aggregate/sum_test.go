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

// A running cell (cell 0) gets the partials 1e100 and 1e-5 merged in, then
// 1e100 retracted: the compensated float sum gives exactly 1e-5 (a plain
// float64 sum absorbs 1e-5 into 1e100 and gives 0). Once with Merge and
// Retract, once with MergeAll and RetractAll of whole columns, and once
// through an encoding round trip of the running cell.
func TestCompensatedRetract(t *testing.T) {
	for _, fn := range []string{"Sum", "Average"} {
		a := mustAgg(t, Spec{Func: fn})
		want := vFloat(1e-5) // Sum: 1e-5; Average: 1e-5 / 1
		check := func(what string, c Column, i int) {
			t.Helper()
			if got, err := c.Result(i); err != nil || !sameValue(got, want) {
				t.Fatalf("%s %s: (%s, %v), want %s", fn, what, jsonOf(got), err, jsonOf(want))
			}
		}

		c := a.NewColumn()
		c.Resize(3)
		c.Add(1, vFloat(1e100), 0, 0)
		c.Add(2, vFloat(1e-5), 0, 1)
		for _, j := range []int{1, 2} {
			if err := c.Merge(0, c, j); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Retract(0, c, 1); err != nil {
			t.Fatal(err)
		}
		check("Merge/Retract", c, 0)

		run, big, small := a.NewColumn(), a.NewColumn(), a.NewColumn()
		for _, col := range []Column{run, big, small} {
			col.Resize(2)
		}
		big.Add(1, vFloat(1e100), 0, 0)
		small.Add(1, vFloat(1e-5), 0, 1)
		for _, src := range []Column{big, small} {
			if err := run.MergeAll(src); err != nil {
				t.Fatal(err)
			}
		}
		// The encoded running cell keeps its compensation.
		dec := a.NewColumn()
		dec.Resize(2)
		if _, err := dec.DecodeCell(1, run.AppendCell(nil, 1)); err != nil {
			t.Fatal(err)
		}
		if err := run.RetractAll(big); err != nil {
			t.Fatal(err)
		}
		check("MergeAll/RetractAll", run, 1)
		if err := dec.RetractAll(big); err != nil {
			t.Fatal(err)
		}
		check("decoded, RetractAll", dec, 1)

		// Retracting the last float leaves exactly the integers.
		if err := run.MergeAll(big); err != nil {
			t.Fatal(err)
		}
		run.Add(1, vInt(4), 0, 2)
		for _, src := range []Column{big, small} {
			if err := run.RetractAll(src); err != nil {
				t.Fatal(err)
			}
		}
		wantInt := map[string]value.Value{"Sum": vInt(4), "Average": vFloat(4)}[fn]
		if got, err := run.Result(1); err != nil || !sameValue(got, wantInt) {
			t.Fatalf("%s after the floats left: (%s, %v), want %s", fn, jsonOf(got), err, jsonOf(wantInt))
		}
	}
}

// Average's integer part retracts exactly, through carries: a running cell
// gets {2^63-1, 2^63-1} (sum 2^64-2, carried) and {-1} merged in; retracting
// the first leaves -1 exactly, and retracting a float partial leaves the
// integer mean exactly.
func TestAverageRetractExact(t *testing.T) {
	a := mustAgg(t, Spec{Func: "Average"})
	c := a.NewColumn()
	c.Resize(4)
	c.Add(1, vInt(math.MaxInt64), 0, 0)
	c.Add(1, vInt(math.MaxInt64), 0, 1)
	c.Add(2, vInt(-1), 0, 2)
	c.Add(3, vFloat(0.1), 0, 3)
	c.Add(3, vFloat(1e17), 0, 4)
	for _, j := range []int{1, 2, 3} {
		if err := c.Merge(0, c, j); err != nil {
			t.Fatal(err)
		}
	}
	// (2^64 - 2 - 1 + 0.1 + 1e17) / 5, computed in float64 as the column
	// does: float64(2^64 - 3) = 2^64, plus 1e17 + 0.1 = 1e17, / 5.
	if got, _ := c.Result(0); !sameValue(got, vFloat((0x1p64+1e17)/5)) {
		t.Fatalf("all merged: %s", jsonOf(got))
	}
	if err := c.Retract(0, c, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Retract(0, c, 3); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Result(0); !sameValue(got, vFloat(-1)) {
		t.Fatalf("after retracting: %s, want -1", jsonOf(got))
	}
}

// Integer-only Sum and Average columns keep no float arrays; the first float
// adds 24 bytes a cell: the sum, its compensation (8 of them) and the float
// count.
func TestFloatArraysCost(t *testing.T) {
	for _, fn := range []string{"Sum", "Average"} {
		c := mustAgg(t, Spec{Func: fn}).NewColumn()
		c.Resize(1000)
		c.Add(0, vInt(1), 0, 0)
		before := c.SizeBytes()
		c.Add(1, vFloat(0.5), 0, 1)
		var cells int // the arrays' capacity
		switch x := c.(type) {
		case *sumColumn:
			cells = cap(x.lo)
		case *averageColumn:
			cells = cap(x.lo)
		}
		if d := c.SizeBytes() - before; cells < 1000 || d != 24*cells {
			t.Errorf("%s: the first float added %d bytes, want 24 × %d cells", fn, d, cells)
		}
	}
}

// A Sum cell encoded before the compensation existed (no flag 4) decodes.
func TestSumDecodesUncompensatedCell(t *testing.T) {
	a := mustAgg(t, Spec{Func: "Sum"})
	b := []byte{3, sumHasFloat, 0x04, 0x02} // code, flags, lo = 2, one float
	b = appendFloat(b, 0.5)
	c := a.NewColumn()
	c.Resize(1)
	if _, err := c.DecodeCell(0, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Result(0); !sameValue(got, vFloat(2.5)) {
		t.Fatalf("got %s, want 2.5", jsonOf(got))
	}
	// A compensation without floats is corrupt.
	if _, err := c.DecodeCell(0, []byte{3, sumHasComp, 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("compensation without floats: %v", err)
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

// A float Sum or Average of a large integer part and a float is rounded once, to the float64
// nearest the exact total (hostile round 163: the integer part rounded first, then the sum):
// 9007199254740993 + 0.5 = 9007199254740993.5, whose nearest float64 is 9007199254740994
// (float64s are 2 apart there), and half of it 4503599627370496.75, nearest 4503599627370497.
func TestFloatTotalRoundedOnce(t *testing.T) {
	for _, c := range []struct {
		fn   string
		want float64
	}{{"Sum", 9007199254740994}, {"Average", 4503599627370497}} {
		col := mustAgg(t, Spec{Func: c.fn}).NewColumn()
		col.Resize(1)
		col.Add(0, value.Int(9007199254740993), 1, 1)
		col.Add(0, value.Float(0.5), 2, 2)
		got, err := col.Result(0)
		if err != nil || !value.Equal(got, value.Float(c.want)) {
			t.Errorf("%s of 9007199254740993 and 0.5: %s (%v), want %v", c.fn, jsonOf(got), err, c.want)
		}
	}
}
