package aggregate

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// A snapshot taken at any point, restored into a new operator that then
// gets the rest of the input, gives exactly the results of the run that
// was never interrupted: same results, same order, same values, bit for
// bit (docs/semantics.md §6).
func snapshotProperty(kind WindowKind) func(*rapid.T) {
	return func(t *rapid.T) {
		spec := windowSpecGen(t, kind)
		sd := drawScenario(t, kind)
		checkRestored(t, spec, sd)
	}
}

// checkRestored runs sd's operations uninterrupted and with a snapshot after an operation drawn
// at random, restored into a new operator, and fails t unless both give the same results.
func checkRestored(t *rapid.T, spec WindowSpec, sd scenarioDraw) {
	cut := rapid.IntRange(0, len(sd.ops)-1).Draw(t, "cut")
	whole := runOps(t, spec, sd.specs, sd.ops, -1, false)
	parts := runOps(t, spec, sd.specs, sd.ops, cut, false)
	if len(whole) != len(parts) {
		t.Fatalf("%d results uninterrupted, %d with a restore after op %d", len(whole), len(parts), cut)
	}
	for i := range whole {
		if whole[i] != parts[i] {
			t.Fatalf("result %d:\nuninterrupted %s\n     restored %s", i, whole[i], parts[i])
		}
	}
}

