package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// A replay stops by cancellation: once its context ends, no event enters another node
// after at most stopEvery more, and Replay returns the context's error, even in the middle
// of one record's fan-out of 1,000,000 events.
func TestReplayStopsWhenItsContextEnds(t *testing.T) {
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "item", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "1..1000000"}}]},
		` + sinkNode("out", "#item") + `],
		"edges": [{"from": "in", "to": "each"}, {"from": "each", "to": "out"}]}`
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entered := 0
	e, err := New(s, Options{Bounded: true, Observe: func(string, map[string]value.Value, int64) {
		if entered++; entered == 100 {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(ctx, e, strings.NewReader(`{"t": 1}`+"\n"+`{"t": 2}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Replay returned %v, want context.Canceled", err)
	}
	if entered < 100 || entered > 100+stopEvery {
		t.Errorf("%d events entered nodes; the context ended at the 100th", entered)
	}
	if c := e.Counts()["in"]; c.In != 1 {
		t.Errorf("the source had %d records, want 1 (the second line is not read)", c.In)
	}
}

// One input event makes at most MaxForEachEvents events through the for-each nodes, nested
// ones together: 1..400 inside 1..400 would be 400 + 160,000. Worked by hand: each outer
// element costs 401 events (itself and its 400), so 249 of them make 99,849; the 250th makes
// 99,850 and its inner loop sends 150 more, reaching 100,000; the 151st inner element is the
// error (once, at the inner node) and nothing more is sent. The sink gets 249*400 + 150 =
// 99,750 events for each record: the count starts again with the next input event.
func TestForEachEventsPerInputEventAreBounded(t *testing.T) {
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "outer", "type": "CustomNode", "nodeType": "for-each", "outputVar": "i", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "1..400"}}]},
		{"id": "inner", "type": "CustomNode", "nodeType": "for-each", "outputVar": "j", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "1..400"}}]},
		` + sinkNode("out", "#i * 1000 + #j") + `],
		"edges": [{"from": "in", "to": "outer"}, {"from": "outer", "to": "inner"}, {"from": "inner", "to": "out"}]}`
	out, e, _ := replay(t, graph, `{"t": 1}`+"\n"+`{"t": 2}`)
	if len(out) != 2*99_750 {
		t.Fatalf("%d results, want %d", len(out), 2*99_750)
	}
	// The last result of the first record is outer element 250, inner element 150.
	if want := `{"sink":"out","value":250150}`; out[99_749] != want || out[2*99_750-1] != want {
		t.Errorf("last results %s and %s, want %s", out[99_749], out[2*99_750-1], want)
	}
	errs, n := e.Errors()
	if n != 2 {
		t.Fatalf("%d errors (%v), want one per record", n, errs)
	}
	for i, x := range errs {
		if x.NodeID != "inner" || x.Field != "Elements" || x.Line != int64(i+1) || !strings.Contains(x.Message, "more than 100000 events") {
			t.Errorf("error %d: %+v", i, x)
		}
	}
	if c := e.Counts()["outer"]; c.Out != 2*250 {
		t.Errorf("outer sent %d, want %d", c.Out, 2*250)
	}
}

// The window state is looked at while one input event fans out through a for-each, not only
// between input events: a for-each of 1..5,000, each element a new group key of a tumbling
// window, against a budget of 64 KiB, stops within the first record's fan-out, Replay
// returns the *StateBudgetError, and the second record is not taken. (A for-each of 30,000
// into a List of 100 KB values ended the process in one test run.)
func TestStateBudgetWithinOneEventsForEach(t *testing.T) {
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "i", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "1..5000"}}]},
		{"id": "w", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#i"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "1m"}]},
		` + sinkNode("out", "#agg.n") + `],
		"edges": [{"from": "in", "to": "each"}, {"from": "each", "to": "w"}, {"from": "w", "to": "out"}]}`
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{Bounded: true, MaxStateBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Replay(context.Background(), e, strings.NewReader(`{"t": 1}`+"\n"+`{"t": 2}`))
	var over *StateBudgetError
	if !errors.As(err, &over) || over.Budget != 64<<10 || over.Bytes <= 64<<10 || over.Node != "w" {
		t.Fatalf("Replay returned %v, want a *StateBudgetError of node w past 65536 bytes", err)
	}
	counts := e.Counts()
	if n := counts["w"].In; n == 0 || n >= 5_000 {
		t.Errorf("the window took %d of the 5,000 elements; want the fan-out stopped within it", n)
	}
	if c := counts["in"]; c.In != 1 {
		t.Errorf("the source took %d records, want 1 (the second is not taken)", c.In)
	}
}

