package aggregate

import (
	"bytes"
	"math"
	"testing"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/store"
	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/value"
)

// appendDDSketch writes the bytes the library's Encode writes for the same buckets in
// DenseStores (the oracle: the sketch merged into a sketch of dense stores, as AppendCell did
// before), over random values: zeros, both signs, magnitudes from 1e-300 to 1e300, repeats,
// so that both the dense and the sparse forms are chosen.
func TestAppendDDSketchIsDenseStoreEncoding(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		agg, err := New(Spec{Func: "ApproximatePercentile", Quantile: 0.5})
		if err != nil {
			rt.Fatal(err)
		}
		col := agg.NewColumn().(*ddColumn)
		col.Resize(1)
		kinds := rapid.IntRange(1, 3).Draw(rt, "kinds") // 1: zeros and near ones only
		for i, n := 0, rapid.IntRange(1, 200).Draw(rt, "n"); i < n; i++ {
			var x float64
			switch rapid.IntRange(0, kinds).Draw(rt, "kind") {
			case 0:
				x = 0
			case 1: // buckets next to one another (about 1 % apart at 1,000): dense
				x = 1000 + 10*float64(rapid.IntRange(0, 30).Draw(rt, "near"))
			default: // anywhere: sparse
				x = math.Pow(10, float64(rapid.IntRange(-300, 300).Draw(rt, "exp"))) * rapid.Float64Range(1, 9.99).Draw(rt, "mant")
				if rapid.Bool().Draw(rt, "neg") {
					x = -x
				}
			}
			col.Add(0, value.Float(x), 0, 0)
		}
		sk := col.cells[0].sk
		want := ddsketch.NewDDSketch(ddMapping, store.NewDenseStore(), store.NewDenseStore())
		if err := want.MergeWith(sk); err != nil {
			rt.Fatal(err)
		}
		var wantBytes []byte
		want.Encode(&wantBytes, true)
		var bins []ddBin
		if got := appendDDSketch(nil, sk, &bins); !bytes.Equal(got, wantBytes) {
			rt.Fatalf("encoded %x; the dense stores encode %x", got, wantBytes)
		}
	})
}

// A cell of ±1e-300 and ±1e300 spans about 70,000 buckets a sign: its encoding reads its 4
// buckets, where the copy into dense stores walked the span (0.3 ms a cell in round 22).
func BenchmarkAppendCellExtremeValues(b *testing.B) {
	agg, err := New(Spec{Func: "ApproximatePercentile", Quantile: 0.5})
	if err != nil {
		b.Fatal(err)
	}
	col := agg.NewColumn()
	col.Resize(1)
	for _, x := range []float64{1e-300, 1e300, -1e-300, -1e300} {
		col.Add(0, value.Float(x), 0, 0)
	}
	var buf []byte
	for b.Loop() {
		buf = col.AppendCell(buf[:0], 0)
	}
}
