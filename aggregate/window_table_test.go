package aggregate

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/value"
)

// Hand-worked window cases. Every expected value below was worked out by
// hand from docs/semantics.md §2-§4; the comments show the working.

type step struct {
	t     int64 // event time (ms); ignored for watermarks
	key   string
	in    value.Value // input of the single aggregation
	w     int64       // watermark to advance to, when isW
	isW   bool
	flush bool
	end   bool // endSessionCondition
	late  bool // Add must report ErrLate
	// lateErr, when set, is the *LateError Add must return (late is implied).
	lateErr *LateError
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
	out, _ := runStepsStats(t, spec, agg, steps)
	return out
}

// runStepsStats is runSteps, also returning the operator's counters.
func runStepsStats(t *testing.T, spec WindowSpec, agg Spec, steps []step) ([]got, Stats) {
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
			if want := s.late || s.lateErr != nil; want != errors.Is(err, ErrLate) {
				t.Fatalf("step %d: Add error %v, want late=%v", i, err, want)
			}
			if s.lateErr != nil {
				var le *LateError
				if !errors.As(err, &le) || *le != *s.lateErr {
					t.Fatalf("step %d: Add error %#v, want %#v", i, err, s.lateErr)
				}
			}
			if err != nil && !errors.Is(err, ErrLate) {
				t.Fatalf("step %d: %v", i, err)
			}
		}
	}
	return out, op.Stats()
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

func TestSessionEventsExactlyTimeoutApartShareASession(t *testing.T) {
	// Events 10 s apart with a 10 s timeout are at most the timeout apart:
	// one session [0, 10000+10000) of 2 events (sessions that touch merge).
	// 20001 is 10001 ms after 10000: a session of its own [20001, 30001).
	spec := WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), ev(10000, "k", value.Null()), ev(20001, "k", value.Null()), flush(),
	})
	expect(t, out, []got{{"k", 0, 20000, 19999, "2", false}, {"k", 20001, 30001, 30000, "1", false}})
}

func TestSessionTouchingBackwards(t *testing.T) {
	// Timeout 10 s, no watermark. Sessions {0} and {20000} are 20 s apart.
	// The out-of-order 10000 is exactly 10 s after 0 and 10 s before 20000:
	// it touches both and merges them into [0, 30000) of 3 events. Then
	// -10000 is exactly 10 s before the session's first event: it joins,
	// giving [-10000, 30000) of 4 events.
	spec := WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), ev(20000, "k", value.Null()), ev(10000, "k", value.Null()), ev(-10000, "k", value.Null()), flush(),
	})
	expect(t, out, []got{{"k", -10000, 30000, 29999, "4", false}})
}

// sessionRun feeds a session operator (timeout 30 s, OnEnd, Count) one
// key's events with the watermark advanced to each event's time after it
// (maxOutOfOrderness 0, so W is the largest event time so far), and returns
// the results emitted after each event (index i) and at the flush (last).
func sessionRun(t *testing.T, times []int64) [][]got {
	t.Helper()
	c, _ := New(Spec{Func: "Count"})
	var cur []got
	op, err := NewOperator(WindowSpec{Kind: Session, SessionTimeout: 30000, EmitWhen: OnEnd}, []Named{{Name: "n", Aggregator: c}}, func(r *Result) {
		cur = append(cur, got{key: r.Key[0].Str(), start: r.Start, end: r.End, time: r.Time, val: string(value.AppendJSON(nil, r.Values[0]))})
	})
	if err != nil {
		t.Fatal(err)
	}
	var steps [][]got
	for _, tm := range times {
		if err := op.Add(&Event{Time: tm, Key: []value.Value{value.String("k")}, Inputs: []value.Value{value.Null()}}); err != nil {
			t.Fatalf("Add(%d): %v", tm, err)
		}
		op.Advance(tm)
		steps, cur = append(steps, cur), nil
	}
	op.Flush()
	return append(steps, cur)
}

