package engine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// What an event decoded to is let go once the event has gone through the graph: before, each
// deployment kept its last event until its next one, and an event within every limit (1.5 MB
// of JSON, 524,280 empty objects) decodes to about 40 MB, so one client sending one such event
// to each of 140 deployments took the server to `fatal error: out of memory` (a hostile round,
// helper 113). Each graph gets an event of 300,000 integers, decoded to several MB (checked
// below), and after it the live heap may hold no more than 1 MiB more than before.
func TestLastEventLetGo(t *testing.T) {
	src := `{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
		{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}}`
	agg := func(groupBy, aggregateBy string) string {
		return `{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
		{"name": "groupBy", "value": [{"language": "expr", "expression": "` + groupBy + `"}]},
		{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
			{"name": "s", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "` + aggregateBy + `"}}]},
		{"name": "windowLength", "value": "10s"}]}`
	}
	graphs := map[string]string{
		"sink of #input": scenarioJSON([]string{src, sinkNode("out", "#input")}, []string{link("in", "out")}),
		"variable, filter, sink": scenarioJSON([]string{src,
			`{"id": "v", "type": "Variable", "varName": "v", "value": {"language": "expr", "expression": "#input.a"}}`,
			`{"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "len(#v) > 0"}}`,
			sinkNode("out", "len(#v)")}, []string{link("in", "v"), link("v", "f"), typedEdge("f", "out", "FilterTrue")}),
		"switch, union, variable builder, for-each": scenarioJSON([]string{src,
			`{"id": "sw", "type": "Switch"}`,
			`{"id": "yes", "type": "Variable", "varName": "l", "value": {"language": "expr", "expression": "#input.a"}}`,
			`{"id": "no", "type": "Variable", "varName": "l", "value": {"language": "expr", "expression": "[]"}}`,
			`{"id": "u", "type": "Join", "nodeType": "union", "outputVar": "all", "branchParameters": [
				{"branchId": "yes", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "#l"}}]},
				{"branchId": "no", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "#l"}}]}]}`,
			`{"id": "rec", "type": "VariableBuilder", "varName": "r", "fields": [{"name": "all", "expression": {"language": "expr", "expression": "#all"}}]}`,
			`{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "item", "parameters": [
				{"name": "Elements", "expression": {"language": "expr", "expression": "#r.all[0:10]"}}]}`,
			sinkNode("out", "#item")},
			[]string{link("in", "sw"),
				`{"from": "sw", "to": "yes", "edgeType": {"type": "NextSwitch", "condition": {"language": "expr", "expression": "len(#input.a) > 0"}}}`,
				typedEdge("sw", "no", "SwitchDefault"), link("yes", "u"), link("no", "u"), link("u", "rec"), link("rec", "each"), link("each", "out")}),
		"Kafka sink of #input": scenarioJSON([]string{src, `{"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [
			{"name": "topic", "value": "t"}, {"name": "value", "expression": {"language": "expr", "expression": "#input"}}]}}`},
			[]string{link("in", "out")}),
		"aggregate fed directly": scenarioJSON([]string{src, agg("#input.k", "#input.t"), sinkNode("out", "#agg.n")},
			[]string{link("in", "agg"), link("agg", "out")}),
		"aggregate of an expression": scenarioJSON([]string{src, agg("#input.k", "len(#input.a)"), sinkNode("out", "#agg.s")},
			[]string{link("in", "agg"), link("agg", "out")}),
	}
	// Integers: an expression reading the list converts it within its memory (16 MiB; 24
	// bytes an integer), where 200,000 empty objects would take 70 MB and be refused.
	big := []byte(`{"t": 1000, "k": "x", "a": [` + strings.Repeat("0,", 299_999) + `0]}`)
	// The event's decoded size, as a guard that the test would see it held.
	before := liveHeap()
	held, err := value.ParseJSON(big)
	if err != nil {
		t.Fatal(err)
	}
	decoded := liveHeap() - before
	runtime.KeepAlive(held)
	if decoded < 4<<20 {
		t.Fatalf("the event decodes to %d bytes; the test needs several MB to see it held", decoded)
	}
	for name, g := range graphs {
		t.Run(name, func(t *testing.T) {
			if grew := heldAfterPush(t, g, []byte(`{"t": 1, "k": "x", "a": [{}]}`), big); grew > 1<<20 {
				t.Errorf("after the event the heap holds %d bytes more (the event decodes to %d); want at most 1 MiB more", grew, decoded)
			}
		})
	}
}

