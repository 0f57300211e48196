package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
)

// budgetStep is an engine's state recorded in a SharedStateBudget, and the total and verdict
// worked out by hand.
type budgetStep struct {
	e     *Engine
	bytes int64
	total int64
	over  bool
}

// recordSteps records steps in order in b, checking each total and verdict.
func recordSteps(t *testing.T, part string, b *SharedStateBudget, steps []budgetStep) {
	t.Helper()
	for i, s := range steps {
		if total, over := b.Record(s.e, s.bytes); total != s.total || over != s.over {
			t.Errorf("%s, step %d: total %d, over %v; want %d, %v", part, i, total, over, s.total, s.over)
		}
	}
}

// A shared budget fails the engine whose state grows past its share (the budget over the
// engines) while the total is past it, and only that one; an engine that grows within its
// share while the total is past it goes on, and the one holding the most is evicted instead
// (Evict called once; its next look is over; its state no longer counts); a released engine
// no longer counts. Totals worked by hand.
func TestSharedStateBudget(t *testing.T) {
	var evicted []*Engine
	b := &SharedStateBudget{Max: 100, Evict: func(e *Engine) { evicted = append(evicted, e) }}
	e1, e2 := &Engine{}, &Engine{}
	recordSteps(t, "first part", b, []budgetStep{
		{e1, 60, 60, false},
		{e2, 30, 90, false},
		{e2, 50, 110, false}, // e2 grew past 100 within its share of 50: e1 (60) is evicted
		{e2, 50, 110, false}, // again: e1 is not evicted twice
		{e1, 60, 110, true},  // e1, evicted, is over at its next look
		{e2, 55, 115, false}, // e1's 60 no longer count: 55 of 100
	})
	if len(evicted) != 1 || evicted[0] != e1 || !b.Evicted(e1) || b.Evicted(e2) {
		t.Errorf("evicted %v (e1 %p, e2 %p); want e1 once", evicted, e1, e2)
	}
	b.Release(e1)
	if got := b.Total(); got != 55 || b.Evicted(e1) {
		t.Errorf("after releasing e1: %d, evicted %v; want 55, false", got, b.Evicted(e1))
	}
	b.Release(e1) // twice: nothing more
	if got := b.Total(); got != 55 {
		t.Errorf("after releasing e1 again: %d, want 55", got)
	}
	// Growing past its share: over, and nobody evicted.
	e3, e4 := &Engine{}, &Engine{}
	recordSteps(t, "second part", b, []budgetStep{
		{e3, 40, 95, false},
		{e4, 5, 100, false},
		{e4, 10, 105, false}, // within its share (100/3 = 33): e2 (55) evicted
	})
	if len(evicted) != 2 || evicted[1] != e2 {
		t.Errorf("evicted %v; want e1, then e2 (e2 %p)", evicted, e2)
	}
	b.Release(e2)
	c := &SharedStateBudget{Max: 100}
	recordSteps(t, "third part", c, []budgetStep{
		{e3, 40, 40, false},
		{e4, 55, 95, false},
		{e4, 61, 101, true},  // past 100, and past its share of 50
		{e3, 40, 101, false}, // e3 did not grow, and is not evicted
		{e3, 39, 100, false},
	})
	if c.Evicted(e3) || c.Evicted(e4) {
		t.Error("an engine evicted when the one growing was past its share")
	}
	if total, over := (&SharedStateBudget{}).Record(e1, 1<<40); total != 1<<40 || over {
		t.Errorf("no budget (Max 0): %d, %v", total, over)
	}

	// Shares are max-min fair: ten engines holding nothing leave their parts to the others.
	// One parked on 90 of 100, a victim from 5 to 15: 105 > 100, the shares are 85 (the
	// victim's 15, and 85 left) and the victim's 15 within it, so the parked one is evicted
	// (with shares of a twelfth, 8, the victim was over).
	d := &SharedStateBudget{Max: 100}
	parked, victim := &Engine{}, &Engine{}
	d.Record(parked, 90)
	for range 10 {
		d.Record(&Engine{}, 0)
	}
	d.Record(victim, 5)
	if total, over := d.Record(victim, 15); total != 105 || over || !d.Evicted(parked) {
		t.Errorf("the victim growing to 15: %d, over %v, parked evicted %v; want 105, false, true", total, over, d.Evicted(parked))
	}
	// Reservations evict nobody: an engine of 6 reserving 24 more beside one of 78 (of 100),
	// within its share of 50, is refused, and the other stays (it was evicted).
	r := &SharedStateBudget{Max: 100}
	big, small := &Engine{}, &Engine{}
	r.Record(big, 78)
	r.Record(small, 6)
	if total, over := r.Admit(small, 30); total != 108 || !over || r.Evicted(big) {
		t.Errorf("a reservation of 24: %d, over %v, big evicted %v; want 108, true, false", total, over, r.Evicted(big))
	}
	if total, over := r.Admit(small, 11); total != 89 || over {
		t.Errorf("a reservation of 5: %d, over %v; want 89, false", total, over)
	}
}

