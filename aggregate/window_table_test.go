package aggregate

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/value"
)

// Hand-worked window cases. Every expected value below was worked out by
// hand from SEMANTICS §2-§4; the comments show the working.

type step struct {
	t     int64 // event time (ms); ignored for watermarks
	key   string
	in    value.Value // input of the single aggregation
	w     int64       // watermark to advance to, when isW
	isW   bool
	flush bool
	end   bool // endSessionCondition
	late  bool // Add must report ErrLate
}

func ev(t int64, key string, in value.Value) step { return step{t: t, key: key, in: in} }
func wm(w int64) step                             { return step{w: w, isW: true} }
func flush() step                                 { return step{flush: true} }

type got struct {
	key        string
	start, end int64
	time       int64
	val        string // JSON of the single aggregation's value
	enriched   bool
}

func (g got) String() string {
	return fmt.Sprintf("{%s [%d,%d) t=%d %s enriched=%v}", g.key, g.start, g.end, g.time, g.val, g.enriched)
}

func runSteps(t *testing.T, spec WindowSpec, agg Spec, steps []step) []got {
	t.Helper()
	a, err := New(agg)
	if err != nil {
		t.Fatal(err)
	}
	var out []got
	op, err := NewOperator(spec, []Named{{Name: "v", Aggregator: a}}, func(r *Result) {
		out = append(out, got{key: r.Key[0].Str(), start: r.Start, end: r.End, time: r.Time,
			val: string(value.AppendJSON(nil, r.Values[0])), enriched: r.Event != nil})
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		switch {
		case s.flush:
			op.Flush()
		case s.isW:
			op.Advance(s.w)
		default:
			err := op.Add(&Event{Time: s.t, Key: []value.Value{value.String(s.key)}, Inputs: []value.Value{s.in}, EndSession: s.end})
			if s.late != errors.Is(err, ErrLate) {
				t.Fatalf("step %d: Add error %v, want late=%v", i, err, s.late)
			}
			if err != nil && !errors.Is(err, ErrLate) {
				t.Fatalf("step %d: %v", i, err)
			}
		}
	}
	return out
}

func expect(t *testing.T, gotOut []got, want []got) {
	t.Helper()
	if len(gotOut) != len(want) {
		t.Fatalf("got %d results %v\nwant %d %v", len(gotOut), gotOut, len(want), want)
	}
	for i := range want {
		if gotOut[i] != want[i] {
			t.Fatalf("result %d:\n got %v\nwant %v\nall: %v", i, gotOut[i], want[i], gotOut)
		}
	}
}

func i64(n int64) value.Value { return value.Int(n) }

func TestWindowEventOnBoundary(t *testing.T) {
	// Tumbling 10 s windows [0,10000), [10000,20000). An event at exactly
	// 10000 belongs to the second window, never the first.
	spec := WindowSpec{Kind: Tumbling, Length: 10000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Sum"}, []step{
		ev(9999, "k", i64(1)), ev(10000, "k", i64(10)), wm(10000), ev(19999, "k", i64(100)), flush(),
	})
	// W=10000 closes [0,10000) holding only the event at 9999: sum 1.
	// The flush closes [10000,20000): 10 + 100 = 110.
	expect(t, out, []got{
		{"k", 0, 10000, 9999, "1", false},
		{"k", 10000, 20000, 19999, "110", false},
	})
}

func TestSessionBridgedByOutOfOrderEvent(t *testing.T) {
	// Timeout 10 s. Events at 0 and 25000 start two sessions (gap 25 s).
	// The out-of-order 9000 joins the first (9 s after 0; 16 s before 25000).
	// The out-of-order 17000 is 8 s after 9000 and 8 s before 25000: it
	// bridges them into one session [0, 25000+10000) of 4 events.
	spec := WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), ev(25000, "k", value.Null()), ev(9000, "k", value.Null()),
		ev(17000, "k", value.Null()), flush(),
	})
	expect(t, out, []got{{"k", 0, 35000, 34999, "4", false}})
}

func TestSessionGapOfExactlyTimeoutStartsNewSession(t *testing.T) {
	// Events 10 s apart with a 10 s timeout are two sessions.
	spec := WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), ev(10000, "k", value.Null()), flush(),
	})
	expect(t, out, []got{{"k", 0, 10000, 9999, "1", false}, {"k", 10000, 20000, 19999, "1", false}})
}

func TestSessionEndCondition(t *testing.T) {
	// The condition closes the session at once, its event included, with
	// window [first, last+1); the next event starts a new session.
	spec := WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), {t: 3000, key: "k", in: value.Null(), end: true}, ev(4000, "k", value.Null()), flush(),
	})
	expect(t, out, []got{{"k", 0, 3001, 3000, "2", false}, {"k", 4000, 14000, 13999, "1", false}})
}