// liveHeap is the heap's live bytes after a collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// heldAfterPush builds an engine of graph (source "in"), pushes warmup (when not nil), then
// record, and returns by how many bytes the live heap grew over the push of record, the
// engine kept alive. A per-event error fails the test.
func heldAfterPush(t *testing.T, graph string, warmup, record []byte) int64 {
	t.Helper()
	s, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{ScenarioName: "held", Output: func(string, value.Value, int64) {}})
	if err != nil {
		t.Fatal(err)
	}
	if warmup != nil {
		if err := e.PushJSON("in", warmup, 1); err != nil {
			t.Fatal(err)
		}
	}
	before := liveHeap()
	if err := e.PushJSON("in", record, 2); err != nil {
		t.Fatal(err)
	}
	grew := liveHeap() - before
	if errs, n := e.Errors(); n != 0 {
		t.Fatalf("%d per-event errors: %+v", n, errs)
	}
	runtime.KeepAlive(e)
	return grew
}

// What an event's expressions make is let go too, however small the event: a 7-byte event
// through four Variables of repeat("x", 15000000) kept 60 MB in each deployment until its
// next event, and 130 deployments ran out of memory (a hostile re-test). Each graph makes
// 8,000,000 bytes from an event of 20; after it the heap holds at most 1 MiB more.
func TestMadeValuesLetGo(t *testing.T) {
	src := `{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
		{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}}`
	big := `repeat('x', 8000000)`
	graphs := map[string]string{
		"variable": scenarioJSON([]string{src,
			`{"id": "v", "type": "Variable", "varName": "v", "value": {"language": "expr", "expression": "` + big + `"}}`,
			sinkNode("out", "len(#v)")}, []string{link("in", "v"), link("v", "out")}),
		"variable builder": scenarioJSON([]string{src,
			`{"id": "r", "type": "VariableBuilder", "varName": "r", "fields": [{"name": "s", "expression": {"language": "expr", "expression": "` + big + `"}}]}`,
			sinkNode("out", "len(#r.s)")}, []string{link("in", "r"), link("r", "out")}),
		"union and for-each": scenarioJSON([]string{src,
			`{"id": "sp", "type": "Split"}`,
			`{"id": "u", "type": "Join", "nodeType": "union", "outputVar": "all", "branchParameters": [
				{"branchId": "a", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "` + big + `"}}]},
				{"branchId": "b", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "'b'"}}]}]}`,
			`{"id": "a", "type": "Variable", "varName": "x", "value": {"language": "expr", "expression": "1"}}`,
			`{"id": "b", "type": "Variable", "varName": "x", "value": {"language": "expr", "expression": "2"}}`,
			`{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "item", "parameters": [
				{"name": "Elements", "expression": {"language": "expr", "expression": "[#all, #all + 'y']"}}]}`,
			sinkNode("out", "len(#item)")},
			[]string{link("in", "sp"), link("sp", "a"), link("sp", "b"), link("a", "u"), link("b", "u"), link("u", "each"), link("each", "out")}),
	}
	for name, g := range graphs {
		t.Run(name, func(t *testing.T) {
			if grew := heldAfterPush(t, g, nil, []byte(`{"t": 1, "k": "x"}`)); grew > 1<<20 {
				t.Errorf("after an event whose expressions made 8,000,000 bytes the heap holds %d bytes more; want at most 1 MiB more", grew)
			}
		})
	}
}

