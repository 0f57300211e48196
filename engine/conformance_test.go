package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// The conformance table: one case per registered node kind, each run through the same
// checks (as Benthos runs one suite against every input and output). A kind added to the
// registry without a case here fails TestConformanceCoversRegistry.
//
// Every case runs on conformanceRecords, a file source "in" reading them with event time
// #input.t and no out-of-orderness, and writes to a collect sink "out" unless it is the
// source or the sink under test.

var conformanceRecords = []string{
	`{"t": 1000, "n": 1, "s": "a"}`,
	`{"t": 2000, "n": 2, "s": "b"}`,
	`{"t": 61000, "n": 3, "s": "a"}`,
}

type conformanceCase struct {
	kind  string // nodes.Kind ID
	graph string
	// want: the values the sinks write, as JSON, in order, worked out by hand.
	want []string
	// bad replaces old with new in graph to make one parameter of the node under test
	// invalid; field is where the error must be.
	old, new, field string
}

// chain is in -> x -> out, x being node, the edge from x of type edgeType (null for none),
// out writing sinkValue.
func chain(node, edgeType, sinkValue string) string {
	return `{"nodes": [` + srcNode("in", "#input.t", "0s") + `, ` + node + `, ` + collectSink("out", sinkValue) + `],
	"edges": [{"from": "in", "to": "x"}, {"from": "x", "to": "out", "edgeType": ` + edgeType + `}]}`
}

func collectSink(id, value string) string {
	return strings.Replace(sinkNode(id, value), `"stdout"`, `"collect"`, 1)
}

// alone is a source of kind typ writing #input.n, or in writing to a sink of kind typ.
func sourceAlone(typ string) string {
	src := strings.Replace(srcNode("in", "#input.t", "0s"), `"file"`, `"`+typ+`"`, 1)
	src = strings.Replace(src, `{"name": "path", "value": "in.jsonl"},`, map[string]string{
		"file": `{"name": "path", "value": "in.jsonl"},`, "kafka": `{"name": "topic", "value": "t"},`, "http": ""}[typ], 1)
	return `{"nodes": [` + src + `, ` + collectSink("out", "#input.n") + `], "edges": [{"from": "in", "to": "out"}]}`
}

func sinkAlone(typ string) string {
	sink := strings.Replace(sinkNode("out", "#input.n"), `"stdout"`, `"`+typ+`"`, 1)
	if typ == "file" {
		sink = strings.Replace(sink, `"parameters": [`, `"parameters": [{"name": "path", "value": "o.jsonl"}, `, 1)
	}
	if typ == "kafka" {
		sink = strings.Replace(sink, `"parameters": [`, `"parameters": [{"name": "topic", "value": "orders"}, {"name": "key", "expression": {"language": "expr", "expression": "'k' + string(#input.n)"}}, `, 1)
	}
	if typ == "dead-end" {
		sink = `{"id": "out", "type": "Sink", "ref": {"typ": "dead-end", "parameters": []}}`
	}
	return `{"nodes": [` + srcNode("in", "#input.t", "0s") + `, ` + sink + `], "edges": [{"from": "in", "to": "out"}]}`
}

func aggregateNode(nodeType, window string) string {
	return `{"id": "x", "type": "CustomNode", "nodeType": "` + nodeType + `", "outputVar": "agg", "parameters": [
		{"name": "groupBy", "value": []},
		{"name": "aggregations", "value": [{"name": "c", "aggregator": "Count"}]}, ` + window + `]}`
}