// A count window of 10,000 events sliding by 1 keeps 10,000 count-slices of each aggregator
// for a key from its first event (megabytes an event); the state budget still stops it within
// one growth of its columns past the budget, where looking every 16 events, then every 4,096th of the
// state's bytes, let it grow to gigabytes first (round 12 F2: a test run of 1,000 records
// reached 5.7 GB against its 64 MiB). Each record here is a new key; there are 300.
func TestStateBudgetFastGrowth(t *testing.T) {
	aggs := []string{}
	for i, f := range []string{"Sum", "Average", "Min", "Max", "Count", "Sum", "Average", "Min"} {
		aggs = append(aggs, fmt.Sprintf(`{"name": "a%d", "aggregator": %q, "aggregateBy": {"language": "expr", "expression": "#input.t"}}`, i, f))
	}
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		` + countWindowNode("x", aggs) + `, ` + collectSink("out", "#agg.a0") + `],
		"edges": [{"from": "in", "to": "x"}, {"from": "x", "to": "out"}]}`
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	const budget = 64 << 20
	e, err := New(s, Options{Bounded: true, MaxStateBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for i := range 300 {
		fmt.Fprintf(&in, `{"t": %d, "k": "k%d"}`+"\n", i, i)
	}
	// What one key adds: the state after one event, measured on an engine of its own.
	one, err := New(s, Options{Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := one.PushJSON("in", []byte(`{"t": 0, "k": "k0"}`), 1); err != nil {
		t.Fatal(err)
	}
	perKey, _ := one.StateBytes()
	if perKey < 1<<20 {
		t.Fatalf("one key of the count window holds %d bytes; the test wants megabytes", perKey)
	}
	sum, err := Replay(context.Background(), e, strings.NewReader(in.String()))
	var over *StateBudgetError
	if !errors.As(err, &over) || over.Node != "x" {
		t.Fatalf("Replay of 300 keys of %d bytes each (%d in all) against %d: %v; want a *StateBudgetError of x", perKey, 300*perKey, budget, err)
	}
	// It says the line it stopped at, the last read, and the summary what was done (new-user
	// round 136: no line, and elapsed 0 s).
	if want := fmt.Sprintf("at input line %d: ", sum.Events); sum.Events < 1 || sum.Events >= 300 || !strings.HasPrefix(err.Error(), want) ||
		sum.Elapsed <= 0 || sum.Counts["in"].In != sum.Events {
		t.Errorf("Replay stopped with %q, after %d lines, %v, %d events in; want %q and its counts", err, sum.Events, sum.Elapsed, sum.Counts["in"].In, want)
	}
	// Past it by at most one growth of the columns: 262,144 cells (maxGrowCells, exactly:
	// before 817fbae, slices.Grow rounded it up to half as many again), 27 keys of 10,000
	// count-slices, and the key that made it (without looks after new keys: 262 MB after 230
	// records here).
	if over.Bytes > budget+28*perKey {
		t.Errorf("stopped at %d bytes, more than 28 keys (%d bytes each) past the budget %d", over.Bytes, perKey, budget)
	}
	t.Logf("one key: %d bytes; stopped at %d of %d after %d records", perKey, over.Bytes, budget, e.Counts()["in"].In)
}

// The strings window state keeps are its own, not the decoded event's block (value.Decoder
// hands out an event's strings in one block): 200 events each with a 1 MB field, grouped by a
// short string and keeping its Last, Min and List, leave a heap of about the state, where
// each kept key held its event's megabyte (round 13 A: 4 GB for 0.5 MB of state).
func TestStateDoesNotHoldEvents(t *testing.T) {
	graph := `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "#input.pad != \"\""}},
		{"id": "x", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [
				{"name": "last", "aggregator": "Last", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
				{"name": "min", "aggregator": "Min", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
				{"name": "all", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "#input.k"}}]},
			{"name": "windowLength", "value": "1d"}]}, ` + collectSink("out", "#agg.last") + `],
		"edges": [{"from": "in", "to": "f"}, {"from": "f", "to": "x", "edgeType": {"type": "FilterTrue"}}, {"from": "x", "to": "out"}]}`
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 1<<20)
	for i := range 200 {
		if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d, "k": "k%d", "pad": %q}`, i, i, pad), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs := e.Errors(); errs != 0 {
		t.Fatalf("%d per-event errors", errs)
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	state, _ := e.StateBytes()
	if m.HeapAlloc > 60<<20 {
		t.Errorf("heap %d bytes after 200 events of 1 MB with %d bytes of state; want far less than the 200 MB of the events", m.HeapAlloc, state)
	}
	runtime.KeepAlive(e)
}

