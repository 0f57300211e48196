package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
)

// Scenario fragments for tests. Records written as map literals keep their
// written key order.
func srcNode(id, ts, ooo string) string {
	return `{"id": "` + id + `", "type": "Source", "ref": {"typ": "file", "parameters": [
		{"name": "path", "value": "in.jsonl"},
		{"name": "timestamp", "expression": {"language": "expr", "expression": "` + ts + `"}},
		{"name": "maxOutOfOrderness", "value": "` + ooo + `"}]}}`
}

func sinkNode(id, value string) string {
	return `{"id": "` + id + `", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
		{"name": "value", "expression": {"language": "expr", "expression": ` + quote(value) + `}}]}}`
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// countSumNode is aggregate node "agg" of kind nodeType (output #agg): per
// #input.k, n = Count and s = Sum of #input.v over 10 s windows, with the
// extra parameters given.
func countSumNode(nodeType string, extra ...string) string {
	params := append([]string{`{"name": "windowLength", "value": "10s"}`}, extra...)
	return `{"id": "agg", "type": "CustomNode", "nodeType": "` + nodeType + `", "outputVar": "agg", "parameters": [
		{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
		{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
			{"name": "s", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.v"}}]},
		` + strings.Join(params, ", ") + `]}`
}

func link(from, to string) string {
	return `{"from": "` + from + `", "to": "` + to + `", "edgeType": null}`
}

func typedEdge(from, to, typ string) string {
	return `{"from": "` + from + `", "to": "` + to + `", "edgeType": {"type": "` + typ + `"}}`
}

func scenarioJSON(nodes []string, edges []string) string {
	return `{"properties": {}, "nodes": [` + strings.Join(nodes, ",") + `], "edges": [` + strings.Join(edges, ",") + `]}`
}

// replay runs input through the scenario and returns the output lines and the engine.
func replay(t *testing.T, scenarioText, input string) ([]string, *Engine, Summary) {
	t.Helper()
	s, err := scenario.Decode([]byte(scenarioText))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	var n int64
	e, err := New(s, Options{ScenarioName: "test", Output: WriteOutput(w, &n)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	sum, err := Replay(context.Background(), e, strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	out := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if buf.Len() == 0 {
		out = nil
	}
	if int64(len(out)) != n {
		t.Fatalf("%d lines written, %d counted", len(out), n)
	}
	return out, e, sum
}

// writingEngine builds a bounded engine of the scenario whose Output writes to a buffer:
// written counts the values, output flushes and returns what was written.
func writingEngine(t *testing.T, scenarioText string) (e *Engine, written *int64, output func() string) {
	t.Helper()
	s, err := scenario.Decode([]byte(scenarioText))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	written = new(int64)
	e, err = New(s, Options{ScenarioName: "test", Output: WriteOutput(w, written), Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	return e, written, func() string {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
}

func expectLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d lines:\n%s\nwant %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
}

func TestFilterVariableSink(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "big", "type": "Filter", "expression": {"language": "expr", "expression": "#input.n > 1"}}`,
		`{"id": "double", "type": "Variable", "varName": "d", "value": {"language": "expr", "expression": "#input.n * 2"}}`,
		sinkNode("out", "{n: #input.n, d: #d, at: #meta.eventTime}"),
	}, []string{link("in", "big"), typedEdge("big", "double", "FilterTrue"), link("double", "out")})
	out, e, _ := replay(t, sc, `{"t": 1000, "n": 1}
{"t": 2000, "n": 2}
`)
	// n=1 is filtered out; 2 doubles to 4.
	if c := e.Counts()["big"]; c.In != 2 || c.Out != 1 {
		t.Fatalf("filter counts %+v", c)
	}
	expectLines(t, out, `{"sink":"out","value":{"n":2,"d":4,"at":2000}}`)
}

func TestPerEventErrorsKeepTheRest(t *testing.T) {
	// A tumbling 10 s count and sum per key; line 2 is not JSON, line 4
	// lacks the timestamp field, line 6 has a string where the sum needs a
	// number. The other lines give the same windows as without them.
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		countSumNode("aggregate-tumbling", `{"name": "emitWhen", "value": "OnEnd"}`),
		sinkNode("out", "{k: #key[0], start: #window.start, n: #agg.n, s: #agg.s}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	clean := `{"t": 1000, "k": "a", "v": 1}
{"t": 2000, "k": "a", "v": 2}
{"t": 12000, "k": "a", "v": 4}
`
	bad := `{"t": 1000, "k": "a", "v": 1}
{"t": 1500, "k": "a", "v":
{"t": 2000, "k": "a", "v": 2}
{"k": "a", "v": 100}
{"t": 12000, "k": "a", "v": 4}
{"t": 13000, "k": "a", "v": "seven"}
`
	want := []string{
		`{"sink":"out","value":{"k":"a","start":0,"n":2,"s":3}}`,
		`{"sink":"out","value":{"k":"a","start":10000,"n":1,"s":4}}`,
	}
	out, _, _ := replay(t, sc, clean)
	expectLines(t, out, want...)
	out, e, sum := replay(t, sc, bad)
	expectLines(t, out, want...)
	errs, n := e.Errors()
	if n != 3 || sum.Errors != 3 {
		t.Fatalf("%d errors, want 3: %v", n, errs)
	}
	for i, w := range []struct {
		line  int64
		node  string
		field string
	}{{2, "in", ""}, {4, "in", "timestamp"}, {6, "agg", "aggregations"}} {
		if errs[i].Line != w.line || errs[i].NodeID != w.node || errs[i].Field != w.field {
			t.Errorf("error %d = %+v, want line %d node %s field %q", i, errs[i], w.line, w.node, w.field)
		}
	}
	if c := e.Counts()["agg"]; c.In != 4 || c.Errors != 1 {
		t.Errorf("aggregate counts %+v, want in 4 (lines 1, 3, 5, 6), errors 1", c)
	}
}

func TestSwitchSplitUnionForEach(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "sw", "type": "Switch"}`,
		`{"id": "small", "type": "Variable", "varName": "size", "value": {"language": "expr", "expression": "'small'"}}`,
		`{"id": "large", "type": "Variable", "varName": "size", "value": {"language": "expr", "expression": "'large'"}}`,
		`{"id": "other", "type": "Variable", "varName": "size", "value": {"language": "expr", "expression": "'other'"}}`,
		`{"id": "u", "type": "Join", "nodeType": "union", "outputVar": "label", "branchParameters": [
			{"branchId": "small", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "'S:' + #size"}}]},
			{"branchId": "large", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "'L:' + #size"}}]},
			{"branchId": "other", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "'O:' + #size"}}]}]}`,
		`{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "item", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "#input.items"}}]}`,
		sinkNode("out", "{label: #label, item: #item}"),
	}, []string{
		link("in", "sw"),
		`{"from": "sw", "to": "small", "edgeType": {"type": "NextSwitch", "condition": {"language": "expr", "expression": "#input.n < 10"}}}`,
		`{"from": "sw", "to": "large", "edgeType": {"type": "NextSwitch", "condition": {"language": "expr", "expression": "#input.n < 100"}}}`,
		typedEdge("sw", "other", "SwitchDefault"),
		link("small", "u"), link("large", "u"), link("other", "u"),
		link("u", "each"), link("each", "out"),
	})
	out, _, _ := replay(t, sc, `{"t": 1, "n": 5, "items": [1, 2]}
{"t": 2, "n": 50, "items": ["x"]}
{"t": 3, "n": 500, "items": []}
{"t": 4, "n": 5000, "items": [true]}
`)
	// The first matching condition wins, in edge order; the default takes the rest.
	expectLines(t, out,
		`{"sink":"out","value":{"label":"S:small","item":1}}`,
		`{"sink":"out","value":{"label":"S:small","item":2}}`,
		`{"sink":"out","value":{"label":"L:large","item":"x"}}`,
		`{"sink":"out","value":{"label":"O:other","item":true}}`,
	)
}

func TestAggregateOverAggregate(t *testing.T) {
	// Per-minute counts feed a 2-minute sum of counts. A minute window's
	// result carries event time end-1 ms (docs/semantics.md §1), so minute [60s,120s)
	// lands in the 2-minute window [0,120s), and minute [120s,180s) in
	// [120s,240s). The flush closes everything, upstream first.
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "perMinute", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "m", "parameters": [
			{"name": "groupBy", "value": []},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "1m"}, {"name": "emitWhen", "value": "OnEnd"}]}`,
		`{"id": "perTwo", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "two", "parameters": [
			{"name": "groupBy", "value": []},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#m.n"}},
				{"name": "windows", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "2m"}, {"name": "emitWhen", "value": "OnEnd"}]}`,
		sinkNode("out", "{start: #window.start, n: #two.n, windows: #two.windows}"),
	}, []string{link("in", "perMinute"), link("perMinute", "perTwo"), link("perTwo", "out")})
	out, _, _ := replay(t, sc, `{"t": 10000}
{"t": 70000}
{"t": 80000}
{"t": 130000}
{"t": 250000}
`)
	// Minutes: [0,60s)=1, [60s,120s)=2, [120s,180s)=1, [240s,300s)=1.
	// At t=130000 (W=130000) minute windows up to 120s close: [0,60s) and
	// [60s,120s) go to perTwo window [0,120s), which closes at the same step
	// (its own watermark is 130000 too): 3 from 2 windows.
	expectLines(t, out,
		`{"sink":"out","value":{"start":0,"n":3,"windows":2}}`,
		`{"sink":"out","value":{"start":120000,"n":1,"windows":1}}`,
		`{"sink":"out","value":{"start":240000,"n":1,"windows":1}}`,
	)
}

func TestInvalidScenarioRefused(t *testing.T) {
	s, err := scenario.Decode([]byte(scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "'not a boolean'"}}`,
		sinkNode("out", "#input"),
	}, []string{link("in", "f"), typedEdge("f", "out", "FilterTrue")})))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(s, Options{})
	var inv *InvalidError
	if !errors.Is(err, ErrInvalidScenario) || !errors.As(err, &inv) || inv.Validation.Errors[0].NodeID != "f" {
		t.Fatalf("err = %v", err)
	}
}