// An Interruptible engine is interrupted wherever it is once its stop is set, a window's
// emissions included: of 10,000 keys' windows closed by one event, the one after the 100th
// result (where the stop is set) is the last emitted; the call returns through Guard, and
// no call runs after it.
func TestInterruptibleStopsWindowEmissions(t *testing.T) {
	s := perElementWindow(t, "#input.t == 0 ? 1..10000 : []")
	var stop atomic.Bool
	results := 0
	e, err := New(s, Options{Output: func(string, value.Value, int64) {
		if results++; results == 100 {
			stop.Store(true)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.Interruptible(&stop)
	if !e.Guard(func() { _ = e.PushJSON("in", []byte(`{"t": 0}`), 1) }) || results != 0 {
		t.Fatalf("the first event: interrupted %v, %d results; want it through, none", e.Interrupted(), results)
	}
	if e.Guard(func() { _ = e.PushJSON("in", []byte(`{"t": 100000}`), 2) }) {
		t.Fatalf("the event that closes 10,000 windows was not interrupted (%d results)", results)
	}
	if results != 100 {
		t.Errorf("%d results; the stop was set at the 100th", results)
	}
	if n := e.Counts()["win"].Out; n != 101 {
		t.Errorf("the window emitted %d results, want 101: the stop was set at the 100th", n)
	}
	if !e.Interrupted() || e.Guard(func() { t.Error("a call ran after the interruption") }) {
		t.Error("the engine is usable after its interruption")
	}
}

// An input event is abandoned at the next node it enters once AbandonWhen's flag is
// negative: the first event's for-each of 100 elements into a window is abandoned when its
// 51st element enters the window (the flag set as the 50th did), its error at "win"; the
// second event, with the flag still negative, is abandoned at once, at "each"; but the
// windows its watermark closes (a step, not the event's alone) all reach the sink: the 50
// keys counted once each.
func TestAbandonWhen(t *testing.T) {
	s := perElementWindow(t, "1..#input.n")
	var event atomic.Int64
	entered := 0
	var results []string
	e, err := New(s, Options{
		Observe: func(node string, _ map[string]value.Value, _ int64) {
			if node == "win" {
				if entered++; entered == 50 {
					event.Store(-1)
				}
			}
		},
		Output: func(_ string, v value.Value, _ int64) { results = append(results, string(value.AppendJSON(nil, v))) },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.AbandonWhen(&event, "a test")
	event.Store(1)
	if err := e.PushJSON("in", []byte(`{"t": 0, "n": 100}`), 1); err != nil {
		t.Fatal(err)
	}
	if err := e.PushJSON("in", []byte(`{"t": 100000, "n": 5}`), 2); err != nil {
		t.Fatal(err)
	}
	errs, n := e.Errors()
	if n != 2 || errs[0].NodeID != "win" || errs[0].Line != 1 || errs[1].NodeID != "each" || errs[1].Line != 2 ||
		!strings.Contains(errs[0].Message, ErrEventAbandoned.Error()+" (a test)") {
		t.Errorf("errors %+v (%d), want the first event's at win, the second's at each", errs, n)
	}
	if entered != 50 || len(results) != 50 || results[0] != "1" {
		t.Errorf("%d entered the window, results %v; want 50, and 50 results of 1", entered, results)
	}
}

// perElementWindow is a graph that sends each element of elements (an expression of
// #input) into 1 s tumbling windows grouped by the element, counting, into a sink.
func perElementWindow(t *testing.T, elements string) *scenario.Scenario {
	t.Helper()
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "el", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "` + elements + `"}}]},
		{"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#el"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "1s"}]},
		` + sinkNode("out", "#agg.n") + `],
		"edges": [{"from": "in", "to": "each"}, {"from": "each", "to": "win"}, {"from": "win", "to": "out"}]}`
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Work inside one node stops too: a VariableBuilder of 1,000 fields of about 28 ms each (28
// s for one event) stops at the field after its run's end (a context of 300 ms; 5 s allowed:
// a field takes about half a second under the race detector), not at the next node.
func TestStopsBetweenFieldsOfOneNode(t *testing.T) {
	var fields strings.Builder
	for i := range 1000 {
		if i > 0 {
			fields.WriteString(",")
		}
		fmt.Fprintf(&fields, `{"name": "f%d", "expression": {"language": "expr", "expression": "count(1..400000, # %% 7 == %d)"}}`, i, i%7)
	}
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "wide", "type": "VariableBuilder", "varName": "r", "fields": [` + fields.String() + `]},
		` + sinkNode("out", "#r.f0") + `],
		"edges": [{"from": "in", "to": "wide"}, {"from": "wide", "to": "out"}]}`
	stopsWithin5s(t, graph, `{"t": 1}`)
}

