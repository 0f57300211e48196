package aggregate

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/value"
)

// List's cells keep entries that came out of order in a tail folded in later (a hostile
// round: inserting each at its place made reversed inputs quadratic). Long runs of adds
// without a read between them, merges of cells with tails on either side, and a cell
// encoded and decoded mid-run all give the inputs in (time, arrival) order, against a
// brute-force sort of everything added.
func TestPropertyListOutOfOrderTails(t *testing.T) {
	checkProperty(t, func(rt *rapid.T) {
		agg, err := New(Spec{Func: "List"})
		if err != nil {
			rt.Fatal(err)
		}
		const cells = 2
		cols := [2]Column{agg.NewColumn(), agg.NewColumn()}
		var model [2][cells][]oracleInput
		for c := range cols {
			cols[c].Resize(cells)
		}
		var seq uint64
		reversed := rapid.Bool().Draw(rt, "reversed")
		steps := rapid.IntRange(1, 400).Draw(rt, "steps")
		for step := range steps {
			label := fmt.Sprintf("step%d", step)
			col, i := rapid.IntRange(0, 1).Draw(rt, label+"/col"), rapid.IntRange(0, cells-1).Draw(rt, label+"/cell")
			switch op := rapid.IntRange(0, 40).Draw(rt, label+"/op"); {
			case op < 36: // Add: mostly in reverse time order, or at random
				seq++
				tm := rapid.Int64Range(-50, 50).Draw(rt, label+"/t")
				if reversed {
					tm = int64(1000 - step)
				}
				in := oracleInput{V: value.Int(int64(seq)), T: tm, Seq: seq}
				cols[col].Add(i, in.V, in.T, in.Seq)
				model[col][i] = append(model[col][i], in)
			case op < 38: // Merge from another cell, which keeps its own entries
				sc, j := rapid.IntRange(0, 1).Draw(rt, label+"/srccol"), rapid.IntRange(0, cells-1).Draw(rt, label+"/srccell")
				if sc == col && j == i {
					continue
				}
				if err := cols[col].Merge(i, cols[sc], j); err != nil {
					rt.Fatal(err)
				}
				model[col][i] = append(model[col][i], model[sc][j]...)
			case op < 39: // MergeAll
				if err := cols[col].MergeAll(cols[1-col]); err != nil {
					rt.Fatal(err)
				}
				for k := range cells {
					model[col][k] = append(model[col][k], model[1-col][k]...)
				}
			case op < 40: // encoded and decoded into a fresh column
				fresh := agg.NewColumn()
				fresh.Resize(cells)
				for k := range cells {
					rest, err := fresh.DecodeCell(k, cols[col].AppendCell(nil, k))
					if err != nil || len(rest) != 0 {
						rt.Fatalf("DecodeCell: %v, %d bytes left", err, len(rest))
					}
				}
				cols[col] = fresh
			default:
				checkListCell(rt, cols[col], i, model[col][i], label)
			}
		}
		for c := range cols {
			for k := range cells {
				checkListCell(rt, cols[c], k, model[c][k], "at the end")
			}
		}
	})
}

func checkListCell(rt *rapid.T, col Column, i int, added []oracleInput, when string) {
	want := slices.Clone(added)
	slices.SortFunc(want, func(a, b oracleInput) int {
		return cmp.Or(cmp.Compare(a.T, b.T), cmp.Compare(a.Seq, b.Seq))
	})
	vals := make([]value.Value, len(want))
	for k, in := range want {
		vals[k] = in.V
	}
	got, err := col.Result(i)
	if err != nil {
		rt.Fatal(err)
	}
	if w := value.List(vals); !value.Equal(got, w) {
		rt.Fatalf("%s: cell %d is %s, want %s", when, i, jsonOf(got), jsonOf(w))
	}
}

// BenchmarkListReversed adds b.N inputs in reverse time order to one List cell, then reads
// it: per input, constant-ish (O(log n)) with the tail, O(n) with the insertion at its place.
func BenchmarkListReversed(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			agg, _ := New(Spec{Func: "List"})
			for b.Loop() {
				col := agg.NewColumn()
				col.Resize(1)
				for k := range n {
					col.Add(0, value.Int(int64(k)), int64(n-k), uint64(k))
				}
				if _, err := col.Result(0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/input")
		})
	}
}