var conformanceCases = []conformanceCase{
	{kind: "Source/file", graph: sourceAlone("file"), want: []string{"1", "2", "3"},
		old: `"value": "0s"`, new: `"value": "soon"`, field: "maxOutOfOrderness"},
	{kind: "Source/http", graph: sourceAlone("http"), want: []string{"1", "2", "3"},
		old: `"value": "0s"`, new: `"value": 5`, field: "maxOutOfOrderness"},
	{kind: "Source/kafka", graph: sourceAlone("kafka"), want: []string{"1", "2", "3"},
		old: `"value": "t"`, new: `"value": ""`, field: "topic"},
	{kind: "Filter", graph: chain(`{"id": "x", "type": "Filter", "expression": {"language": "expr", "expression": "#input.n > 1"}}`, `{"type": "FilterTrue"}`, "#input.n"),
		want: []string{"2", "3"}, old: `"#input.n > 1"`, new: `"#nowhere > 1"`, field: "expression"},
	{kind: "Variable", graph: chain(`{"id": "x", "type": "Variable", "varName": "d", "value": {"language": "expr", "expression": "#input.n * 2"}}`, "null", "#d"),
		want: []string{"2", "4", "6"}, old: `"varName": "d"`, new: `"varName": "input"`, field: "varName"},
	{kind: "VariableBuilder", graph: chain(`{"id": "x", "type": "VariableBuilder", "varName": "r", "fields": [{"name": "x", "expression": {"language": "expr", "expression": "#input.s"}}]}`, "null", "#r"),
		want: []string{`{"x":"a"}`, `{"x":"b"}`, `{"x":"a"}`}, old: `"#input.s"`, new: `"#nowhere"`, field: "fields[0].expression"},
	{kind: "Switch", graph: chain(`{"id": "x", "type": "Switch"}`, `{"type": "NextSwitch", "condition": {"language": "expr", "expression": "#input.s == \"a\""}}`, "#input.n"),
		want: []string{"1", "3"}, old: `"#input.s == \"a\""`, new: `"#nowhere"`, field: "edges[1].edgeType.condition"},
	{kind: "Split", graph: chain(`{"id": "x", "type": "Split"}`, "null", "#input.n"), want: []string{"1", "2", "3"},
		old: `{"id": "x", "type": "Split"}`, new: `{"id": "x", "type": "Split", "parameters": [{"name": "p", "value": 1}]}`, field: "parameters"},
	{kind: "Join/union", graph: `{"nodes": [` + srcNode("in", "#input.t", "0s") + `,
		{"id": "sp", "type": "Split"},
		{"id": "a", "type": "Filter", "expression": {"language": "expr", "expression": "#input.n == 1"}},
		{"id": "b", "type": "Filter", "expression": {"language": "expr", "expression": "#input.n != 1"}},
		{"id": "x", "type": "Join", "nodeType": "union", "outputVar": "o", "branchParameters": [
			{"branchId": "a", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "\"first\""}}]},
			{"branchId": "b", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "#input.s"}}]}]},
		` + collectSink("out", "#o") + `],
		"edges": [{"from": "in", "to": "sp"}, {"from": "sp", "to": "a"}, {"from": "sp", "to": "b"},
			{"from": "a", "to": "x", "edgeType": {"type": "FilterTrue"}}, {"from": "b", "to": "x", "edgeType": {"type": "FilterTrue"}},
			{"from": "x", "to": "out"}]}`,
		want: []string{`"first"`, `"b"`, `"a"`}, old: `"branchId": "b"`, new: `"branchId": "c"`, field: "branchParameters[1].branchId"},
	{kind: "CustomNode/for-each", graph: chain(`{"id": "x", "type": "CustomNode", "nodeType": "for-each", "outputVar": "e", "parameters": [
		{"name": "Elements", "expression": {"language": "expr", "expression": "[#input.n, #input.n]"}}]}`, "null", "#e"),
		want: []string{"1", "1", "2", "2", "3", "3"}, old: `"[#input.n, #input.n]"`, new: `"[#nowhere]"`, field: "Elements"},
	// Sliding 10 s: each event enriched with the count of the events in the 10 s up to it.
	{kind: "CustomNode/aggregate-sliding", graph: chain(aggregateNode("aggregate-sliding", `{"name": "windowLength", "value": "10s"}`), "null", "#agg.c"),
		want: []string{"1", "2", "1"}, old: `"value": "10s"`, new: `"value": "10 s"`, field: "windowLength"},
	// Tumbling 1 min: [0, 60 s) has 2 events, closed by the event at 61 s; [60 s, 120 s)
	// has 1, closed at the end.
	{kind: "CustomNode/aggregate-tumbling", graph: chain(aggregateNode("aggregate-tumbling", `{"name": "windowLength", "value": "1m"}`), "null", "#agg.c"),
		want: []string{"2", "1"}, old: `{"name": "windowLength", "value": "1m"}`, new: `{"name": "windowLength", "value": "1m"}, {"name": "emitWhen", "value": "Sometimes"}`, field: "emitWhen"},
	// Hopping 1 min by 30 s: [-30 s, 30 s) and [0, 60 s) hold the first two (closed at
	// 61 s), [30 s, 90 s) and [60 s, 120 s) the third (closed at the end).
	{kind: "CustomNode/aggregate-hopping", graph: chain(aggregateNode("aggregate-hopping", `{"name": "windowLength", "value": "1m"}, {"name": "slide", "value": "30s"}`), "null", "#agg.c"),
		want: []string{"2", "2", "1", "1"}, old: `"value": "30s"`, new: `"value": "7s"`, field: "windowLength"},
	// Session, 10 s timeout: 1 s and 2 s are one session, closed at 61 s; 61 s another.
	{kind: "CustomNode/aggregate-session", graph: chain(aggregateNode("aggregate-session", `{"name": "sessionTimeout", "value": "10s"}`), "null", "#agg.c"),
		want: []string{"2", "1"}, old: `"value": "10s"`, new: `"value": true`, field: "sessionTimeout"},
	// Count windows of 2 events: one full window; the partial one is not emitted.
	{kind: "CustomNode/aggregate-count", graph: chain(aggregateNode("aggregate-count", `{"name": "windowLength", "value": 2}`), "null", "#agg.c"),
		want: []string{"2"}, old: `"value": 2}`, new: `"value": 0}`, field: "windowLength"},
	{kind: "Sink/collect", graph: sinkAlone("collect"), want: []string{"1", "2", "3"},
		old: `"#input.n"`, new: `"#input.n +"`, field: "value"},
	{kind: "Sink/file", graph: sinkAlone("file"), want: []string{"1", "2", "3"},
		old: `"value": "o.jsonl"`, new: `"value": ""`, field: "path"},
	// A Kafka sink writes {key, value} records (headers absent: not given).
	{kind: "Sink/kafka", graph: sinkAlone("kafka"), want: []string{`{"key":"k1","value":1}`, `{"key":"k2","value":2}`, `{"key":"k3","value":3}`},
		old: `"value": "orders"`, new: `"value": "bad topic!"`, field: "topic"},
	{kind: "Sink/stdout", graph: sinkAlone("stdout"), want: []string{"1", "2", "3"},
		old: `"#input.n"`, new: `"#nowhere"`, field: "value"},
	{kind: "Sink/dead-end", graph: sinkAlone("dead-end"), want: nil,
		old: `"parameters": []`, new: `"parameters": [{"name": "value", "value": 1}]`, field: "value"},
}