// runOps runs ops through an operator; with cut >= 0 it snapshots after op
// cut, restores into a new operator and goes on with that one. With parts, it moves the
// watermark by AdvancePart, pausing before results at random, and at some pauses restores a
// snapshot taken there into a new operator (partsPaused counts the pauses). Results are
// rendered as strings, in emission order.
func runOps(t *rapid.T, spec WindowSpec, specs []Spec, ops []op, cut int, parts bool) []string {
	var out []string
	var sinceAsked int // (runOps's pause)
	emit := func(r *Result) {
		sinceAsked++
		s := fmt.Sprintf("%s [%d,%d) t=%d err=%v ev=%v", keyString(r.Key), r.Start, r.End, r.Time, r.Errs, r.Event != nil)
		for _, v := range r.Values {
			s += " " + string(value.AppendJSON(nil, v))
		}
		out = append(out, s)
	}
	newOp := func() Operator {
		aggs := make([]Named, len(specs))
		for i, s := range specs {
			a, err := New(s)
			if err != nil {
				t.Fatal(err)
			}
			aggs[i] = Named{Name: fmt.Sprint(i), Aggregator: a}
		}
		o, err := NewOperator(spec, aggs, emit)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := newOp()
	restore := func() {
		snap := o.AppendSnapshot(nil)
		before := o.Stats()
		o = newOp()
		if err := o.Restore(snap); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if o.Stats() != before {
			t.Fatalf("stats %+v restored as %+v", before, o.Stats())
		}
	}
	// pause is asked before each result but the first of a call (or each close of a session,
	// which may emit none): never two results without a look between them (a pause point
	// missed would let a close of many keys run on).
	pause := func() bool {
		if sinceAsked > 1 {
			t.Fatalf("%d results between two looks of pause", sinceAsked)
		}
		sinceAsked = 0
		return rapid.IntRange(0, 2).Draw(t, "pause") == 0
	}
	for i, x := range ops {
		switch x.kind {
		case opEvent:
			ev := x.ev
			_ = o.Add(&ev)
		case opWatermark:
			if !parts {
				o.Advance(x.w)
				break
			}
			for sinceAsked = 0; !o.AdvancePart(x.w, pause); sinceAsked = 0 {
				partsPaused.Add(1)
				if o.Watermark() >= x.w {
					t.Fatalf("paused on the way to %d with watermark %d", x.w, o.Watermark())
				}
				if at, ok := o.NextClose(); !ok || at > x.w {
					t.Fatalf("paused on the way to %d with the next close at %d (%v)", x.w, at, ok)
				}
				if rapid.Bool().Draw(t, "restore") {
					restore()
				}
			}
		case opFlush:
			o.Flush()
		}
		if i == cut {
			restore()
		}
	}
	return out
}

// partsPaused counts the pauses of runOps's AdvancePart.
var partsPaused atomic.Int64

// A watermark moved in parts (AdvancePart), paused before results at random and restored from
// snapshots taken at some pauses, emits exactly what Advance emits: the same results, in the
// same order, bit for bit; a paused operator's watermark is still before the one asked for,
// and its next close at or before it.
func partsProperty(kind WindowKind) func(*rapid.T) {
	return func(t *rapid.T) {
		spec := windowSpecGen(t, kind)
		sd := drawScenario(t, kind)
		whole := runOps(t, spec, sd.specs, sd.ops, -1, false)
		parts := runOps(t, spec, sd.specs, sd.ops, -1, true)
		if len(whole) != len(parts) {
			t.Fatalf("%d results by Advance, %d by AdvancePart", len(whole), len(parts))
		}
		for i := range whole {
			if whole[i] != parts[i] {
				t.Fatalf("result %d:\n     Advance %s\n AdvancePart %s", i, whole[i], parts[i])
			}
		}
	}
}

func TestPropertyAdvancePart(t *testing.T) {
	for _, kind := range []WindowKind{Tumbling, Hopping, Sliding, Session, CountWindow} {
		t.Run(kind.String(), func(t *testing.T) {
			before := partsPaused.Load()
			checkProperty(t, partsProperty(kind))
			if paused := partsPaused.Load() - before; paused == 0 && kind != CountWindow {
				t.Fatal("no step paused: the property tried nothing")
			}
		})
	}
}

func TestPropertySnapshotRestoreTumbling(t *testing.T) { checkProperty(t, snapshotProperty(Tumbling)) }
func TestPropertySnapshotRestoreHopping(t *testing.T)  { checkProperty(t, snapshotProperty(Hopping)) }
func TestPropertySnapshotRestoreSliding(t *testing.T)  { checkProperty(t, snapshotProperty(Sliding)) }
func TestPropertySnapshotRestoreSession(t *testing.T)  { checkProperty(t, snapshotProperty(Session)) }
func TestPropertySnapshotRestoreCount(t *testing.T)    { checkProperty(t, snapshotProperty(CountWindow)) }

func TestRestoreRefusesOtherOperators(t *testing.T) {
	c, _ := New(Spec{Func: "Count"})
	aggs := []Named{{Name: "c", Aggregator: c}}
	tum, _ := NewOperator(WindowSpec{Kind: Tumbling, Length: 1000}, aggs, func(*Result) {})
	ses, _ := NewOperator(WindowSpec{Kind: Session, SessionTimeout: 1000}, aggs, func(*Result) {})
	if err := ses.Restore(tum.AppendSnapshot(nil)); !errors.Is(err, ErrSnapshotMismatch) {
		t.Fatalf("session restored a tumbling snapshot: %v", err)
	}
	fresh, _ := NewOperator(WindowSpec{Kind: Tumbling, Length: 1000}, aggs, func(*Result) {})
	if err := fresh.Restore([]byte{snapshotVersion, byte(Tumbling), 1, 0xff}); !errors.Is(err, slices.ErrCorruptSnapshot) {
		t.Fatalf("truncated snapshot: %v", err)
	}
}

func FuzzRestore(f *testing.F) {
	c, _ := New(Spec{Func: "Sum"})
	l, _ := New(Spec{Func: "List"})
	aggs := []Named{{Name: "s", Aggregator: c}, {Name: "l", Aggregator: l}}
	specs := []WindowSpec{
		{Kind: Tumbling, Length: 1000}, {Kind: Hopping, Length: 2000, Slide: 1000},
		{Kind: Sliding, Length: 3000, EmitWhenEventLeft: true}, {Kind: Session, SessionTimeout: 1000}, {Kind: CountWindow, Count: 2},
	}
	for _, spec := range specs {
		o, _ := NewOperator(spec, aggs, func(*Result) {})
		for i := int64(0); i < 5; i++ {
			_ = o.Add(&Event{Time: i * 700, Key: []value.Value{value.Int(i % 2)}, Inputs: []value.Value{value.Int(i), value.String("x")}})
		}
		o.Advance(1500)
		f.Add(byte(spec.Kind), o.AppendSnapshot(nil))
		// And one taken part way through a close (AdvancePart): after its first result.
		if o.AdvancePart(20_000, func() bool { return true }) && spec.Kind != CountWindow {
			f.Fatalf("%s: a close of two keys did not pause", spec.Kind)
		}
		f.Add(byte(spec.Kind), o.AppendSnapshot(nil))
	}
	f.Fuzz(func(t *testing.T, which byte, snap []byte) {
		spec := specs[int(which)%len(specs)]
		o, _ := NewOperator(spec, aggs, func(*Result) {})
		if err := o.Restore(snap); err != nil {
			return
		}
		// A snapshot that restores must give an operator that works.
		_ = o.Add(&Event{Time: 10_000, Key: []value.Value{value.Int(1)}, Inputs: []value.Value{value.Int(1), value.Null()}})
		o.Flush()
	})
}

// A close paused part way ends before anything else the operator is given: an Advance to a
// smaller watermark, or an event, which its window's close then makes late (a review: the
// event was added to the half-emitted window, and lost). By hand: a tumbling window of 10 s
// and a session window of 1 s, keys a, b and c each with an event at 1 s; the step to 10 s
// (the sessions close at 2 s) pauses after a's result. Advance(1,500), or a second event of
// a at 1 s, emits b and c first, and the event is late (its window closed at 10 s; its
// session time, 1 s to 2 s, closed at 2 s, which the close going on reached at least).
func TestPausedCloseEndsFirst(t *testing.T) {
	specs := map[string]WindowSpec{"tumbling": {Kind: Tumbling, Length: 10_000}, "session": {Kind: Session, SessionTimeout: 1_000}}
	for name, spec := range specs {
		for _, then := range []string{"advance", "event", "restored event"} {
			t.Run(name+", "+then, func(t *testing.T) {
				var got []string
				emit := func(r *Result) { got = append(got, r.Key[0].Str()) }
				c, _ := New(Spec{Func: "Count"})
				op, err := NewOperator(spec, []Named{{Name: "n", Aggregator: c}}, emit)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"a", "b", "c"} {
					if err := op.Add(&Event{Time: 1_000, Key: []value.Value{value.String(k)}, Inputs: []value.Value{value.Null()}}); err != nil {
						t.Fatal(err)
					}
				}
				if op.AdvancePart(10_000, func() bool { return true }) || fmt.Sprint(got) != "[a]" {
					t.Fatalf("the paused step emitted %v; want [a], paused", got)
				}
				var late error
				switch then {
				case "advance":
					op.Advance(1_500)
				case "restored event":
					snap := op.AppendSnapshot(nil)
					if snap[0] != 5 {
						t.Fatalf("the snapshot of a paused step is of version %d; want 5", snap[0])
					}
					c, _ := New(Spec{Func: "Count"})
					op, _ = NewOperator(spec, []Named{{Name: "n", Aggregator: c}}, emit)
					if err := op.Restore(snap); err != nil {
						t.Fatal(err)
					}
					fallthrough
				case "event":
					late = op.Add(&Event{Time: 1_000, Key: []value.Value{value.String("a")}, Inputs: []value.Value{value.Null()}})
				}
				if fmt.Sprint(got) != "[a b c]" {
					t.Errorf("emitted %v; want [a b c]", got)
				}
				if v := op.AppendSnapshot(nil)[0]; v != 4 {
					t.Errorf("the snapshot once the step ended is of version %d; want 4 (the server before version 5 reads it)", v)
				}
				if then != "advance" && !errors.Is(late, ErrLate) {
					t.Errorf("the event after the pause: %v; want late", late)
				}
			})
		}
	}
}
