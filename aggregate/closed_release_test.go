package aggregate

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// Once its windows have closed and emitted, an operator holds nothing of their values nor of
// their key: 20 events of 1 MiB strings in the window of one key of 2 MiB (22 MiB), then a
// watermark past every window. Before, the last fired window's merged List or Set stayed in
// the operator's scratch columns and in its reused result until another window fired, which
// may be never: a tumbling or hopping window kept counting 20 MiB in StateBytes (against
// --max-total-state) and every kind kept 20 MiB of heap; the reused result kept the key, and
// so did a session window's slab of keys (review). What the operator still holds is its
// columns' empty cells and key tables, a few KiB (the bounds below are 64 KiB counted, 1 MiB held); what it emitted
// is the caller's, whole.
func TestClosedWindowsLetGo(t *testing.T) {
	const events, size = 20, 1 << 20
	specs := []WindowSpec{
		{Kind: Tumbling, Length: 10_000},
		{Kind: Tumbling, Length: 10_000, EmitWhen: OnEvent},
		{Kind: Hopping, Length: 20_000, Slide: 10_000},
		{Kind: Sliding, Length: 10_000},
		{Kind: Session, SessionTimeout: 5_000},
		{Kind: CountWindow, Count: events},
	}
	for _, fn := range []string{"List", "Set"} {
		agg, err := New(Spec{Func: fn})
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range specs {
			t.Run(fmt.Sprintf("%s %v %v", fn, spec.Kind, spec.EmitWhen), func(t *testing.T) {
				// The largest result emitted: the window of all 20 events (each kind emits
				// it at least once: its last window, session or count window).
				most := 0
				op, err := NewOperator(spec, []Named{{Name: "v", Aggregator: agg}}, func(r *Result) {
					if l := r.Values[0].List(); len(l) > most && l[0].Str() == strings.Repeat("a", size) {
						most = len(l)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				before := liveBytes()
				key := []value.Value{value.String(strings.Repeat("k", 2<<20))}
				for i := range events {
					in := []value.Value{value.String(strings.Repeat(string(rune('a'+i)), size))}
					if err := op.Add(&Event{Time: 1000 + int64(i), Key: key, Inputs: in}); err != nil {
						t.Fatal(err)
					}
				}
				op.Advance(400_000)
				if most != events {
					t.Fatalf("the largest result emitted had %d values, want %d", most, events)
				}
				if b := op.StateBytes(); b > 64<<10 {
					t.Errorf("StateBytes %d after every window closed, want at most 64 KiB", b)
				}
				if held := liveBytes() - before; held > 1<<20 {
					t.Errorf("%.1f MiB still held after every window closed, want under 1 of the 22", float64(held)/(1<<20))
				}
				runtime.KeepAlive(op)
			})
		}
	}
}

// liveBytes is the heap in use after a collection.
func liveBytes() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Once a tumbling or hopping window of many keys has closed and no key is left, the operator
// lets go of its key table and the columns sized by it, and goes on right with new keys: one
// window of 200,000 keys (a count each), then a watermark past it, then keys again. Before, a
// window of 1,000,000 keys left 81 MB counted in StateBytes with no key left (hostile round:
// four such idle deployments made a fifth fail on --max-total-state).
func TestClosedWindowsLetGoOfKeys(t *testing.T) {
	const keys = 200_000
	count, err := New(Spec{Func: "Count"})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := New(Spec{Func: "Sum"})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []WindowSpec{{Kind: Tumbling, Length: 10_000}, {Kind: Hopping, Length: 20_000, Slide: 10_000}} {
		t.Run(spec.Kind.String(), func(t *testing.T) {
			got := map[string]int64{}
			op, err := NewOperator(spec, []Named{{Name: "n", Aggregator: count}, {Name: "s", Aggregator: sum}}, func(r *Result) {
				got[fmt.Sprint(r.Start, r.Key[0].Str())] += r.Values[0].Int()
			})
			if err != nil {
				t.Fatal(err)
			}
			add := func(at int64, k string) {
				if err := op.Add(&Event{Time: at, Key: []value.Value{value.String(k)}, Inputs: []value.Value{value.Int(1), value.Int(2)}}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range keys {
				add(1000, fmt.Sprint("k", i))
			}
			open := op.StateBytes()
			op.Advance(100_000)
			if b := op.StateBytes(); b > 64<<10 || b*100 > open {
				t.Errorf("StateBytes %d after the window of %d keys closed (%d while open), want at most 64 KiB", b, keys, open)
			}
			// New keys after it: counted right, in their own windows.
			add(200_500, "a")
			add(200_600, "a")
			add(200_700, "b")
			op.Advance(400_000)
			windows := 1
			if spec.Kind == Hopping {
				windows = 2
			}
			if n := len(got); n != keys*windows+2*windows {
				t.Errorf("%d results, want %d", n, keys*windows+2*windows)
			}
			start := int64(200_000)
			if spec.Kind == Hopping {
				start = 190_000
			}
			if got[fmt.Sprint(start, "a")] != 2 || got[fmt.Sprint(start, "b")] != 1 || got[fmt.Sprint(int64(0), "k7")] != 1 {
				t.Errorf("counts after the shrink: a %d, b %d (want 2, 1), k7 %d (want 1)", got[fmt.Sprint(start, "a")], got[fmt.Sprint(start, "b")], got[fmt.Sprint(int64(0), "k7")])
			}
		})
	}
}

// The same for a sliding window: its keys' table, running block and latest slices are let go
// once no key, slice or timer is left, and new keys are counted right after.
func TestClosedSlidingWindowLetsGoOfKeys(t *testing.T) {
	const keys = 200_000
	count, err := New(Spec{Func: "Count"})
	if err != nil {
		t.Fatal(err)
	}
	last, results := map[string]int64{}, 0
	op, err := NewOperator(WindowSpec{Kind: Sliding, Length: 10_000}, []Named{{Name: "n", Aggregator: count}}, func(r *Result) {
		last[r.Key[0].Str()] = r.Values[0].Int()
		results++
	})
	if err != nil {
		t.Fatal(err)
	}
	add := func(at int64, k string) {
		if err := op.Add(&Event{Time: at, Key: []value.Value{value.String(k)}, Inputs: []value.Value{value.Int(1)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys {
		add(1000, fmt.Sprint("k", i))
	}
	open := op.StateBytes()
	op.Advance(100_000)
	if b := op.StateBytes(); b > 64<<10 {
		t.Errorf("StateBytes %d after the windows of %d keys closed (%d while open), want at most 64 KiB", b, keys, open)
	}
	add(200_500, "a")
	add(200_600, "a")
	add(200_700, "b")
	op.Advance(400_000)
	if results != keys+3 || last["a"] != 2 || last["b"] != 1 || last["k7"] != 1 {
		t.Errorf("%d results, a %d, b %d, k7 %d; want %d, 2, 1, 1", results, last["a"], last["b"], last["k7"], keys+3)
	}
}