func TestIntegerOverflowIsAnEventError(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "double", "type": "Variable", "varName": "d", "value": {"language": "expr", "expression": "#input.n * 2"}}`,
		sinkNode("out", "{n: #input.n, d: #d}"),
	}, []string{link("in", "double"), link("double", "out")})
	// 2^62 * 2 = 2^63 is beyond int64: an error of the variable node on
	// line 2, never a wrapped negative number; lines 1 and 3 go through.
	out, e, _ := replay(t, sc, `{"t": 1, "n": 3}
{"t": 2, "n": 4611686018427387904}
{"t": 3, "n": -4611686018427387904}
`)
	expectLines(t, out,
		`{"sink":"out","value":{"n":3,"d":6}}`,
		`{"sink":"out","value":{"n":-4611686018427387904,"d":-9223372036854775808}}`,
	)
	errs, n := e.Errors()
	if n != 1 || errs[0].NodeID != "double" || errs[0].Line != 2 || !strings.Contains(errs[0].Message, "overflow") {
		t.Fatalf("errors %v", errs)
	}
}

// In a replay, a source without a timestamp expression never reads the wall
// clock: a record takes the timestamp given with it, or time 0.
func TestBoundedRunWithoutTimestampExpression(t *testing.T) {
	sc := scenarioJSON([]string{
		`{"id": "in", "type": "Source", "ref": {"typ": "http"}}`,
		sinkNode("out", "{v: #input.v, at: #meta.eventTime}"),
	}, []string{link("in", "out")})
	e, _, output := writingEngine(t, sc)
	if _, err := Replay(context.Background(), e, strings.NewReader(`{"v": 1}
{"sourceId": "in", "record": {"v": 2}, "timestamp": 5000}
`)); err != nil {
		t.Fatal(err)
	}
	expectLines(t, strings.Split(strings.TrimSpace(output()), "\n"),
		`{"sink":"out","value":{"v":1,"at":0}}`,
		`{"sink":"out","value":{"v":2,"at":5000}}`,
	)
}

// A line naming a source the scenario does not have is an input error that lists the ones it
// has, and the run goes on.
func TestReplayUnknownSourceListsSources(t *testing.T) {
	sc := twoSources()
	out, e, _ := replay(t, sc, `{"sourceId": "c", "record": {"t": 1}}
{"sourceId": "b", "record": {"t": 2}}
`)
	expectLines(t, out, `{"sink":"out","value":"b"}`)
	errs, n := e.Errors()
	if n != 1 || errs[0].Line != 1 || !strings.Contains(errs[0].Message, `unknown source "c" (the scenario's sources: "a", "b")`) {
		t.Fatalf("errors %v", errs)
	}
}