func TestConformanceCoversRegistry(t *testing.T) {
	cases := map[string]bool{}
	for _, c := range conformanceCases {
		cases[c.kind] = true
	}
	for _, k := range Default().Kinds() {
		if !cases[k.ID] {
			t.Errorf("node kind %s has no conformance case", k.ID)
		}
		delete(cases, k.ID)
	}
	for id := range cases {
		t.Errorf("conformance case for %s, which is not registered", id)
	}
}

func TestConformance(t *testing.T) {
	for _, c := range conformanceCases {
		t.Run(c.kind, func(t *testing.T) {
			k, ok := Default().Kind(c.kind)
			if !ok {
				t.Fatalf("not registered")
			}
			t.Run("spec renders", func(t *testing.T) { checkSpec(t, k) })
			s, err := scenario.Decode([]byte(c.graph))
			if err != nil {
				t.Fatal(err)
			}
			v := Default().Validate(s)
			if !v.OK() {
				t.Fatalf("the case does not validate: %v", v.Errors)
			}
			t.Run("invalid parameter", func(t *testing.T) { checkInvalid(t, c) })
			t.Run("runs on sample events", func(t *testing.T) {
				got, _ := runConformance(t, s, 0, len(conformanceRecords))
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("outputs %v, want %v", got, c.want)
				}
			})
			t.Run("snapshot and restore", func(t *testing.T) {
				whole, counts := runConformance(t, s, 0, len(conformanceRecords))
				for cut := 0; cut <= len(conformanceRecords); cut++ {
					got, gotCounts := runConformance(t, s, cut, len(conformanceRecords))
					if !reflect.DeepEqual(got, whole) || !reflect.DeepEqual(gotCounts, counts) {
						t.Errorf("restored after %d records: outputs %v, counts %v; without a restore %v, %v", cut, got, gotCounts, whole, counts)
					}
				}
			})
		})
	}
}