func TestSessionClosedByConditionDropsEventsWithinIt(t *testing.T) {
	// Timeout 10 s, no watermark: nothing is late by time. The condition at
	// 3000 closes [0, 3001) with 2 events. The out-of-order 2000 would join
	// that closed session, and so would -5000 (within the timeout before its
	// first event): both are dropped (SEMANTICS §2). 4000 comes after it and
	// starts a new session, which the out-of-order 3500 joins (3.5 s is after
	// the closed session's last event): [3500, 14000) with 2 events.
	spec := WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), {t: 3000, key: "k", in: value.Null(), end: true},
		{t: 2000, key: "k", in: value.Null(), late: true}, {t: -5000, key: "k", in: value.Null(), late: true},
		ev(4000, "k", value.Null()), ev(3500, "k", value.Null()),
		{t: -10000, key: "k", in: value.Null()}, // before the closed session's reach: a session of its own
		flush(),
	})
	expect(t, out, []got{{"k", 0, 3001, 3000, "2", false}, {"k", -10000, 0, -1, "1", false}, {"k", 3500, 14000, 13999, "2", false}})
}

func TestLateEventDroppedFromClosedWindowCountedInOpenOne(t *testing.T) {
	// Hopping: length 20 s, slide 10 s. The event at 5000 is in windows
	// [-10000,10000) and [0,20000). Windows containing t=15000 are [0,20000)
	// and [10000,30000). With W=20000, [0,20000) has closed and emitted; the
	// late event at 15000 is dropped from it but added to the open
	// [10000,30000).
	spec := WindowSpec{Kind: Hopping, Length: 20000, Slide: 10000}
	out := runSteps(t, spec, Spec{Func: "Sum"}, []step{
		ev(5000, "k", i64(1)), wm(20000), ev(15000, "k", i64(10)), flush(),
	})
	// At W=20000: [-10000,10000) = 1 and [0,20000) = 1. At the flush:
	// [10000,30000) = 10; [20000,40000) holds nothing and is not emitted.
	expect(t, out, []got{
		{"k", -10000, 10000, 9999, "1", false},
		{"k", 0, 20000, 19999, "1", false},
		{"k", 10000, 30000, 29999, "10", false},
	})
	// An event at 5000 now belongs only to closed windows: dropped, ErrLate.
	runSteps(t, spec, Spec{Func: "Sum"}, []step{ev(5000, "k", i64(1)), wm(20000), {t: 5000, key: "k", in: i64(1), late: true}})
}

func TestEndOfInputFlush(t *testing.T) {
	// No watermark at all: only the flush closes the windows, both keys.
	spec := WindowSpec{Kind: Tumbling, Length: 60000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(1000, "a", value.Null()), ev(61000, "a", value.Null()), ev(2000, "b", value.Null()), flush(),
	})
	// Window [0,60000) closes first for a and b (slot order: a then b), then [60000,120000) for a.
	expect(t, out, []got{
		{"a", 0, 60000, 59999, "1", false},
		{"b", 0, 60000, 59999, "1", false},
		{"a", 60000, 120000, 119999, "1", false},
	})
}

func TestSlidingEmitWhenEventLeftDownToEmpty(t *testing.T) {
	// Sliding 3 s window at 1 s precision: an event in slice j sees slices
	// [j-2, j]. Events at 500 (slice 0) and 1500 (slice 1).
	spec := WindowSpec{Kind: Sliding, Length: 3000, EmitWhenEventLeft: true}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(500, "k", value.Null()), ev(1500, "k", value.Null()), flush(),
	})
	// Enriched: t=500 window [-2000,1000) count 1; t=1500 window [-1000,2000) count 2.
	// Slice 0 leaves at window slice 3 = [1000,4000): count 1 (slice 1).
	// Slice 1 leaves at window slice 4 = [2000,5000): count 0, the final empty result.
	expect(t, out, []got{
		{"k", -2000, 1000, 500, "1", true},
		{"k", -1000, 2000, 1500, "2", true},
		{"k", 1000, 4000, 3999, "1", false},
		{"k", 2000, 5000, 4999, "0", false},
	})
}

func TestSlidingLateBelowWatermark(t *testing.T) {
	spec := WindowSpec{Kind: Sliding, Length: 3000}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(5000, "k", value.Null()), wm(4000), {t: 3999, key: "k", in: value.Null(), late: true}, ev(4000, "k", value.Null()),
	})
	// 3999 < W=4000: late. 4000 = W: accepted; its window [2000,5000) holds only itself
	// (5000 is in slice 5, outside [2,4]).
	expect(t, out, []got{{"k", 3000, 6000, 5000, "1", true}, {"k", 2000, 5000, 4000, "1", true}})
}

