package engine

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
)

// StepOwed names the aggregates a snapshot holds part way through a watermark step, with
// the first close not yet emitted and the sources' watermark, of those the next version does
// not keep; a step finished owes nothing.
//
// By hand: a tumbling window of 2 s, 3 s of disorder; one event at t0 = 1,700,000,000,000
// (a multiple of 2,000) for each of k0, k1, k2 puts them in the window [t0, t0 + 2,000);
// an event of k0 at t0 + 60,000 moves the watermark to t0 + 57,000, which closes it: three
// results in one close. A pause at every chance stops the close after its first result:
// the window's next close is still t0 + 2,000, the watermark t0 + 57,000. Once the step is
// continued to its end, the next close is the window of the last event, t0 + 62,000, past
// the watermark: nothing owed.
func TestStepOwed(t *testing.T) {
	sc, err := scenario.Decode([]byte(pauseGraph("aggregate-tumbling", `, {"name": "windowLength", "value": "2s"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1_700_000_000_000)
	p := newPauseEngine(t, sc, func() bool { return true }, nil)
	for i, k := range []string{"k0", "k1", "k2"} {
		if err := p.e.PushJSON("in", fmt.Appendf(nil, `{"t": %d, "k": %q, "x": 1}`, t0, k), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.e.PushJSON("in", fmt.Appendf(nil, `{"t": %d, "k": "k0", "x": 1}`, t0+60_000), 4); err != nil {
		t.Fatal(err)
	}
	if !p.e.StepOpen() {
		t.Fatal("the step did not pause")
	}
	paused := p.e.AppendSnapshot(nil)
	owed := func(snap []byte, kept func(string) bool) []OwedStep {
		t.Helper()
		old := newPauseEngine(t, sc, nil, nil)
		o, err := old.e.StepOwed(snap, kept)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	none := func(string) bool { return false }
	want := []OwedStep{{Node: "win", FirstClose: t0 + 2_000, Watermark: t0 + 57_000}}
	if got := owed(paused, none); !reflect.DeepEqual(got, want) {
		t.Errorf("paused, nothing kept: %+v; want %+v", got, want)
	}
	if got := owed(paused, func(id string) bool { return id == "win" }); got != nil {
		t.Errorf("paused, the aggregate kept: %+v; want none", got)
	}
	for p.e.StepOpen() {
		p.e.ContinueStep()
	}
	if got := owed(p.e.AppendSnapshot(nil), none); got != nil {
		t.Errorf("the step finished: %+v; want none", got)
	}
}