// checkSpec: the kind's spec encodes as the palette's JSON, with a label and description
// for the kind and each parameter, parameters named once, editors known, and the id its type
// and subtype.
func checkSpec(t *testing.T, k *nodes.Kind) {
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil || back["id"] != k.ID || back["label"] != k.Label {
		t.Errorf("spec JSON %s", b)
	}
	id := string(k.NodeType)
	if k.Subtype != "" {
		id += "/" + k.Subtype
	}
	if k.ID != id || k.Label == "" || k.Description == "" || k.Group == "" {
		t.Errorf("kind %+v", k)
	}
	seen := map[string]bool{}
	for _, p := range k.Parameters {
		if seen[p.Name] || p.Label == "" || p.Description == "" || p.Editor == "" || p.In == "" {
			t.Errorf("parameter %+v", p)
		}
		seen[p.Name] = true
		if p.Editor == nodes.EditorEnum && len(p.Options) == 0 {
			t.Errorf("enum parameter %s has no options", p.Name)
		}
	}
}

// checkInvalid: the case's graph with one parameter made invalid has an error of the node
// under test at that field.
func checkInvalid(t *testing.T, c conformanceCase) {
	if !strings.Contains(c.graph, c.old) {
		t.Fatalf("the graph has no %s", c.old)
	}
	bad := strings.Replace(c.graph, c.old, c.new, 1)
	v := Default().ValidateJSON([]byte(bad))
	under := "x"
	if strings.HasPrefix(c.kind, "Source/") {
		under = "in"
	} else if strings.HasPrefix(c.kind, "Sink/") {
		under = "out"
	}
	for _, p := range v.Errors {
		if p.NodeID == under && p.Field == c.field {
			return
		}
	}
	t.Errorf("no error of node %s at %s: %v", under, c.field, v.Errors)
}

// runConformance runs the records of [0, end) through s: the first cut in one engine, then,
// when cut > 0, the rest in a new engine restored from its snapshot. It returns the sink
// values and the node counts at the end.
func runConformance(t *testing.T, s *scenario.Scenario, cut, end int) ([]string, map[string]Counts) {
	t.Helper()
	var out []string
	opts := Options{Bounded: true, Output: func(_ string, v value.Value, _ int64) {
		out = append(out, string(value.AppendJSON(nil, v)))
	}}
	e, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	push := func(e *Engine, from, to int) {
		for i := from; i < to; i++ {
			if err := e.PushJSON("in", []byte(conformanceRecords[i]), int64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cut > 0 {
		push(e, 0, cut)
		snap := e.AppendSnapshot(nil)
		if e, err = New(s, opts); err != nil {
			t.Fatal(err)
		}
		if err := e.Restore(snap); err != nil {
			t.Fatalf("restoring after %d records: %v", cut, err)
		}
	}
	push(e, cut, end)
	e.Flush()
	if errs, n := e.Errors(); n > 0 {
		t.Errorf("per-event errors: %v", errs)
	}
	return out, e.Counts()
}
