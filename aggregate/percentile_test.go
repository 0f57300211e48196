package aggregate

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"

	"github.com/scenario-server/scenario-server/value"
)

// ddCellBytes frames a sketch the way ddColumn.AppendCell does.
func ddCellBytes(min, max float64, sk *ddsketch.DDSketch, withMapping bool) []byte {
	b := []byte{18, 1}
	b = appendFloat(b, min)
	b = appendFloat(b, max)
	var body []byte
	sk.Encode(&body, !withMapping)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// DecodeCell takes only what ApproximatePercentile's Add and Merge can
// produce: buckets of finite inputs with positive integer counts, a minimum
// and a maximum in the extreme buckets, and the shared mapping.
func TestDDSketchDecodeChecks(t *testing.T) {
	a := mustAgg(t, Spec{Func: "ApproximatePercentile", Quantile: 0.5})
	sketchOf := func(xs ...float64) *ddsketch.DDSketch {
		sk := newDDSketch()
		for _, x := range xs {
			if err := sk.Add(x); err != nil {
				t.Fatal(err)
			}
		}
		return sk
	}
	other, err := mapping.NewLogarithmicMapping(0.02)
	if err != nil {
		t.Fatal(err)
	}
	otherSketch := ddsketch.NewDDSketch(other, store.NewDenseStore(), store.NewDenseStore())
	_ = otherSketch.Add(2)
	fractional := newDDSketch()
	_ = fractional.AddWithCount(2, 0.5)
	farOut := newDDSketch()
	farOut.GetPositiveValueStore().Add(ddMaxIndex + 1)

	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"valid", ddCellBytes(-3, 7, sketchOf(-3, 0, 2, 7), false), true},
		{"valid with the mapping", ddCellBytes(-3, 7, sketchOf(-3, 0, 2, 7), true), true},
		{"valid, zeros only", ddCellBytes(0, 1e-310, sketchOf(0, 1e-310), false), true},
		{"minimum not in the lowest bucket", ddCellBytes(-2.5, 7, sketchOf(-3, 2, 7), false), false},
		{"maximum not in the highest bucket", ddCellBytes(-3, 6.5, sketchOf(-3, 2, 7), false), false},
		{"minimum above the maximum", ddCellBytes(7, -3, sketchOf(-3, 7), false), false},
		{"minimum zero with negatives", ddCellBytes(0, 7, sketchOf(-3, 0, 7), false), false},
		{"empty sketch", ddCellBytes(1, 1, newDDSketch(), false), false},
		{"other mapping", ddCellBytes(2, 2, otherSketch, true), false},
		{"fractional count", ddCellBytes(2, 2, fractional, false), false},
		{"bucket beyond float64", ddCellBytes(1e308, 1e308, farOut, false), false},
		{"length overruns", append([]byte{18, 1}, make([]byte, 16)...), false},
	} {
		c := a.NewColumn()
		c.Resize(1)
		c.Add(0, vInt(5), 0, 0)
		rest, err := c.DecodeCell(0, append(tc.b, 0xAB))
		if tc.ok {
			if err != nil || len(rest) != 1 {
				t.Errorf("%s: DecodeCell: %v (rest %x)", tc.name, err, rest)
			}
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeCell: %v, want ErrCorrupt", tc.name, err)
		}
		if got, _ := c.Result(0); !sameValue(got, vFloat(5)) {
			t.Errorf("%s: a failed DecodeCell changed the cell to %s", tc.name, jsonOf(got))
		}
	}
}

// A cell merged into itself counts every input twice; a merged copy does not
// share its sketch with the source.
func TestDDSketchMergeSelf(t *testing.T) {
	a := mustAgg(t, Spec{Func: "ApproximatePercentile", Quantile: 0.2})
	c := a.NewColumn()
	c.Resize(2)
	for k, x := range []int64{1, 200, 300} {
		c.Add(0, value.Int(x), 0, uint64(k))
	}
	if err := c.Merge(1, c, 0); err != nil {
		t.Fatal(err)
	}
	// {1, 1, 200, 200, 300, 300} at q = 0.2: h = 1 → 1 (within 1%; the
	// bucket's value 1.01 is above the minimum, so no clamp).
	if err := c.Merge(0, c, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Result(0); math.Abs(got.Float()-1) > 0.01 {
		t.Fatalf("merged with itself: %s, want 1 ± 1%%", jsonOf(got))
	}
	// Cell 1 still holds {1, 200, 300}: with 300 three times more, h = 1 →
	// 200 within 1% (had it shared cell 0's doubled sketch: h = 1.6 → 1).
	for k := range 3 {
		c.Add(1, value.Int(300), 0, uint64(5+k))
	}
	if got, _ := c.Result(1); math.Abs(got.Float()-200) > 2 {
		t.Fatalf("the copy: %s, want 200 ± 1%%", jsonOf(got))
	}
}

// ApproximatePercentile at q = 0 and q = 1 is the exact minimum and maximum, not their
// sketch buckets' values (a hostile round: 1e308 among the inputs gave 9.9739e307 at q = 1).
func TestDDSketchExtremesExact(t *testing.T) {
	inputs := []float64{-1e308, -3.7, 0, 2.5, 1e308}
	for _, c := range []struct {
		q    float64
		want float64
	}{{0, -1e308}, {1, 1e308}} {
		col := mustAgg(t, Spec{Func: "ApproximatePercentile", Quantile: c.q}).NewColumn()
		col.Resize(1)
		for k, x := range inputs {
			col.Add(0, value.Float(x), int64(k), uint64(k))
		}
		got, err := col.Result(0)
		if err != nil || !value.Equal(got, value.Float(c.want)) {
			t.Errorf("q = %v over %v: %s (%v), want %v", c.q, inputs, jsonOf(got), err, c.want)
		}
	}
}