func TestSessionsThatTouchMerge(t *testing.T) {
	at := func(hms string) int64 {
		tm, err := time.Parse(time.RFC3339, "2024-05-06T"+hms+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	// Timeout 30 s. 10:00:10 is 10 s after 10:00:00, 10:00:40 is 30 s after
	// 10:00:10 (at most the timeout: same session), 10:01:20 is 40 s after
	// 10:00:40: a new session. The first is [10:00:00, 10:00:40 + 30 s) =
	// [10:00:00, 10:01:10) with 3 events; it closes when W >= 10:01:10, i.e.
	// when 10:01:20 arrives and the watermark moves to it. The flush closes
	// [10:01:20, 10:01:50) with 1 event.
	steps := sessionRun(t, []int64{at("10:00:00"), at("10:00:10"), at("10:00:40"), at("10:01:20")})
	for i := 0; i < 3; i++ {
		expect(t, steps[i], nil)
	}
	expect(t, steps[3], []got{{"k", at("10:00:00"), at("10:01:10"), at("10:01:10") - 1, "3", false}})
	expect(t, steps[4], []got{{"k", at("10:01:20"), at("10:01:50"), at("10:01:50") - 1, "1", false}})

	// With the fourth event at 10:01:10 instead: 30 s after 10:00:40, it
	// touches the session (added before W moves to 10:01:10, while the
	// session [10:00:00, 10:01:10) is still open), which becomes
	// [10:00:00, 10:01:10 + 30 s) = [10:00:00, 10:01:40) with 4 events,
	// open until the flush.
	steps = sessionRun(t, []int64{at("10:00:00"), at("10:00:10"), at("10:00:40"), at("10:01:10")})
	for i := 0; i < 4; i++ {
		expect(t, steps[i], nil)
	}
	expect(t, steps[4], []got{{"k", at("10:00:00"), at("10:01:40"), at("10:01:40") - 1, "4", false}})
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
	// that closed session, and so would -5000 and -10000 (at most the
	// timeout before its first event): all are dropped (docs/semantics.md §2), each
	// naming the closed session [0, 3001) at the watermark NoWatermark.
	// 4000 comes after it and starts a new session, which the out-of-order
	// 3500 joins (3.5 s is after the closed session's last event):
	// [3500, 14000) with 2 events. -10001 is 10.001 s before 0 and 13.501 s
	// before 3500: a session of its own, [-10001, -1).
	spec := WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd}
	closed := &LateError{WindowStart: 0, WindowEnd: 3001, Watermark: NoWatermark}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), {t: 3000, key: "k", in: value.Null(), end: true},
		{t: 2000, key: "k", in: value.Null(), lateErr: closed}, {t: -5000, key: "k", in: value.Null(), lateErr: closed},
		{t: -10000, key: "k", in: value.Null(), lateErr: closed},
		ev(4000, "k", value.Null()), ev(3500, "k", value.Null()),
		{t: -10001, key: "k", in: value.Null()}, // before the closed session's reach: a session of its own
		flush(),
	})
	expect(t, out, []got{{"k", 0, 3001, 3000, "2", false}, {"k", -10001, -1, -2, "1", false}, {"k", 3500, 14000, 13999, "2", false}})
}

func TestSessionClosedRememberedWhileKeyHasOpenSession(t *testing.T) {
	// Timeout 60 s (docs/semantics.md §4). Session [0, 60000) of "k" closes when W reaches
	// 60000 (here 100000), Count 1. While "k" has an open session ([100000, 190000) once
	// 130000 joins it), the closed one is remembered, though W (130000) passed its last event
	// + 2 timeouts (120000): the out-of-order 40000 reaches both (40 s after 0; 60 s before
	// 100000), would join the closed one, and is late, naming [0, 60000) at W 130000. The
	// open session ends at the flush: Count 2.
	spec := WindowSpec{Kind: Session, SessionTimeout: 60000, EmitWhen: OnEnd}
	out := runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), wm(0), ev(100000, "k", value.Null()), wm(100000),
		ev(130000, "k", value.Null()), wm(130000),
		{t: 40000, key: "k", in: value.Null(), lateErr: &LateError{WindowStart: 0, WindowEnd: 60000, Watermark: 130000}},
		flush(),
	})
	expect(t, out, []got{{"k", 0, 60000, 59999, "1", false}, {"k", 100000, 190000, 189999, "2", false}})

	// When W reaches 120000 with no open session of "k" (another key's event at 125000
	// moved it), "k" holds nothing: its next session [100000, 160000) opens after, and the
	// out-of-order 40000 joins it (60 s before 100000): [40000, 160000), Count 2.
	out = runSteps(t, spec, Spec{Func: "Count"}, []step{
		ev(0, "k", value.Null()), wm(0), ev(125000, "j", value.Null()), wm(125000),
		ev(100000, "k", value.Null()), ev(40000, "k", value.Null()), flush(),
	})
	expect(t, out, []got{{"k", 0, 60000, 59999, "1", false}, {"k", 40000, 160000, 159999, "2", false}, {"j", 125000, 185000, 184999, "1", false}})
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
	// An event at 5000 now belongs only to closed windows, [-10000,10000)
	// and [0,20000): dropped, and the error names the first of them.
	runSteps(t, spec, Spec{Func: "Sum"}, []step{ev(5000, "k", i64(1)), wm(20000),
		{t: 5000, key: "k", in: i64(1), lateErr: &LateError{WindowStart: -10000, WindowEnd: 10000, Watermark: 20000}}})
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
		ev(5000, "k", value.Null()), wm(4000),
		{t: 3999, key: "k", in: value.Null(), lateErr: &LateError{WindowStart: 1000, WindowEnd: 4000, Watermark: 4000}},
		ev(4000, "k", value.Null()),
	})
	// 3999 < W=4000: late; its own window is the 3 one-second slices ending
	// with its slice 3: [1000, 4000). 4000 = W: accepted; its window
	// [2000,5000) holds only itself (5000 is in slice 5, outside [2,4]).
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

