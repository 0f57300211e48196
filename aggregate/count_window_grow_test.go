package aggregate

import (
	"errors"
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

// Before a count window takes a new key's cells it asks WindowSpec.Reserve for their bytes:
// a refusal refuses the event with Reserve's error and takes no cells (nor the key: the key
// table keeps at most the freed slot's few bytes); an
// accepted reservation covers what the state grew by (StateBytes, measured before and after),
// and not more than twice it.
func TestCountWindowReservesNewKeys(t *testing.T) {
	var named []Named
	for _, f := range []string{"Count", "Sum", "List"} {
		a, err := New(Spec{Func: f})
		if err != nil {
			t.Fatal(err)
		}
		named = append(named, Named{Name: f, Aggregator: a})
	}
	refuse := errors.New("over the budget")
	var asked []int64
	allow := 2
	op, err := NewOperator(WindowSpec{Kind: CountWindow, Count: 1_000, CountSlide: 1, Reserve: func(b int64) error {
		asked = append(asked, b)
		if len(asked) > allow {
			return refuse
		}
		return nil
	}}, named, func(*Result) {})
	if err != nil {
		t.Fatal(err)
	}
	in := []value.Value{value.Null(), value.Int(1), value.Int(2)}
	add := func(k int64) error {
		return op.Add(&Event{Time: k, Key: []value.Value{value.Int(k)}, Inputs: in})
	}
	for k := range int64(allow) {
		before := op.StateBytes()
		if err := add(k); err != nil {
			t.Fatalf("key %d: %v", k, err)
		}
		grew := int64(op.StateBytes() - before)
		if r := asked[len(asked)-1]; r < grew || r > 2*grew {
			t.Errorf("key %d: reserved %d bytes, the state grew by %d; want the reservation to cover it, within twice", k, r, grew)
		}
	}
	// The same key again takes no new cells: nothing is asked.
	if err := add(0); err != nil || len(asked) != allow {
		t.Fatalf("key 0 again: %v, %d reservations; want nil, %d", err, len(asked), allow)
	}
	before, keys := op.StateBytes(), op.KeyCount()
	if err := add(99); !errors.Is(err, refuse) {
		t.Fatalf("a new key past the reservations: %v; want the refusal", err)
	}
	if grew := op.StateBytes() - before; grew > 64 || op.KeyCount() != keys || op.Stats().Rejected != 1 {
		t.Errorf("after the refusal: %d bytes more, %d keys, %d rejected; want at most 64 (a free slot), %d, 1", grew, op.KeyCount(), op.Stats().Rejected, keys)
	}
}

// Every byte a count window's state grows by in an event was reserved before (R24-2: the
// columns grew through append's rule, a quarter or more past the cells asked for, so that
// once past maxGrowCells a key's event took up to 0.25 of the whole state at once, reserved
// or not): 600 keys of 1,000 cells, past maxGrowCells, with columns of five kinds. The
// reservations, in all, stay within a quarter over what the state grew by.
func TestCountWindowReservationCoversGrowth(t *testing.T) {
	var named []Named
	in := []value.Value{}
	for _, f := range []string{"Count", "Sum", "Max", "List", "Average"} {
		a, err := New(Spec{Func: f})
		if err != nil {
			t.Fatal(err)
		}
		named = append(named, Named{Name: f, Aggregator: a})
		in = append(in, value.Int(7))
	}
	var reserved int64
	op, err := NewOperator(WindowSpec{Kind: CountWindow, Count: 1_000, CountSlide: 1, Reserve: func(b int64) error {
		reserved += b
		return nil
	}}, named, func(*Result) {})
	if err != nil {
		t.Fatal(err)
	}
	// slack: what a new key takes besides its cells (its slot in the key table and the
	// per-key arrays, grown by append, of a few dozen bytes a key).
	const slack = 16 << 10
	var allReserved, allGrew int64
	for k := range int64(600) {
		before := op.StateBytes()
		reserved = 0
		if err := op.Add(&Event{Time: k, Key: []value.Value{value.Int(k)}, Inputs: in}); err != nil {
			t.Fatalf("key %d: %v", k, err)
		}
		grew := int64(op.StateBytes() - before)
		if grew > reserved+slack {
			t.Fatalf("key %d: the state grew by %d bytes (to %d), %d were reserved", k, grew, op.StateBytes(), reserved)
		}
		allReserved += reserved
		allGrew += grew
	}
	if allReserved > allGrew*5/4 {
		t.Errorf("reserved %d bytes in all, the state grew by %d; want at most a quarter more", allReserved, allGrew)
	}
}

// A value held by several cells (a Variable's list aggregated by each event a for-each sends)
// is counted once by StateBytes, as it is held once; copies are counted each (R25-6: a count
// window of cells sharing 4.5-million-item lists was reported as 42 GB). 200 events of key 1
// into a count window with List and Last, with one list of 1,000 integers (24,000 bytes of
// items) shared by all: Last holds the list itself, once, and List a copy a cell (owned), so
// the state is what it is with a list of one item in its place, less those items, plus 24,000
// bytes and 200 × 24,000. With 200 lists, 200 × 24,000 for each column.
func TestStateBytesCountsSharedValuesOnce(t *testing.T) {
	stateWith := func(input func(i int) value.Value) int {
		var named []Named
		for _, f := range []string{"List", "Last"} {
			a, err := New(Spec{Func: f})
			if err != nil {
				t.Fatal(err)
			}
			named = append(named, Named{Name: f, Aggregator: a})
		}
		op, err := NewOperator(WindowSpec{Kind: CountWindow, Count: 1_000, CountSlide: 1}, named, func(*Result) {})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			v := input(i)
			if err := op.Add(&Event{Time: int64(i), Key: []value.Value{value.Int(1)}, Inputs: []value.Value{v, v}}); err != nil {
				t.Fatal(err)
			}
		}
		return op.StateBytes()
	}
	list := func() value.Value {
		items := make([]value.Value, 1000)
		for i := range items {
			items[i] = value.Int(int64(i))
		}
		return value.List(items)
	}
	shared := list()
	const items = 1000 * valueHeader
	// The same state with a list of one item in each event (24 bytes, counted each time) in
	// its place: base - 2 × 200 × 24 is the state without the lists' items.
	base := stateWith(func(int) value.Value { return value.List([]value.Value{value.Int(0)}) }) - 2*200*valueHeader
	if got, want := stateWith(func(int) value.Value { return shared }), base+items+200*items; got != want {
		t.Errorf("one list shared by 200 events: %d bytes, want %d (%d + %d + 200 × %d)", got, want, base, items, items)
	}
	if got, want := stateWith(func(int) value.Value { return list() }), base+2*200*items; got != want {
		t.Errorf("200 copies of the list: %d bytes, want %d (%d + 2 × 200 × %d)", got, want, base, items)
	}
}