// What a closed window emits is let go too, whoever closes it: a small event, a clock tick or
// the end of input. Each graph's window holds n events of 1 MiB strings in a List; a small
// event of another key, far later, or a clock tick an hour later (the source idle), closes
// it and the List goes to a sink (directly, in a
// record built by expr, to Kafka, through a Variable). With 20 MiB, more than an expression
// may make (16 MiB), the record built by expr fails at the sink: before, that failed run kept
// the result until the next large event, 20 MiB a deployment that the state budget had given
// back. After the close the heap may hold at most 1 MiB more than before the first event.
func TestClosedWindowResultLetGo(t *testing.T) {
	src := `{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
		{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}}`
	agg := `{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
		{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
		{"name": "aggregations", "value": [{"name": "l", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "#input.s"}}]},
		{"name": "windowLength", "value": "10s"}]}`
	edges := []string{link("in", "agg"), link("agg", "out")}
	record := scenarioJSON([]string{src, agg, sinkNode("out", "{a: #agg, k: #key}")}, edges)
	idle := `{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "idleTimeout", "value": "2s"},
		{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}}`
	// Grouped by the strings themselves, counted: n keys of 2 MiB (more than the 1 MiB a
	// source's decoder keeps of its buffers), n results of a number (the review: the last key
	// stayed held by the sink).
	byKey := scenarioJSON([]string{src, strings.Replace(strings.Replace(agg, `"expression": "#input.k"`, `"expression": "#input.s"`, 1),
		`{"name": "l", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "#input.s"}}`, `{"name": "n", "aggregator": "Count"}`, 1),
		sinkNode("out", "{k: #key[0], n: #agg.n}")}, edges)
	tests := []struct {
		name      string
		graph     string
		n, errors int
		tick      bool // closed by Tick, not by an event
		keys      bool // a result a key: n results
	}{
		{"sink of each key's count", byKey, 5, 0, false, true},
		{"sink of the result", scenarioJSON([]string{src, agg, sinkNode("out", "#agg.l")}, edges), 10, 0, false, false},
		{"sink of a record of it", record, 10, 0, false, false},
		{"sink of a record of it, too large", record, 20, 1, false, false},
		{"the same, closed by a clock tick", scenarioJSON([]string{idle, agg, sinkNode("out", "{a: #agg, k: #key}")}, edges), 20, 1, true, false},
		{"Kafka sink of the result", scenarioJSON([]string{src, agg, `{"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "t"}, {"name": "value", "expression": {"language": "expr", "expression": "#agg.l"}}]}}`}, edges), 10, 0, false, false},
		{"variable of it, then a sink", scenarioJSON([]string{src, agg, `{"id": "v", "type": "Variable", "varName": "v", "value": {"language": "expr", "expression": "#agg.l"}}`, sinkNode("out", "len(#v)")}, []string{link("in", "agg"), link("agg", "v"), link("v", "out")}), 10, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Decode([]byte(tt.graph))
			if err != nil {
				t.Fatal(err)
			}
			outs := 0
			clock := time.UnixMilli(10_000_000) // no event time is ahead of it
			e, err := New(s, Options{ScenarioName: "held", Now: func() time.Time { return clock },
				Output: func(string, value.Value, int64) { outs++ }})
			if err != nil {
				t.Fatal(err)
			}
			before := liveHeap()
			for i := range tt.n {
				size := 1 << 20
				if tt.keys {
					size = 2 << 20
				}
				rec := fmt.Sprintf(`{"t": %d, "k": "x", "s": "%s"}`, 1000+i, strings.Repeat(string(rune('a'+i)), size))
				if err := e.PushJSON("in", []byte(rec), int64(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.tick {
				e.Tick(clock.Add(time.Hour))
			} else if err := e.PushJSON("in", []byte(`{"t": 6000000, "k": "y", "s": ""}`), int64(tt.n+1)); err != nil {
				t.Fatal(err)
			}
			grew := liveHeap() - before
			wantOuts := 1 - tt.errors
			if tt.keys {
				wantOuts = tt.n
			}
			if errs, n := e.Errors(); n != int64(tt.errors) || outs != wantOuts {
				t.Fatalf("%d outputs and %d per-event errors (%+v), want %d and %d", outs, n, errs, wantOuts, tt.errors)
			}
			if grew > 1<<20 {
				t.Errorf("after the window closed the heap holds %d bytes more than before its events; want at most 1 MiB more", grew)
			}
			runtime.KeepAlive(e)
		})
	}
}