func TestLateErrorNamesTheFirstWindowMissed(t *testing.T) {
	// Tumbling 10 s, no disorder (the watermark moves to each event's time
	// after it). 1000 opens [0, 10000); 25000 moves W to 25000, closing
	// [0, 10000) and [10000, 20000). 3000 belongs only to [0, 10000),
	// closed: late, at watermark 25000.
	spec := WindowSpec{Kind: Tumbling, Length: 10000, EmitWhen: OnEnd}
	a, _ := New(Spec{Func: "Count"})
	op, err := NewOperator(spec, []Named{{Name: "n", Aggregator: a}}, func(*Result) {})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, tm := range []int64{1000, 25000, 3000} {
		errs = append(errs, op.Add(&Event{Time: tm, Key: []value.Value{value.String("k")}, Inputs: []value.Value{value.Null()}}))
		op.Advance(tm)
	}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("on-time events: %v, %v", errs[0], errs[1])
	}
	var le *LateError
	if !errors.Is(errs[2], ErrLate) || !errors.As(errs[2], &le) || *le != (LateError{WindowStart: 0, WindowEnd: 10000, Watermark: 25000}) {
		t.Fatalf("third event: %#v, want &LateError{WindowStart: 0, WindowEnd: 10000, Watermark: 25000}", errs[2])
	}
	if st := op.Stats(); st.Late != 1 || st.PartlyLate != 0 {
		t.Fatalf("stats %+v, want Late 1, PartlyLate 0", st)
	}

	for _, tc := range []struct {
		name             string
		spec             WindowSpec
		steps            []step
		late, partlyLate int64 // Stats counts
	}{
		{
			// Hopping 30 s sliding by 10 s (P = the slide, 10 s). 12000 is in
			// [-10000, 20000), [0, 30000) and [10000, 40000). At W = 30000 the
			// first two have closed: partly late (no error). At W = 40000 all
			// three have: late, naming [-10000, 20000).
			"hopping", WindowSpec{Kind: Hopping, Length: 30000, Slide: 10000},
			[]step{ev(35000, "k", i64(1)), wm(30000), ev(12000, "k", i64(1)), wm(40000),
				{t: 12000, key: "k", in: i64(1), lateErr: &LateError{WindowStart: -10000, WindowEnd: 20000, Watermark: 40000}}},
			1, 1,
		},
		{
			// docs/semantics.md §2: hopping 5 min sliding by 1 min (P = 1 min),
			// W = 10:04. 10:02:30 is in the windows starting 09:58 ... 10:02;
			// those ending 10:03 and 10:04 have closed: partly late. 09:58:30
			// is in the windows starting 09:54 ... 09:58, all closed: late,
			// naming [09:54, 09:59). In ms from 00:00: 09:54 = 35640000,
			// 09:59 = 35940000, 10:04 = 36240000.
			"hopping, the worked example", WindowSpec{Kind: Hopping, Length: 300000, Slide: 60000},
			[]step{ev(36240000, "k", i64(1)), wm(36240000), ev(36150000, "k", i64(1)),
				{t: 35910000, key: "k", in: i64(1), lateErr: &LateError{WindowStart: 35640000, WindowEnd: 35940000, Watermark: 36240000}}},
			1, 1,
		},
		{
			// Sliding 60 s at the default precision 60 s: 90000 is in slice 1,
			// so its own window is slice 1 alone, [60000, 120000) (not
			// [30000, 90000]); it is late below W = 100000.
			"sliding", WindowSpec{Kind: Sliding, Length: 60000},
			[]step{ev(100000, "k", i64(1)), wm(100000),
				{t: 90000, key: "k", in: i64(1), lateErr: &LateError{WindowStart: 60000, WindowEnd: 120000, Watermark: 100000}}},
			1, 0,
		},
		{
			// Session, timeout 10 s. {0, 5000} is [0, 15000), closed at
			// W = 15000. 15000 is exactly 10 s after 5000: it would join
			// (touch) that closed session, so it is late and names it. So
			// is 5001. -20000 is 20 s before 0, outside the closed
			// session's reach [-10000, 15000], and would start a session
			// [-20000, -10000) that is already closed: late, naming it.
			"session", WindowSpec{Kind: Session, SessionTimeout: 10000, EmitWhen: OnEnd},
			[]step{ev(0, "k", i64(1)), ev(5000, "k", i64(1)), wm(15000),
				{t: 15000, key: "k", in: i64(1), lateErr: &LateError{WindowStart: 0, WindowEnd: 15000, Watermark: 15000}},
				{t: 5001, key: "k", in: i64(1), lateErr: &LateError{WindowStart: 0, WindowEnd: 15000, Watermark: 15000}},
				{t: -20000, key: "k", in: i64(1), lateErr: &LateError{WindowStart: -20000, WindowEnd: -10000, Watermark: 15000}}},
			3, 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := runStepsStats(t, tc.spec, Spec{Func: "Count"}, tc.steps)
			if st.Late != tc.late || st.PartlyLate != tc.partlyLate {
				t.Fatalf("stats %+v, want Late %d, PartlyLate %d", st, tc.late, tc.partlyLate)
			}
		})
	}
}

