package engine

import "testing"

// A shared budget fails the engine whose state grows while the total is past it, and only
// that one; a released engine no longer counts. Totals worked by hand.
func TestSharedStateBudget(t *testing.T) {
	b := &SharedStateBudget{Max: 100}
	e1, e2 := &Engine{}, &Engine{}
	steps := []struct {
		e     *Engine
		bytes int64
		total int64
		over  bool
	}{
		{e1, 60, 60, false},
		{e2, 30, 90, false},
		{e2, 50, 110, true},  // e2 grew past 100
		{e1, 60, 110, false}, // e1 did not grow
		{e1, 55, 105, false}, // nor shrinking
		{e1, 56, 106, true},  // but growing, still past it
		{e2, 40, 96, false},
	}
	for i, s := range steps {
		if total, over := b.Record(s.e, s.bytes); total != s.total || over != s.over {
			t.Errorf("step %d: total %d, over %v; want %d, %v", i, total, over, s.total, s.over)
		}
	}
	b.Release(e2)
	if got := b.Total(); got != 56 {
		t.Errorf("after releasing e2: %d, want 56", got)
	}
	b.Release(e2) // twice: nothing more
	if got := b.Total(); got != 56 {
		t.Errorf("after releasing e2 again: %d, want 56", got)
	}
	if total, over := (&SharedStateBudget{}).Record(e1, 1<<40); total != 1<<40 || over {
		t.Errorf("no budget (Max 0): %d, %v", total, over)
	}
}