// twoSources is a scenario of sources a and b, whose union writes "a" or "b" to sink out.
func twoSources() string {
	return scenarioJSON([]string{
		srcNode("b", "#input.t", "0s"),
		srcNode("a", "#input.t", "0s"),
		`{"id": "u", "type": "Join", "nodeType": "union", "outputVar": "o", "branchParameters": [
			{"branchId": "a", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "'a'"}}]},
			{"branchId": "b", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "'b'"}}]}]}`,
		sinkNode("out", "#o"),
	}, []string{link("a", "u"), link("b", "u"), link("u", "out")})
}

// An envelope whose timestamp or sourceId has the wrong JSON type is an input error saying
// what it must be, in the product's words, not Go's struct and field names.
func TestReplayEnvelopeTypes(t *testing.T) {
	sc := twoSources()
	out, e, _ := replay(t, sc, `{"sourceId": "a", "record": {"t": 1}, "timestamp": "2024-05-01T10:00:00Z"}
{"sourceId": 7, "record": {"t": 2}}
{"sourceId": "b", "record": {"t": 3}, "timestamp": 1000}
`)
	expectLines(t, out, `{"sink":"out","value":"b"}`)
	errs, n := e.Errors()
	if n != 2 || errs[0].Line != 1 || errs[1].Line != 2 ||
		!strings.Contains(errs[0].Message, `"timestamp" is a JSON string: it is an integer, epoch milliseconds`) ||
		!strings.Contains(errs[1].Message, `"sourceId" is a JSON number: it is a string`) ||
		strings.Contains(errs[0].Message, "Go struct") || strings.Contains(errs[0].Message, "envelope") {
		t.Fatalf("errors %v", errs)
	}
}

