package aggregate

import (
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// A count window's columns (one array each for all keys) grow by at most maxGrowCells (2^18
// cells) in one event once they are that large, not double: at the limit shape (10,000
// count-slices a key) the 257th key needed 2,570,000 cells and doubling made 5,120,000 at
// once, a jump the state budget, looked at between events, could not stop (1 GiB became
// 2 GiB at the 1,025th key and the process died).
func TestCountWindowGrowsInSteps(t *testing.T) {
	c, err := New(Spec{Func: "Count"})
	if err != nil {
		t.Fatal(err)
	}
	op, err := NewOperator(WindowSpec{Kind: CountWindow, Count: 10_000, CountSlide: 1}, []Named{{Name: "n", Aggregator: c}}, func(*Result) {})
	if err != nil {
		t.Fatal(err)
	}
	cw := op.(*countWindow)
	in := []value.Value{value.Null()}
	for k := range 400 {
		before := cap(cw.cnt)
		if err := op.Add(&Event{Time: int64(k), Key: []value.Value{value.Int(int64(k))}, Inputs: in}); err != nil {
			t.Fatal(err)
		}
		if len(cw.cnt) < (k+1)*10_000 {
			t.Fatalf("key %d: %d cells, want at least %d", k+1, len(cw.cnt), (k+1)*10_000)
		}
		if grew := cap(cw.cnt) - before; before >= maxGrowCells && grew > maxGrowCells {
			t.Fatalf("key %d grew the cells from %d by %d; want at most %d", k+1, before, grew, maxGrowCells)
		}
	}
}