// The variances of sliding and hopping windows stay exact after a large input has left the
// window (a hostile round: once 1e17 had been in, every later VarPop of the key was wrong, {1,
// 2} giving 1.0 or 2.5e33). Events every minute, 1e17 then 1, 2, 1, 2, ...; windows of 2 min
// at a precision (slide) of 1 min hold an event and the one before it. Worked by hand: {1e17}
// is 0; {1e17, 1} has mean (1e17 + 1)/2 and VarPop ((1e17 − 1)/2)² = 2.5e33 in float64 (1e17 −
// 1 rounds to 1e17, and 5e16² = 2.5e33); {1, 2} has mean 1.5 and VarPop (0.25 + 0.25)/2 = 0.25,
// exactly.
func TestVarianceWindowsAfterALargeValue(t *testing.T) {
	var steps []step
	for i := range 21 {
		var v value.Value
		switch {
		case i == 0:
			v = value.Float(1e17)
		case i%2 == 1:
			v = value.Float(1)
		default:
			v = value.Float(2)
		}
		steps = append(steps, ev(int64(i)*60_000, "k", v))
	}
	steps = append(steps, flush())
	for _, spec := range []WindowSpec{{Kind: Sliding, Length: 120_000, Precision: 60_000}, {Kind: Hopping, Length: 120_000, Slide: 60_000}} {
		out := runSteps(t, spec, Spec{Func: "VarPop"}, steps)
		var vals []string
		for _, g := range out {
			vals = append(vals, g.val)
		}
		// Sliding: one result an event, 21. Hopping: the windows from [-60 s, 60 s) to [20 min,
		// 22 min), 22, the first and the last of one event.
		want, n := []string{"0.0", "2.5e+33"}, 21
		if spec.Kind == Hopping {
			n = 22
		}
		for len(want) < n-1 {
			want = append(want, "0.25")
		}
		if spec.Kind == Hopping {
			want = append(want, "0.0")
		} else {
			want = append(want, "0.25")
		}
		if fmt.Sprint(vals) != fmt.Sprint(want) {
			t.Errorf("%v: VarPop %v, want %v", spec.Kind, vals, want)
		}
	}
}
