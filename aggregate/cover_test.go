package aggregate

import (
	"fmt"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// mergeCounter is an aggregator whose columns count, in *merged, the values of the distinct
// cells (Set, CountDistinct) merged into others: the work of answering windows from
// partials, which an operator that merges a whole window per event makes quadratic.
type mergeCounter struct {
	Aggregator
	merged *int
}

func (m mergeCounter) NewColumn() Column {
	return &countedColumn{Column: m.Aggregator.NewColumn(), merged: m.merged}
}

type countedColumn struct {
	Column
	merged *int
}

func inner(c Column) Column {
	if cc, ok := c.(*countedColumn); ok {
		return cc.Column
	}
	return c
}

func (c *countedColumn) Merge(i int, src Column, j int) error {
	in := inner(src)
	if d, ok := in.(*distinctColumn); ok {
		*c.merged += len(d.cells[j].vals)
	}
	return c.Column.Merge(i, in, j)
}

func (c *countedColumn) MergeAll(src Column) error {
	in := inner(src)
	if d, ok := in.(*distinctColumn); ok {
		for k := range min(c.Len(), d.Len()) {
			*c.merged += len(d.cells[k].vals)
		}
	}
	return c.Column.MergeAll(in)
}

func (c *countedColumn) Retract(i int, src Column, j int) error {
	return c.Column.Retract(i, inner(src), j)
}
func (c *countedColumn) RetractAll(src Column) error { return c.Column.RetractAll(inner(src)) }

// A key's events in a sliding window of a day, or in one tumbling window emitting on
// events, each emit the window's CountDistinct: the values merged to answer them grow with
// the events, not with their square. 4,000 in-order events 100 ms apart (the values i mod
// 3,000; 60 s slices, so 7 slices of the sliding window and one of the tumbling one):
// answered by merging the window's partials per event, the sliding window merged 8,002,000
// values and the tumbling one 7,786,282; now the sliding window's running cells take each
// event (and rebuild once per slice with data that leaves, none here) and the tumbling
// window's results come from its slice: 7 and 0 values merged. The results are checked
// against a count by hand too (i+1 up to 3,000).
func TestOnEventResultsDoNotMergeTheWindow(t *testing.T) {
	const n = 4_000
	for _, spec := range []WindowSpec{
		{Kind: Sliding, Length: 86_400_000},
		{Kind: Tumbling, Length: 86_400_000, EmitWhen: OnEvent},
	} {
		t.Run(spec.Kind.String(), func(t *testing.T) {
			merged := 0
			cd, err := New(Spec{Func: "CountDistinct"})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			op, err := NewOperator(spec, []Named{{Name: "d", Aggregator: mergeCounter{cd, &merged}}}, func(r *Result) {
				got = append(got, r.Values[0].Int())
			})
			if err != nil {
				t.Fatal(err)
			}
			key := []value.Value{value.String("k")}
			for i := range n {
				e := &Event{Time: int64(i) * 100, Key: key, Inputs: []value.Value{value.Int(int64(i % 3_000))}}
				if err := op.Add(e); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != n {
				t.Fatalf("%d results for %d events", len(got), n)
			}
			for i, d := range got {
				if want := int64(min(i+1, 3_000)); d != want {
					t.Fatalf("event %d: CountDistinct %d, want %d", i, d, want)
				}
			}
			if merged > 4*n {
				t.Fatalf("%d values merged for %d events' results (more than 4 an event)", merged, n)
			}
		})
	}
}

// BenchmarkSlidingCountDistinct: one key's events 100 ms apart into a sliding window of a
// day, each emitting its window's CountDistinct (the values: 1 in 2 new).
func BenchmarkSlidingCountDistinct(b *testing.B) {
	for _, n := range []int{10_000, 40_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cd, _ := New(Spec{Func: "CountDistinct"})
			key := []value.Value{value.String("k")}
			for b.Loop() {
				op, err := NewOperator(WindowSpec{Kind: Sliding, Length: 86_400_000}, []Named{{Name: "d", Aggregator: cd}}, func(*Result) {})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if err := op.Add(&Event{Time: int64(i) * 100, Key: key, Inputs: []value.Value{value.Int(int64(i / 2))}}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
		})
	}
}
