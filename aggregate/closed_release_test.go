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