func TestTumblingOnEndWithExtraWindow(t *testing.T) {
	// 10 s windows. Data in windows 0 and 1 and 3 for key k.
	spec := WindowSpec{Kind: Tumbling, Length: 10000, EmitWhen: OnEndWithExtraWindow}
	out := runSteps(t, spec, Spec{Func: "Sum"}, []step{
		ev(1000, "k", i64(1)), ev(11000, "k", i64(2)), ev(31000, "k", i64(4)), flush(),
	})
	// Windows 0 and 1 emit their sums; window 2 is empty after the
	// non-empty window 1: extra empty result (Sum of nothing = 0). Window 3
	// emits 4, then window 4 is the extra empty one.
	expect(t, out, []got{
		{"k", 0, 10000, 9999, "1", false},
		{"k", 10000, 20000, 19999, "2", false},
		{"k", 20000, 30000, 29999, "0", false},
		{"k", 30000, 40000, 39999, "4", false},
		{"k", 40000, 50000, 49999, "0", false},
	})
}

func TestTumblingOnEvent(t *testing.T) {
	spec := WindowSpec{Kind: Tumbling, Length: 10000, EmitWhen: OnEvent}
	out := runSteps(t, spec, Spec{Func: "Sum"}, []step{
		ev(1000, "k", i64(1)), ev(2000, "k", i64(2)), ev(12000, "k", i64(4)), wm(10000), {t: 9000, key: "k", in: i64(8), late: true}, flush(),
	})
	expect(t, out, []got{
		{"k", 0, 10000, 1000, "1", true},
		{"k", 0, 10000, 2000, "3", true},
		{"k", 10000, 20000, 12000, "4", true},
	})
}

func TestTumblingOffset(t *testing.T) {
	// Offset 2 s: windows [2000,12000), [12000,22000) ...
	spec := WindowSpec{Kind: Tumbling, Length: 10000, Offset: 2000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{ev(1999, "k", value.Null()), ev(2000, "k", value.Null()), flush()})
	expect(t, out, []got{{"k", -8000, 2000, 1999, "1", false}, {"k", 2000, 12000, 11999, "1", false}})
}

func TestDailyTumblingAcrossDaylightSaving(t *testing.T) {
	// Europe/Warsaw: CET (UTC+1) until 2026-03-29 02:00 local, then CEST (UTC+2)
	// until 2026-10-25 03:00 local. Local days, in UTC:
	//   2026-03-29: 2026-03-28T23:00Z .. 2026-03-29T22:00Z (23 h)
	//   2026-03-30: 2026-03-29T22:00Z .. 2026-03-30T22:00Z (24 h)
	//   2026-10-25: 2026-10-24T22:00Z .. 2026-10-25T23:00Z (25 h)
	utc := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	spec := WindowSpec{Kind: Tumbling, Length: 24 * 3600 * 1000, TimeZone: "Europe/Warsaw", EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(utc("2026-03-28T23:00:00Z"), "k", value.Null()), // local 00:00 on the 29th
		ev(utc("2026-03-29T21:59:59Z"), "k", value.Null()), // local 23:59:59 on the 29th
		ev(utc("2026-03-29T22:00:00Z"), "k", value.Null()), // local 00:00 on the 30th
		ev(utc("2026-10-25T22:30:00Z"), "k", value.Null()), // local 23:30 CET on the 25th
		ev(utc("2026-10-24T22:00:00Z"), "k", value.Null()), // local 00:00 CEST on the 25th
		flush(),
	})
	expect(t, out, []got{
		{"k", utc("2026-03-28T23:00:00Z"), utc("2026-03-29T22:00:00Z"), utc("2026-03-29T22:00:00Z") - 1, "2", false},
		{"k", utc("2026-03-29T22:00:00Z"), utc("2026-03-30T22:00:00Z"), utc("2026-03-30T22:00:00Z") - 1, "1", false},
		{"k", utc("2026-10-24T22:00:00Z"), utc("2026-10-25T23:00:00Z"), utc("2026-10-25T23:00:00Z") - 1, "2", false},
	})
}

func TestCountWindows(t *testing.T) {
	// Every 3 events, sliding by 2: windows after events 3, 5, 7.
	spec := WindowSpec{Kind: CountWindow, Count: 3, CountSlide: 2}
	var steps []step
	for i := int64(1); i <= 8; i++ {
		steps = append(steps, ev(i*1000, "k", i64(i)))
	}
	steps = append(steps, flush())
	out := runSteps(t, spec, Spec{Func: "Sum"}, steps)
	// {1,2,3}=6, {3,4,5}=12, {5,6,7}=18; the 8th event starts a window never completed.
	expect(t, out, []got{
		{"k", 1000, 3001, 3000, "6", false},
		{"k", 3000, 5001, 5000, "12", false},
		{"k", 5000, 7001, 7000, "18", false},
	})
}