// The least integer as a line's timestamp is out of range, as its neighbour is, not "no
// timestamp" (a hostile round: event time 0 from the source's expression, no error).
func TestReplayLeastTimestamp(t *testing.T) {
	out, e, _ := replay(t, twoSources(), `{"sourceId": "a", "record": {"t": 5}, "timestamp": -9223372036854775808}
{"sourceId": "a", "record": {"t": 6}, "timestamp": -9223372036854775807}
{"sourceId": "b", "record": {"t": 7}, "timestamp": 7}
`)
	expectLines(t, out, `{"sink":"out","value":"b"}`)
	errs, n := e.Errors()
	if n != 2 || errs[0].Line != 1 || errs[1].Line != 2 || errs[0].Field != "timestamp" ||
		!strings.Contains(errs[0].Message, "out of range") || !strings.Contains(errs[1].Message, "out of range") {
		t.Fatalf("%d errors %+v; want both lines' timestamps out of range", n, errs)
	}
}

// A path of #input that walk does not follow gives expr's value wherever it is read: in a
// Variable, in a record literal of paths and in the group key of an aggregate that reads the
// source's record (evalFrom). A string's index is its character's code (expr's own answer:
// "abc"[0] is 97); out of range it is an error of the node (a hostile round: #input.s[0] in
// a Variable was an error where (#input.s[0]) was 97).
func TestPathStepsOnlyExprFollows(t *testing.T) {
	src := `{"id": "in", "type": "Source", "ref": {"typ": "file", "parameters": [{"name": "path", "value": "x"},
		{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}}`
	input := `{"t": 1, "s": "abc"}` + "\n" + `{"t": 2, "s": "x"}` + "\n"
	variable := scenarioJSON([]string{src,
		`{"id": "v", "type": "Variable", "varName": "c", "value": {"language": "expr", "expression": "#input.s[0]"}}`,
		sinkNode("out", "{first: #c, second: #input.s[1]}")},
		[]string{link("in", "v"), link("v", "out")})
	got, e, _ := replay(t, variable, input)
	expectLines(t, got, `{"sink":"out","value":{"first":97,"second":98}}`)
	if errs, n := e.Errors(); n != 1 || errs[0].NodeID != "out" || errs[0].Line != 2 {
		t.Fatalf("%d errors %+v, want one, at out on line 2 (\"x\"[1] is out of range)", n, errs)
	}
	grouped := scenarioJSON([]string{src,
		`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.s[1]"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "10s"}]}`,
		sinkNode("out", "{key: #key[0], n: #agg.n}")},
		[]string{link("in", "agg"), link("agg", "out")})
	got, e, _ = replay(t, grouped, input)
	expectLines(t, got, `{"sink":"out","value":{"key":98,"n":1}}`)
	if errs, n := e.Errors(); n != 1 || errs[0].NodeID != "agg" || errs[0].Line != 2 {
		t.Fatalf("%d errors %+v, want one, at agg on line 2", n, errs)
	}
}
