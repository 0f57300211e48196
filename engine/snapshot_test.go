package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// runLines pushes lines through a new engine for the scenario, restoring
// snap first when given, and flushes when flush is set. It returns the
// output and the engine.
func runLines(t *testing.T, s *scenario.Scenario, lines [][]byte, first int64, snap []byte, flush bool) (string, *Engine) {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	var n int64
	e, err := New(s, Options{ScenarioName: "x", Output: WriteOutput(w, &n)})
	if err != nil {
		t.Fatal(err)
	}
	if snap != nil {
		if err := e.Restore(snap); err != nil {
			t.Fatal(err)
		}
	}
	src := e.Sources()[0]
	for i, l := range lines {
		if err := e.PushJSON(src, l, first+int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if flush {
		e.Flush()
	}
	w.Flush()
	return buf.String(), e
}

// A restored engine continues exactly: the output before the snapshot plus
// the output of the restored engine on the rest equals the uninterrupted
// run, for every example and several cut points.
func TestEngineSnapshotContinuesExactly(t *testing.T) {
	for _, c := range []struct{ scenario, data string }{
		{"../examples/flights-per-origin-hourly.json", "../testdata/flights-20k.ndjson"},
		{"../examples/flights-rolling-hour.json", "../testdata/flights-20k.ndjson"},
		{"../examples/accesslog-sessions.json", "../testdata/access-log-10k.ndjson"},
		{"../examples/accesslog-errors.json", "../testdata/access-log-10k.ndjson"},
	} {
		text, err := os.ReadFile(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Decode(text)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(c.data)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		if len(lines) > 6000 {
			lines = lines[:6000]
		}
		whole, _ := runLines(t, s, lines, 1, nil, true)
		for _, cut := range []int{1, 777, 3001, len(lines) - 1} {
			before, e := runLines(t, s, lines[:cut], 1, nil, false)
			snap := e.AppendSnapshot(nil)
			after, e2 := runLines(t, s, lines[cut:], int64(cut+1), snap, true)
			if before+after != whole {
				t.Fatalf("%s cut at line %d: restored output differs (%d + %d bytes vs %d)", c.scenario, cut, len(before), len(after), len(whole))
			}
			if _, whole2 := runLines(t, s, lines, 1, nil, true); whole2.Counts()["out"] != e2.Counts()["out"] {
				t.Fatalf("%s cut %d: counts %+v vs %+v", c.scenario, cut, whole2.Counts()["out"], e2.Counts()["out"])
			}
		}
	}
}

func TestEngineRestoreRefusesOtherScenarios(t *testing.T) {
	a, _ := os.ReadFile("../examples/flights-per-origin-hourly.json")
	b, _ := os.ReadFile("../examples/accesslog-errors.json")
	sa, _ := scenario.Decode(a)
	sb, _ := scenario.Decode(b)
	ea, _ := New(sa, Options{})
	eb, _ := New(sb, Options{})
	if err := eb.Restore(ea.AppendSnapshot(nil)); !errors.Is(err, slices.ErrCorruptSnapshot) {
		t.Fatalf("err = %v", err)
	}
	if err := ea.Restore([]byte{1, 2, 3}); !errors.Is(err, slices.ErrCorruptSnapshot) {
		t.Fatalf("garbage: err = %v", err)
	}
}

// idleCountScenario counts events in 10 s tumbling windows of #input.t, from a live source
// with no out-of-orderness and an idle timeout of 2 s.
func idleCountScenario(t testing.TB) *scenario.Scenario {
	t.Helper()
	return liveCountScenario(t, "10s", `, {"name": "idleTimeout", "value": "2s"}`)
}

// liveCountScenario counts events in tumbling windows of windowLength (OnEnd) of #input.t,
// from an HTTP (live) source with no out-of-orderness and the extra source parameters given
// (each starting with a comma), into sink "out" as {start, n}.
func liveCountScenario(t testing.TB, windowLength, sourceParams string) *scenario.Scenario {
	t.Helper()
	sc := scenarioJSON([]string{
		`{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
			{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
			{"name": "maxOutOfOrderness", "value": "0s"}` + sourceParams + `]}}`,
		`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": []},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "` + windowLength + `"}, {"name": "emitWhen", "value": "OnEnd"}]}`,
		sinkNode("out", "{start: #window.start, n: #agg.n}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	s, err := scenario.Decode([]byte(sc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An idle live source lets its watermark follow the wall clock less the idle
// timeout, so a quiet key's tumbling window closes about one idle timeout
// after the window's end.
func TestIdleSourceClosesWindows(t *testing.T) {
	s := idleCountScenario(t)
	clock := time.UnixMilli(1_000_000)
	var got []string
	e, err := New(s, Options{Now: func() time.Time { return clock }, Output: func(_ string, v valueT, _ int64) {
		got = append(got, jsonOf(v))
	}})
	if err != nil {
		t.Fatal(err)
	}
	// One event at t=1,003,000 in window [1,000,000, 1,010,000), arriving at
	// wall time 1,003,000.
	clock = time.UnixMilli(1_003_000)
	if err := e.PushJSON("in", []byte(`{"t": 1003000}`), 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now  int64
		want int
	}{
		{1_004_999, 0}, // not idle yet (2 s since the arrival at 1,003,000 is 1,005,000)
		{1_011_999, 0}, // idle watermark 1,009,999: the window [.., 1,010,000) is still open
		{1_012_000, 1}, // idle watermark 1,010,000 reaches the window's end: emitted
		{1_030_000, 1}, // nothing more
	} {
		clock = time.UnixMilli(tc.now)
		e.Tick(clock)
		if len(got) != tc.want {
			t.Fatalf("at wall time %d: %d results %v, want %d", tc.now, len(got), got, tc.want)
		}
	}
	if got[0] != `{"start":1000000,"n":1}` {
		t.Fatalf("result %s", got[0])
	}
}

// A restored source is silent since the restore, not since the epoch: an event that fails
// before it gets a time (malformed) does not let the next Tick move the watermark to the
// wall clock less the idle timeout, which would close every window at once.
func TestRestoredSourceIsIdleOnlyAfterATimeout(t *testing.T) {
	s := idleCountScenario(t)
	clock := time.UnixMilli(1_003_000)
	var got []string
	opts := Options{Now: func() time.Time { return clock }, Output: func(_ string, v valueT, _ int64) {
		got = append(got, jsonOf(v))
	}}
	e, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.PushJSON("in", []byte(`{"t": 1003000}`), 1); err != nil {
		t.Fatal(err)
	}
	snap := e.AppendSnapshot(nil)
	// Restored a day later; the first event after it is malformed.
	clock = time.UnixMilli(1_003_000 + 86_400_000)
	e2, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	_ = e2.PushJSON("in", []byte(`{"t": `), 2)
	// The idle watermark is the source's largest event time, 1,003,000, plus the silence
	// since the restore less the 2 s idle timeout: 1,003,000 + s − 2,000, which reaches the
	// window's end 1,010,000 at s = 9 s.
	e2.Tick(clock.Add(1999 * time.Millisecond))
	if len(got) != 0 {
		t.Fatalf("1.999 s after the restore: %v, want no window closed", got)
	}
	e2.Tick(clock.Add(8999 * time.Millisecond)) // idle watermark 1,009,999
	if len(got) != 0 {
		t.Fatalf("8.999 s after the restore: %v, want no window closed", got)
	}
	e2.Tick(clock.Add(9 * time.Second)) // idle watermark 1,010,000
	if len(got) != 1 || got[0] != `{"start":1000000,"n":1}` {
		t.Fatalf("9 s after the restore: %v, want the window [1,000,000, 1,010,000) with 1 event", got)
	}
}

type valueT = value.Value

func jsonOf(v value.Value) string { return string(value.AppendJSON(nil, v)) }

// Decoding only the fields expressions read gives the same results as
// decoding whole records (forced here by an observer, which sees records
// whole).
func TestPartialDecodingChangesNothing(t *testing.T) {
	for _, c := range []struct{ scenario, data string }{
		{"../examples/flights-per-origin-hourly.json", "../testdata/flights-20k.ndjson"},
		{"../examples/accesslog-sessions.json", "../testdata/access-log-10k.ndjson"},
		{"../examples/accesslog-errors.json", "../testdata/access-log-10k.ndjson"},
	} {
		text, _ := os.ReadFile(c.scenario)
		s, err := scenario.Decode(text)
		if err != nil {
			t.Fatal(err)
		}
		run := func(observe bool) string {
			var buf bytes.Buffer
			w := bufio.NewWriter(&buf)
			var n int64
			opts := Options{Output: WriteOutput(w, &n)}
			if observe {
				opts.Observe = func(string, map[string]value.Value, int64) {}
			}
			e, err := New(s, opts)
			if err != nil {
				t.Fatal(err)
			}
			if observe == (e.sources[e.Sources()[0]].wantFields != nil) {
				t.Fatalf("observe=%v but wantFields=%v", observe, e.sources[e.Sources()[0]].wantFields)
			}
			f, err := os.Open(c.data)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := Replay(context.Background(), e, f); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			return buf.String()
		}
		if partial, whole := run(false), run(true); partial != whole {
			t.Fatalf("%s: partial decoding changed the output (%d vs %d bytes)", c.scenario, len(partial), len(whole))
		}
	}
}

// The per-event errors kept survive a snapshot, and a snapshot written before they were
// part of it (it ends at the flushed flag) restores with none.
func TestSnapshotKeepsFirstErrors(t *testing.T) {
	text, err := os.ReadFile("../examples/flights-per-origin-hourly.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	// Line 2 is not JSON, line 3 not an object: two errors at the source; line 4 is not JSON.
	lines := [][]byte{[]byte(`{"x":`), []byte(`{"x":`), []byte(`[1]`)}
	_, e := runLines(t, s, lines[1:], 2, nil, false)
	errs, n := e.Errors()
	if n != 2 || len(errs) != 2 || errs[0].Line != 2 || errs[1].Line != 3 {
		t.Fatalf("before the snapshot: %d errors %+v, want lines 2 and 3", n, errs)
	}
	snap := e.AppendSnapshot(nil)
	_, e2 := runLines(t, s, lines[:1], 4, snap, false)
	got, n2 := e2.Errors()
	if n2 != 3 || len(got) != 3 || got[0] != errs[0] || got[1] != errs[1] || got[2].Line != 4 {
		t.Fatalf("after restoring: %d errors %+v, want the two before and line 4", n2, got)
	}
	// A partition (a Kafka source's) goes through a snapshot too.
	e2.SetInputPartition(2)
	_ = e2.PushJSON(e2.Sources()[0], []byte(`[`), 5)
	_, e3 := runLines(t, s, nil, 6, e2.AppendSnapshot(nil), false)
	if got, _ := e3.Errors(); len(got) != 4 || got[3].Partition == nil || *got[3].Partition != 2 || got[3].Line != 5 || got[2].Partition != nil {
		t.Fatalf("errors after a second snapshot: %+v, want the 4th at partition 2, line 5", got)
	}
	// The same snapshot without the errors section (count 0 and after): an older snapshot.
	// (The snapshot ends with the errors section and an empty partitions section, one byte.)
	if snap[len(snap)-1] != 0 {
		t.Fatalf("the snapshot does not end with an empty partitions section: %x", snap[len(snap)-8:])
	}
	old := snap[:len(snap)-len(sectionOf(errs))-1]
	var fresh *Engine
	_, fresh = runLines(t, s, nil, 1, old, false)
	if kept, total := fresh.Errors(); len(kept) != 0 || total != 2 {
		t.Fatalf("an older snapshot: %d kept, %d counted; want 0 kept, 2 counted", len(kept), total)
	}
}

// sectionOf is the errors section that ends a snapshot, built here from the format rather
// than taken from the engine.
func sectionOf(errs []EventError) []byte {
	b := binary.AppendUvarint(nil, uint64(len(errs)))
	for _, x := range errs {
		b = slices.AppendBytes(b, []byte(x.NodeID))
		b = slices.AppendBytes(b, []byte(x.Field))
		b = binary.AppendVarint(b, x.Line)
		b = binary.AppendVarint(b, -1) // no partition
		b = slices.AppendBytes(b, []byte(x.Message))
	}
	return b
}

// Restore never panics on bytes that are not a snapshot, and what it accepts is a state the
// engine can snapshot again: restoring that gives the same bytes once more.
func FuzzEngineRestore(f *testing.F) {
	s := idleCountScenario(f)
	e, err := New(s, Options{Now: func() time.Time { return time.UnixMilli(1_000_000) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(e.AppendSnapshot(nil))
	_ = e.PushJSON("in", []byte(`{"t": 1003000}`), 1)
	e.SetInputPartition(3)
	_ = e.PushJSON("in", []byte(`{"t": `), 2)
	f.Add(e.AppendSnapshot(nil))
	e.SetPartitionsPending("in", []int32{3, 4})
	_ = e.PushJSON("in", []byte(`{"t": 1004000}`), 3)
	f.Add(e.AppendSnapshot(nil)) // with a partitions section
	f.Add([]byte{1, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		e1, err := New(s, Options{Now: func() time.Time { return time.UnixMilli(2_000_000) }})
		if err != nil {
			t.Fatal(err)
		}
		if e1.Restore(b) != nil {
			return
		}
		again := e1.AppendSnapshot(nil)
		e2, _ := New(s, Options{Now: func() time.Time { return time.UnixMilli(2_000_000) }})
		if err := e2.Restore(again); err != nil {
			t.Fatalf("a snapshot of a restored engine does not restore: %v", err)
		}
		if third := e2.AppendSnapshot(nil); !bytes.Equal(third, again) {
			t.Fatalf("snapshot, restore, snapshot changed the bytes:\n%x\n%x", again, third)
		}
	})
}

// A live source whose events come with partitions has the watermark of its slowest active
// partition (per-partition watermarks with idleness). Worked by hand: 10 s tumbling
// counts, no out-of-orderness, idle timeout 2 s; event times near 1,000,000 ms, wall clock
// near 9,000,000 ms. The same steps through a snapshot taken halfway give the same output.
func TestPartitionWatermarks(t *testing.T) {
	s := idleCountScenario(t)
	const tick, pending = -1, -2 // step kinds besides pushing to a partition
	type step struct {
		wall    int64
		kind    int32   // a partition to push t to, tick (Tick at wall) or pending (waiting)
		t       int64   // the event time pushed
		waiting []int32 // for pending: the partitions with records waiting
		want    []string
	}
	w1 := `{"start":1000000,"n":3}`
	w2 := `{"start":1010000,"n":2}`
	steps := []step{
		{wall: 9_000_000, kind: pending, waiting: []int32{0, 1}},
		// Partition 0 runs ahead while partition 1 has records waiting and none read yet: the
		// watermark stays put. (One watermark for the source would close [1,000,000,
		// 1,010,000) at 1,012,000 and make partition 1's events late.)
		{wall: 9_000_000, kind: 0, t: 1_003_000},
		{wall: 9_000_000, kind: 0, t: 1_012_000},
		{wall: 9_000_000, kind: pending, waiting: []int32{1}},
		{wall: 9_000_100, kind: 1, t: 1_005_000},
		// Cut here for the snapshot. Floor: partition 1's 1,008,000.
		{wall: 9_000_200, kind: 1, t: 1_008_000},
		// Nothing waits, but both partitions had events within 2 s: still 1,008,000.
		{wall: 9_000_300, kind: pending},
		// Partition 0's 1,011,000 is before its 1,012,000 but its window is open: counted.
		{wall: 9_000_400, kind: 0, t: 1_011_000},
		{wall: 9_002_100, kind: tick}, // partition 1 silent 1.9 s: it still holds
		// Partition 1 silent 2 s: partition 0's 1,012,000 closes the first window (3 events).
		{wall: 9_002_200, kind: tick, want: []string{w1}},
		// Partition 0 silent 2 s too, and so the source: idle, its watermark moves on from the
		// largest event time of all, 1,012,000 + (wall − 9,000,400) − 2,000, and reaches the
		// second window's end, 1,020,000, at wall 9,010,400.
		{wall: 9_002_400, kind: tick, want: []string{w1}},
		{wall: 9_010_399, kind: tick, want: []string{w1}},
		{wall: 9_010_400, kind: tick, want: []string{w1, w2}},
	}
	const cut = 5
	run := func(from, upTo int, snap []byte) (*Engine, []string) {
		var wall int64
		var got []string
		e, err := New(s, Options{Now: func() time.Time { return time.UnixMilli(wall) }, Output: func(_ string, v valueT, _ int64) {
			got = append(got, jsonOf(v))
		}})
		if err != nil {
			t.Fatal(err)
		}
		if snap != nil {
			wall = steps[from-1].wall
			if err := e.Restore(snap); err != nil {
				t.Fatal(err)
			}
			e.SetPartitionsPending("in", []int32{1}) // what was waiting at the cut
		}
		for i := from; i < upTo; i++ {
			st := steps[i]
			wall = st.wall
			switch st.kind {
			case tick:
				e.Tick(time.UnixMilli(wall))
			case pending:
				e.SetPartitionsPending("in", st.waiting)
			default:
				e.SetInputPartition(st.kind)
				if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, st.t), int64(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			if snap == nil && !equalStrings(got, st.want) {
				t.Fatalf("step %d: output %v, want %v", i, got, st.want)
			}
		}
		return e, got
	}
	_, whole := run(0, len(steps), nil)
	e, before := run(0, cut, nil)
	_, after := run(cut, len(steps), e.AppendSnapshot(nil))
	if got := append(before, after...); !equalStrings(got, whole) {
		t.Fatalf("through a snapshot: %v, want %v", got, whole)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Negative partitions mean "no partition": SetPartitionsPending ignores them, so the
// snapshot restores (from the fourth adversarial review).
func TestNegativePartitionsIgnored(t *testing.T) {
	s := idleCountScenario(t)
	opts := Options{Now: func() time.Time { return time.UnixMilli(9_000_000) }}
	e, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.SetPartitionsPending("in", []int32{-1, 0})
	e.SetInputPartition(-5)
	_ = e.PushJSON("in", []byte(`{"t": 1000000}`), 1)
	e.SetInputPartition(0)
	_ = e.PushJSON("in", []byte(`{"t": 1001000}`), 2)
	e2, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Restore(e.AppendSnapshot(nil)); err != nil {
		t.Fatalf("restoring: %v", err)
	}
}

// A snapshot is written where it goes: into a buffer with room for it, the engine's snapshot
// allocates next to nothing, where each aggregate's window snapshot was built in a buffer of
// its own (grown from nothing: several times its size allocated) and then copied in.
func TestSnapshotWrittenInPlace(t *testing.T) {
	s, err := scenario.Decode([]byte(`{"nodes": [
	 {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
	   {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.time"}}]}},
	 {"id": "per key", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
	   {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
	   {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
	     {"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.amount"}}]},
	   {"name": "windowLength", "value": "1h"}]},
	 {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
	   {"name": "value", "expression": {"language": "expr", "expression": "#agg.n"}}]}}],
	 "edges": [{"from": "in", "to": "per key"}, {"from": "per key", "to": "out"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{ScenarioName: "x", Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{"time", "key", "amount"}
	for i := range 20_000 {
		r := value.NewRecord(fields, []value.Value{value.Int(int64(i)), value.String(fmt.Sprintf("key %d", i)), value.Float(1.5)})
		if err := e.PushValue("in", r, math.MinInt64, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	want := e.AppendSnapshot(nil)
	if len(want) < 200_000 {
		t.Fatalf("snapshot of %d bytes: too small to tell", len(want))
	}
	buf := make([]byte, 3, 3+len(want))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := e.AppendSnapshot(buf)
	runtime.ReadMemStats(&after)
	if !bytes.Equal(got[3:], want) || &got[0] != &buf[0] {
		t.Fatalf("snapshot into a buffer with room: %d bytes (in place: %v), want %d", len(got)-3, &got[0] == &buf[0], len(want))
	}
	// The window's snapshot alone, built apart, would allocate at least its own size.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(want))/10 {
		t.Errorf("a snapshot of %d bytes allocated %d bytes", len(want), alloc)
	}
}

// A partition that holds nothing back (listed with nothing waiting and no event yet, or
// silent for the idle timeout) lets the watermark go only as far as the events fetched before
// the last listing that answered: its next records may have been produced at any time since
// (MarkPartitions, ConfirmPartitions). Worked by hand: 10 s tumbling counts, no
// out-of-orderness, idle timeout 2 s; partitions 0 and 1 listed, nothing waiting, partition 1
// never has an event. Partition 0's 1,003,000 and 1,012,000 move nothing until a listing
// marked after them answers; then W = 1,012,000 closes [1,000,000, 1,010,000) with 1
// event. Partition 0's 1,025,000, fetched after that listing, moves nothing; a listing
// marked after it, answered, closes [1,010,000, 1,020,000) with 1 event. Without the
// listings (the same two partitions known, nothing waiting), 1,012,000 alone closes the
// first window.
func TestUnheldPartitionBoundedByListing(t *testing.T) {
	wall := int64(9_000_000)
	var got []string
	e, err := New(idleCountScenario(t), Options{Now: func() time.Time { return time.UnixMilli(wall) }, Output: func(_ string, v valueT, _ int64) {
		got = append(got, jsonOf(v))
	}})
	if err != nil {
		t.Fatal(err)
	}
	push := func(ts int64) {
		t.Helper()
		e.SetInputPartition(0)
		if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, ts), 1); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, want ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: results %v, want %v", when, got, want)
		}
	}
	e.MarkPartitions("in", []int32{0, 1})
	e.ConfirmPartitions("in")
	e.SetPartitionsPending("in", nil)
	push(1_003_000)
	push(1_012_000)
	check("before a listing after the events")
	e.MarkPartitions("in", []int32{0, 1})
	wall += 100
	push(1_025_000) // fetched after the listing was sent
	check("listing sent, not answered")
	e.ConfirmPartitions("in")
	check("listing answered", `{"start":1000000,"n":1}`)
	e.MarkPartitions("in", []int32{0, 1})
	e.ConfirmPartitions("in")
	check("a listing after 1,025,000", `{"start":1000000,"n":1}`, `{"start":1010000,"n":1}`)

	// Without listings: 1,012,000 closes the first window at once.
	got = nil
	e2, err := New(idleCountScenario(t), Options{Now: func() time.Time { return time.UnixMilli(wall) }, Output: func(_ string, v valueT, _ int64) {
		got = append(got, jsonOf(v))
	}})
	if err != nil {
		t.Fatal(err)
	}
	e2.SetPartitionsPending("in", []int32{0, 1}) // both known, as MarkPartitions made them
	e2.SetPartitionsPending("in", nil)
	for _, ts := range []int64{1_003_000, 1_012_000} {
		e2.SetInputPartition(0)
		_ = e2.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, ts), 1)
	}
	check("without listings", `{"start":1000000,"n":1}`)
}