// stopsWithin5s replays record through graph with a context of 300 ms and fails unless
// Replay returns the context's deadline within 5 s.
func stopsWithin5s(t *testing.T, graph, record string) {
	t.Helper()
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Replay(ctx, e, strings.NewReader(record)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Replay returned %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the replay stopped after %v; its context ended at 300 ms", took)
	}
}

// An aggregate's expressions stop the same way: 1,000 aggregations whose aggregateBy takes
// about 28 ms each, or 500 groupBy expressions as slow, stop within one expression of their
// run's end (a context of 300 ms; 5 s allowed), not when the node is done (28 s, 14 s).
func TestStopsBetweenExpressionsOfAnAggregate(t *testing.T) {
	slow := func(i int) string {
		return fmt.Sprintf(`{"language": "expr", "expression": "count(1..400000, # %% 7 == %d)"}`, i%7)
	}
	var aggs, keys strings.Builder
	for i := range 1000 {
		if i > 0 {
			aggs.WriteString(",")
		}
		fmt.Fprintf(&aggs, `{"name": "a%d", "aggregator": "Sum", "aggregateBy": %s}`, i, slow(i))
	}
	for i := range 500 {
		if i > 0 {
			keys.WriteString(",")
		}
		keys.WriteString(slow(i))
	}
	for _, tc := range []struct{ name, groupBy, aggregations string }{
		{"aggregateBy", `{"language": "expr", "expression": "#input.k"}`, aggs.String()},
		{"groupBy", keys.String(), `{"name": "n", "aggregator": "Count"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
				{"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
					{"name": "groupBy", "value": [` + tc.groupBy + `]},
					{"name": "aggregations", "value": [` + tc.aggregations + `]},
					{"name": "windowLength", "value": "10s"}]},
				` + sinkNode("out", "#agg") + `],
				"edges": [{"from": "in", "to": "win"}, {"from": "win", "to": "out"}]}`
			stopsWithin5s(t, graph, `{"t": 1, "k": "a"}`)
		})
	}
}

// A for-each whose Elements gives a string, a number, a boolean or a record is a per-event
// error at the node's Elements, naming what it gave; null (a field the event lacks) sends no
// event and is no error; a list sends its elements. Worked by hand over six records: the
// sink gets 1 and 2 from the list, four errors at lines 2 to 5, none for the missing field.
func TestForEachOfNotAList(t *testing.T) {
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "i", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "#input.items"}}]},
		` + sinkNode("out", "#i") + `],
		"edges": [{"from": "in", "to": "each"}, {"from": "each", "to": "out"}]}`
	records := `{"t": 1, "items": [1, 2]}
{"t": 2, "items": "abc"}
{"t": 3, "items": 42}
{"t": 4, "items": {"x": 1}}
{"t": 5, "items": true}
{"t": 6}`
	out, e, _ := replay(t, graph, records)
	if want := []string{`{"sink":"out","value":1}`, `{"sink":"out","value":2}`}; !slices.Equal(out, want) {
		t.Fatalf("results %v, want %v", out, want)
	}
	errs, n := e.Errors()
	want := []string{"a string", "an integer", "a record", "a boolean"}
	if n != int64(len(want)) {
		t.Fatalf("%d errors (%v), want %d", n, errs, len(want))
	}
	for i, x := range errs {
		if x.NodeID != "each" || x.Field != "Elements" || x.Line != int64(i+2) || !strings.Contains(x.Message, "Elements gave "+want[i]+", not a list") {
			t.Errorf("error %d: %+v", i, x)
		}
	}
}