// One event through a Split to 30 count windows of 10,000 count-slices and 26 Counts each
// (260,000 cells a key, within MaxCountCellsPerKey): each takes about 2.6 MB for the event's
// key, 77 MB in all, before the event is over and any look between events (round 22: such a
// fan-out, with more aggregations, took gigabytes from one record and ended the server).
// Each window reserves its cells first (Engine.reserveState): past the 64 MiB budget the
// event is refused at the window that would pass it, with an error there, the windows after
// it are not reached (the run ends), and the state stays within the budget.
func TestStateBudgetReservedWithinAnEvent(t *testing.T) {
	var aggs []string
	for i := range 26 {
		aggs = append(aggs, fmt.Sprintf(`{"name": "c%d", "aggregator": "Count"}`, i))
	}
	nodes := []string{srcNode("in", "#input.t", "0s"), `{"id": "split", "type": "Split"}`}
	edges := []string{`{"from": "in", "to": "split"}`}
	for j := range 30 {
		nodes = append(nodes, countWindowNode(fmt.Sprintf("w%d", j), aggs), collectSink(fmt.Sprintf("out%d", j), "#agg.c0"))
		edges = append(edges, fmt.Sprintf(`{"from": "split", "to": "w%d"}, {"from": "w%d", "to": "out%d"}`, j, j, j))
	}
	s, err := scenario.Decode([]byte(`{"nodes": [` + strings.Join(nodes, ", ") + `], "edges": [` + strings.Join(edges, ", ") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	const budget = 64 << 20
	e, err := New(s, Options{Bounded: true, MaxStateBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.PushJSON("in", []byte(`{"t": 0, "k": "k0"}`), 1); err != nil {
		t.Fatal(err)
	}
	held, _ := e.StateBytes()
	var over *StateBudgetError
	if !errors.As(e.StateErr(), &over) || !strings.HasPrefix(over.Node, "w") || over.Budget != budget {
		t.Fatalf("state error %v; want a *StateBudgetError of a count window against %d", e.StateErr(), budget)
	}
	if held > budget || held < budget/2 {
		t.Errorf("the event left %d bytes of state; want within the budget of %d, and over half of it", held, budget)
	}
	// The window that would pass the budget refused the event, with an error; the windows
	// before it hold the key, those after it were not reached.
	took := 0
	for id, st := range e.State() {
		if st.Keys == 1 {
			took++
		} else if st.Keys != 0 {
			t.Errorf("window %s holds %d keys", id, st.Keys)
		}
	}
	if errs, n := e.Errors(); took == 0 || took == 30 || n != 1 || errs[0].NodeID != over.Node {
		t.Errorf("%d windows took the key, per-event errors %v; want some and not all, and one error, at %s", took, errs, over.Node)
	}
	t.Logf("%d bytes held; refused at %s: %v", held, over.Node, over)
}

// An aggregate reserves an event's large inputs before it adds them (aggregator.reserveInputs):
// one event through 8 branches of 4 List aggregations of a 1,000,000-byte string would add 32
// MB at once, where the looks between events assume that one event adds little. With a
// budget of 8 MiB (8,388,608 bytes), worked by hand: the first branch reserves 4,000,000, the
// second 4,000,000 more (8,000,000 fit), the third would pass it: the state is looked at again
// (the two branches' 8,000,000 bytes and their cells), and the event is refused there, with an
// error; the other branches are not reached.
func TestStateBudgetReservesLargeInputs(t *testing.T) {
	var aggs []string
	for i := range 4 {
		aggs = append(aggs, fmt.Sprintf(`{"name": "l%d", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "repeat('x', #input.n)"}}`, i))
	}
	nodes := []string{srcNode("in", "#input.t", "0s"), `{"id": "split", "type": "Split"}`}
	edges := []string{`{"from": "in", "to": "split"}`}
	for j := range 8 {
		nodes = append(nodes, fmt.Sprintf(`{"id": "w%d", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [%s]},
			{"name": "windowLength", "value": "1h"}]}`, j, strings.Join(aggs, ", ")), collectSink(fmt.Sprintf("out%d", j), "#agg.l0"))
		edges = append(edges, fmt.Sprintf(`{"from": "split", "to": "w%d"}, {"from": "w%d", "to": "out%d"}`, j, j, j))
	}
	s, err := scenario.Decode([]byte(`{"nodes": [` + strings.Join(nodes, ", ") + `], "edges": [` + strings.Join(edges, ", ") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	const budget = 8 << 20
	e, err := New(s, Options{Bounded: true, MaxStateBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.PushJSON("in", []byte(`{"t": 0, "k": "k0", "n": 1000000}`), 1); err != nil {
		t.Fatal(err)
	}
	held, _ := e.StateBytes()
	var over *StateBudgetError
	if !errors.As(e.StateErr(), &over) || over.Budget != budget {
		t.Fatalf("state error %v; want a *StateBudgetError against %d after one event", e.StateErr(), budget)
	}
	if held < 8_000_000 || held > budget {
		t.Errorf("the event left %d bytes of state; want the two branches' 8,000,000 and their cells, within %d", held, budget)
	}
	took := 0
	for _, st := range e.State() {
		if st.Keys == 1 {
			took++
		}
	}
	if errs, n := e.Errors(); took != 2 || n != 1 || errs[0].NodeID != over.Node {
		t.Errorf("%d windows took the event, per-event errors %v; want 2, and one error at %s", took, errs, over.Node)
	}
}

// A reservation is what an input may add, not what it adds: a HyperLogLog keeps none of its
// 100,000-byte strings. 100 of them (10,000,000 bytes reserved in all) against a budget of
// 1 MiB pass, the state looked at again each time the reservations would pass it.
func TestStateBudgetLooksBeforeRefusing(t *testing.T) {
	s, err := scenario.Decode([]byte(scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "w", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": []},
			{"name": "aggregations", "value": [{"name": "u", "aggregator": "ApproximateSetCardinality", "aggregateBy": {"language": "expr", "expression": "repeat(string(#input.t), 100000)"}}]},
			{"name": "windowLength", "value": "1h"}]}`,
		collectSink("out", "#agg.u"),
	}, []string{link("in", "w"), link("w", "out")})))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{Bounded: true, MaxStateBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := e.PushJSON("in", []byte(fmt.Sprintf(`{"t": %d}`, i)), int64(i+1)); err != nil {
			t.Fatal(err)
		}
		if e.CheckState() {
			t.Fatalf("event %d: %v", i, e.StateErr())
		}
	}
	if errs, n := e.Errors(); n != 0 {
		t.Fatalf("errors %v", errs)
	}
}

// A count window's columns hold every key's cells: a first string in a Max column, or a first
// float in a Sum column, used to make a side array for all of them at once, in one event,
// past the reservation of the keys' cells (round 23: 15 keys of 26 Max columns, 43.7 MB
// against 64 MiB; one event with a string took the state to 125.5 MB). Here 3 keys. Now a Max column's
// strings take pages of 1,024 cells as they come (the key's 10,000 cells: at most 10 pages a
// column), and a Sum column's float parts are made with its cells (reserved with them). The
// one event adds at most 26 columns × 10 pages × 1,024 cells × 16 bytes (4.3 MB); the Sums'
// first floats nothing.
func TestCountWindowSideArraysBounded(t *testing.T) {
	for _, agg := range []struct{ fn, first, then string }{{"Max", "1", `"s"`}, {"Sum", "1", "1.5"}} {
		var aggs []string
		for i := range 26 {
			aggs = append(aggs, fmt.Sprintf(`{"name": "m%d", "aggregator": %q, "aggregateBy": {"language": "expr", "expression": "#input.v"}}`, i, agg.fn))
		}
		s, err := scenario.Decode([]byte(`{"nodes": [` + srcNode("in", "#input.t", "0s") + `, ` + countWindowNode("w", aggs) + `, ` + collectSink("out", "#agg.m0") + `],
		"edges": [{"from": "in", "to": "w"}, {"from": "w", "to": "out"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(s, Options{Bounded: true, MaxStateBytes: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		const keys = 3 // 30,000 cells a column
		for k := range keys {
			if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d, "k": "k%d", "v": %s}`, k, k, agg.first), int64(k+1)); err != nil {
				t.Fatal(err)
			}
		}
		if e.StateErr() != nil {
			t.Fatalf("%s: %d keys: %v; want them within 64 MiB", agg.fn, keys, e.StateErr())
		}
		before, _ := e.StateBytes()
		if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d, "k": "k0", "v": %s}`, keys, agg.then), int64(keys+1)); err != nil {
			t.Fatal(err)
		}
		after, _ := e.StateBytes()
		if most := int64(26 * 10 * 1024 * 16); after-before > most {
			t.Errorf("%s: one event took the state from %d to %d bytes, %d more; want at most %d", agg.fn, before, after, after-before, most)
		}
	}
}

// countWindowNode is an aggregate-count node id grouping by #input.k, with aggs (the
// aggregations' JSON) over count windows of 10,000 events sliding by 1: 10,000 count-slices
// a key.
func countWindowNode(id string, aggs []string) string {
	return fmt.Sprintf(`{"id": %q, "type": "CustomNode", "nodeType": "aggregate-count", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [%s]},
			{"name": "windowLength", "value": 10000}, {"name": "slide", "value": 1}]}`, id, strings.Join(aggs, ", "))
}