func TestWindowGeometryErrors(t *testing.T) {
	a, _ := New(Spec{Func: "Count"})
	aggs := []Named{{Name: "c", Aggregator: a}}
	for _, tc := range []struct {
		name string
		spec WindowSpec
	}{
		{"shorter than precision", WindowSpec{Kind: Sliding, Length: 30000, Precision: 60000}},
		{"not a multiple of precision", WindowSpec{Kind: Sliding, Length: 90000, Precision: 60000}},
		{"hopping length not multiple of slide", WindowSpec{Kind: Hopping, Length: 25000, Slide: 10000}},
		{"zone with hours", WindowSpec{Kind: Tumbling, Length: 3600000, TimeZone: "Europe/Warsaw"}},
		{"unknown zone", WindowSpec{Kind: Tumbling, Length: 86400000, TimeZone: "Mars/Olympus"}},
		{"no timeout", WindowSpec{Kind: Session}},
		{"count slide above count", WindowSpec{Kind: CountWindow, Count: 2, CountSlide: 3}},
	} {
		if _, err := NewOperator(tc.spec, aggs, func(*Result) {}); !errors.Is(err, ErrBadWindow) {
			t.Errorf("%s: err = %v, want ErrBadWindow", tc.name, err)
		}
	}
}

// The operators validate inputs with kind masks (kindMasks), which is exact
// only if every aggregator's Accept depends on the input's kind alone.
func TestAcceptDependsOnKindOnly(t *testing.T) {
	samples := map[value.Kind][]value.Value{
		value.KindNull:   {value.Null()},
		value.KindBool:   {value.Bool(true), value.Bool(false)},
		value.KindInt:    {value.Int(0), value.Int(-1 << 63), value.Int(42)},
		value.KindFloat:  {value.Float(0.5), value.Float(-1e300), value.Float(0)},
		value.KindString: {value.String(""), value.String("x")},
		value.KindList:   {value.List(nil), value.List([]value.Value{value.Int(1)})},
		value.KindRecord: {value.NewRecord(nil, nil), value.NewRecord([]string{"a"}, []value.Value{value.Null()})},
	}
	for _, fi := range Funcs() {
		s := Spec{Func: fi.Name}
		if fi.Param == "quantile" {
			s.Quantile = 0.5
		}
		a, err := New(s)
		if err != nil {
			t.Fatalf("%s: %v", fi.Name, err)
		}
		for kind, vals := range samples {
			first := a.Accept(vals[0]) == nil
			for _, v := range vals[1:] {
				if (a.Accept(v) == nil) != first {
					t.Errorf("%s: Accept differs within kind %s", fi.Name, kind)
				}
			}
		}
	}
}

func TestSlidingLeaveResultsOwedBeforeALaterEvent(t *testing.T) {
	// Sliding 10 s at 1 s precision, watermark = the latest event (no
	// disorder). Key a has events at 0, 9999, 10000 (slices 0, 9, 10), then
	// at 30000. Slice 0 leaves at window slice 10, but slice 10 has its own
	// event: nothing owed. Slice 9 leaves at slice 19: window [10, 19] holds
	// the event at 10000: count 1, emitted with time 19999. Slice 10 leaves at
	// slice 20: window [11, 20] is empty: count 0 at 20999. Both are owed even
	// though the event at 30000 comes before the watermark passes them; then
	// slice 30 leaves at slice 40 after the flush: count 0 at 40999.
	spec := WindowSpec{Kind: Sliding, Length: 10000, EmitWhenEventLeft: true}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "a", value.Null()), wm(0), ev(9999, "a", value.Null()), wm(9999), ev(10000, "a", value.Null()), wm(10000),
		ev(30000, "a", value.Null()), wm(30000), flush(),
	})
	expect(t, out, []got{
		{"a", -9000, 1000, 0, "1", true},
		{"a", 0, 10000, 9999, "2", true},
		{"a", 1000, 11000, 10000, "2", true},
		// The event at 30000 is emitted (enriched) from within Add; the
		// watermark step that follows it then emits what is owed.
		{"a", 21000, 31000, 30000, "1", true},
		{"a", 10000, 20000, 19999, "1", false},
		{"a", 11000, 21000, 20999, "0", false},
		{"a", 31000, 41000, 40999, "0", false},
	})
}
