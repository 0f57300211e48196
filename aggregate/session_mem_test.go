package aggregate

import (
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

func sessionCount(t *testing.T, timeout int64) *sessionOp {
	t.Helper()
	c, err := New(Spec{Func: "Count"})
	if err != nil {
		t.Fatal(err)
	}
	op, err := NewOperator(WindowSpec{Kind: Session, SessionTimeout: timeout}, []Named{{Name: "n", Aggregator: c}}, func(*Result) {})
	if err != nil {
		t.Fatal(err)
	}
	return op.(*sessionOp)
}

// The pending closes follow the sessions, not the events: one key's session that takes
// 100,000 events (1 ms apart, a timeout of an hour, the watermark at the latest event)
// keeps one entry in the heap.
func TestSessionHeapFollowsSessions(t *testing.T) {
	s := sessionCount(t, 3_600_000)
	key := []value.Value{value.String("k")}
	inputs := []value.Value{value.Null()}
	for i := range int64(100_000) {
		if err := s.Add(&Event{Time: i, Key: key, Inputs: inputs}); err != nil {
			t.Fatal(err)
		}
		s.Advance(i)
	}
	if len(s.open[0]) != 1 || len(s.closing) != 1 {
		t.Fatalf("%d open sessions and %d pending closes, want 1 and 1", len(s.open[0]), len(s.closing))
	}
	var got []int64
	s.emit = func(r *Result) { got = append(got, r.Start, r.End, r.Values[0].Int()) }
	s.Flush()
	if len(got) != 3 || got[0] != 0 || got[1] != 99_999+3_600_000 || got[2] != 100_000 {
		t.Errorf("the session closed as %v, want [0 %d 100000]", got, 99_999+3_600_000)
	}
}

// Once every key has been seen and the operator's slices have grown, an event allocates
// nothing: sessions of 100 keys open and close (each key sees an event every 100 ms, with a
// timeout of 150 ms, and every 10 events a gap of 200 ms, which closes its session; the
// key's tombstone, until 300 ms after its last event, keeps the key). A key whose state was
// dropped allocates its copy again when it comes back: that is per key, not per event.
func TestSessionAddDoesNotAllocate(t *testing.T) {
	s := sessionCount(t, 150)
	keys := make([][]value.Value, 100)
	for k := range keys {
		keys[k] = []value.Value{value.Int(int64(k))}
	}
	inputs := []value.Value{value.Null()}
	var i, now int64
	var ev Event
	step := func() {
		k := i % 100
		if k == 0 {
			now += 1
			if (i/100)%10 == 9 {
				now += 1
			}
		}
		ev = Event{Time: now*100 + k, Key: keys[k], Inputs: inputs}
		if err := s.Add(&ev); err != nil {
			t.Fatal(err)
		}
		s.Advance(now*100 + k)
		i++
	}
	for range 200_000 {
		step()
	}
	if allocs := testing.AllocsPerRun(50_000, step); allocs != 0 {
		t.Errorf("%v allocations per event, want 0", allocs)
	}
	if s.stats.Emitted == 0 {
		t.Fatal("no session closed: the workload does not test closing")
	}
}
