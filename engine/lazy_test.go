package engine

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/examples"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// run replays input through scenarioText, with an Observe callback (which
// makes sources decode whole records) or without (sources decode only the
// fields the scenario reads, and #input is lazy), and returns the output
// lines, the errors and the counts as text.
func runMode(t *testing.T, scenarioText []byte, input []byte, observe bool) (out []string, errs []string, counts string, lazyInput bool) {
	t.Helper()
	s, err := scenario.Decode(scenarioText)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	var n int64
	opts := Options{ScenarioName: "lazy", Bounded: true, Output: WriteOutput(w, &n)}
	if observe {
		opts.Observe = func(string, map[string]value.Value, int64) {}
	}
	e, err := New(s, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, src := range e.sources {
		lazyInput = src.fields != nil
	}
	sum, err := Replay(context.Background(), e, bytes.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	kept, _ := e.Errors()
	for _, x := range kept {
		errs = append(errs, x.String())
	}
	sum.Elapsed = 0
	return strings.Split(buf.String(), "\n"), errs, sum.String(), lazyInput
}

// Decoding only the fields a scenario reads, and reading #input.field from
// them, must give exactly what decoding whole records gives: the same
// outputs, errors and counts, on the examples and their real data and on a
// scenario made of awkward inputs and paths.
func TestLazyInputAgreesWithWholeRecords(t *testing.T) {
	type tc struct {
		name            string
		scenario, input []byte
	}
	var cases []tc
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		data := "flights-20k.ndjson"
		if strings.HasPrefix(ex.Name, "accesslog") {
			data = "access-log-10k.ndjson"
		}
		input, err := os.ReadFile(filepath.Join("..", "testdata", data))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{ex.Name, ex.Graph, input})
	}
	awkward := scenarioJSON([]string{
		srcNode("in", "#input.t", "5s"),
		`{"id": "has", "type": "Filter", "expression": {"language": "expr", "expression": "#input.k != \"skip\""}}`,
		`{"id": "v", "type": "Variable", "varName": "x", "value": {"language": "expr", "expression": "#input.n + 1"}}`,
		`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-sliding", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
				{"name": "s", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.n"}},
				{"name": "last", "aggregator": "Last", "aggregateBy": {"language": "expr", "expression": "#input.user.id"}}]},
			{"name": "windowLength", "value": "10s"}]}`,
		sinkNode("out", "{k: #input.k, n: #input.n, x: #x, id: #input.user.id, tag: #input.tags[1], none: #input.missing, agg: #agg, len: len(#input.k ?? '')}"),
	}, []string{link("in", "has"), typedEdge("has", "v", "FilterTrue"), link("v", "agg"), link("agg", "out")})
	input := strings.Join([]string{
		`{"t": 1000, "k": "a", "n": 1, "user": {"id": 7}, "tags": ["x", "y"]}`,
		`{"k": "a", "t": 2000, "n": 2, "extra": [1, {"deep": [true]}], "user": {"id": 8, "name": "é"}}`,
		`{"t": 2500, "k": "a", "n": 3, "n": 4, "user": null}`, // repeated key: the last wins
		`{"\u0074": 3000, "k": "b", "n": -5, "user": {"id": "s"}, "tags": []}`,
		`{"t": 3500, "k": "skip", "n": 1}`,
		`{"t": 4000, "k": "a", "n": 1.5, "user": 3}`, // user.id of a number: an error
		`{"t": 4500, "k": "a", "n": "x"}`,            // a string to add 1 to: an error
		`{"t": 5000, "k": "a"`,                       // not JSON
		`[1, 2]`,                                     // not a record
		`{"t": 5500, "k": ["list"], "n": 9223372036854775807, "user": {"id": 1}}`,
		`{"t": 6000, "k": "a", "n": 9223372036854775807}`, // x overflows
		`{}`,
		`{"t": 40000, "k": "a", "n": 0, "tags": ["only"]}`, // tags[1] out of range
		`{"t": 41000, "k": "c", "n": 1, "user": {"id": {"nested": [1, 2]}}, "tags": ["p", {"q": 1}]}`,
		`[1,`, `nul`, `"x`, `{"t": 42000, "k": "c", "n": 1,}`, // not JSON: the same message either way
	}, "\n")
	cases = append(cases, tc{"awkward", []byte(awkward), []byte(input)})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, counts, lazy := runMode(t, c.scenario, c.input, false)
			wOut, wErrs, wCounts, wLazy := runMode(t, c.scenario, c.input, true)
			if !lazy || wLazy {
				t.Fatalf("fields decoded lazily: %v without Observe, %v with it; want true, false", lazy, wLazy)
			}
			if len(out) < 3 {
				t.Fatalf("only %d output lines", len(out))
			}
			if counts != wCounts {
				t.Fatalf("counts differ:\nfields: %s\nwhole:  %s", counts, wCounts)
			}
			if strings.Join(errs, "\n") != strings.Join(wErrs, "\n") {
				t.Fatalf("errors differ:\nfields:\n%s\nwhole:\n%s", strings.Join(errs, "\n"), strings.Join(wErrs, "\n"))
			}
			for i := range out {
				if i >= len(wOut) || out[i] != wOut[i] {
					t.Fatalf("output line %d differs:\nfields: %s\nwhole:  %s", i+1, out[i], wOut[min(i, len(wOut)-1)])
				}
			}
			if len(out) != len(wOut) {
				t.Fatalf("%d output lines, %d with whole records", len(out), len(wOut))
			}
			if c.name == "awkward" {
				t.Logf("%d outputs, %d errors: %s", len(out)-1, len(errs), counts)
				if len(errs) < 5 {
					t.Fatalf("only %d errors:\n%s", len(errs), strings.Join(errs, "\n"))
				}
			}
		})
	}
}

// An aggregate's result variables are read in place (#agg.n, #key[0],
// #window.start) and made whole when an expression needs them whole or runs
// in expr; both give the same values. Worked by hand: tumbling 10 s windows
// of a count and a sum per key over a@1 s (1), a@2 s (2), b@3 s (5),
// a@15 s (4) give, at the end of input, a [0, 10 s) n=2 s=3, b [0, 10 s)
// n=1 s=5 and a [10 s, 20 s) n=1 s=4.
func TestLazyAggregateVariables(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		countSumNode("aggregate-tumbling", `{"name": "emitWhen", "value": "OnEnd"}`),
		`{"id": "split", "type": "Split"}`,
		sinkNode("paths", "{k0: #key[0], start: #window.start, end: #window.end, n: #agg.n, s: #agg.s}"),
		sinkNode("whole", "{agg: #agg, key: #key, window: #window}"),
		sinkNode("expr", "#agg.n * 100 + #agg.s + #window.start + len(#key)"),
		sinkNode("window", "#window"),
	}, []string{link("in", "agg"), link("agg", "split"),
		link("split", "paths"), link("split", "whole"), link("split", "expr"), link("split", "window")})
	out, _, sum := replay(t, sc, `{"t": 1000, "k": "a", "v": 1}
{"t": 2000, "k": "a", "v": 2}
{"t": 3000, "k": "b", "v": 5}
{"t": 15000, "k": "a", "v": 4}
`)
	if sum.Errors != 0 {
		t.Fatalf("errors: %s", sum)
	}
	// The results of one window come in key order; sort all the lines.
	// Records keep their key order, also those expr handles whole (#window
	// inside a record that expr builds).
	sort.Strings(out)
	want := []string{
		`{"sink":"expr","value":10105}`, // 1*100 + 4 + 10000 + 1
		`{"sink":"expr","value":106}`,   // 1*100 + 5 + 0 + 1
		`{"sink":"expr","value":204}`,   // 2*100 + 3 + 0 + 1
		`{"sink":"paths","value":{"k0":"a","start":0,"end":10000,"n":2,"s":3}}`,
		`{"sink":"paths","value":{"k0":"a","start":10000,"end":20000,"n":1,"s":4}}`,
		`{"sink":"paths","value":{"k0":"b","start":0,"end":10000,"n":1,"s":5}}`,
		`{"sink":"whole","value":{"agg":{"n":1,"s":4},"key":["a"],"window":{"start":10000,"end":20000}}}`,
		`{"sink":"whole","value":{"agg":{"n":1,"s":5},"key":["b"],"window":{"start":0,"end":10000}}}`,
		`{"sink":"whole","value":{"agg":{"n":2,"s":3},"key":["a"],"window":{"start":0,"end":10000}}}`,
		`{"sink":"window","value":{"start":0,"end":10000}}`,
		`{"sink":"window","value":{"start":0,"end":10000}}`,
		`{"sink":"window","value":{"start":10000,"end":20000}}`,
	}
	sort.Strings(want)
	expectLines(t, out, want...)
}

// A sliding aggregate enriches the incoming event: its context holds the
// lazy #input of the source and the lazy result variables at once. Worked by
// hand for a 10 s window: a@1 s (v 1) sees n=1 s=1, a@2 s (v 2) n=2 s=3,
// b@3 s (v 5) n=1 s=5, a@30 s (v 4) n=1 s=4.
func TestLazyVariablesOfAnEnrichedEvent(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		countSumNode("aggregate-sliding"),
		sinkNode("out", "{k: #key[0], v: #input.v, n: #agg.n, agg: #agg, share: #input.v * 100 / #agg.s}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	out, _, sum := replay(t, sc, `{"t": 1000, "k": "a", "v": 1}
{"t": 2000, "k": "a", "v": 2}
{"t": 3000, "k": "b", "v": 5}
{"t": 30000, "k": "a", "v": 4}
`)
	if sum.Errors != 0 {
		t.Fatalf("errors: %s", sum)
	}
	expectLines(t, out,
		`{"sink":"out","value":{"k":"a","v":1,"n":1,"agg":{"n":1,"s":1},"share":100.0}}`,
		`{"sink":"out","value":{"k":"a","v":2,"n":2,"agg":{"n":2,"s":3},"share":66.66666666666667}}`,
		`{"sink":"out","value":{"k":"b","v":5,"n":1,"agg":{"n":1,"s":5},"share":100.0}}`,
		`{"sink":"out","value":{"k":"a","v":4,"n":1,"agg":{"n":1,"s":4},"share":100.0}}`,
	)
}

// The timestamp expression sees #input alone, also through $env: not the
// #meta of the event before (the source's context is reused).
func TestTimestampSeesInputAlone(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", `#input.t + (\"meta\" in $env ? 1000000 : 0)`, "0s"),
		sinkNode("out", "{t: #meta.eventTime, n: #input.n}"),
	}, []string{link("in", "out")})
	out, _, _ := replay(t, sc, `{"t": 1, "n": 1}
{"t": 2, "n": 2}
{"t": 3, "n": 3}
`)
	expectLines(t, out,
		`{"sink":"out","value":{"t":1,"n":1}}`,
		`{"sink":"out","value":{"t":2,"n":2}}`,
		`{"sink":"out","value":{"t":3,"n":3}}`)
}

// ObserveEmitted shows each record whole, also on an engine built without
// Options.Observe (whose sources would otherwise decode only the fields the
// scenario reads).
func TestObserveEmittedSeesWholeRecords(t *testing.T) {
	sc := scenarioJSON([]string{srcNode("in", "#input.t", "0s"), sinkNode("out", "#input.n")},
		[]string{link("in", "out")})
	s, err := scenario.Decode([]byte(sc))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	e.ObserveEmitted(func(nodeID string, vars map[string]value.Value, _ int64) {
		seen = append(seen, nodeID+" "+string(value.AppendJSON(nil, vars["input"])))
	})
	if err := e.PushJSON("in", []byte(`{"z": true, "t": 5, "n": 1, "a": [1]}`), 1); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != `in {"z":true,"t":5,"n":1,"a":[1]}` {
		t.Fatalf("observed %q", seen)
	}
}

// A window whose integer sum overflows is emitted with a null sum, and its error names the
// window, the key and the aggregation, at its field (a hostile round: "aggregations" alone).
// Worked by hand: a tumbling 10 s window of key "a" holds MaxInt64 and 1.
func TestWindowErrorNamesWindowAndKey(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
				{"name": "s", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.v"}}]},
			{"name": "windowLength", "value": "10s"}]}`,
		sinkNode("out", "{k: #key[0], n: #agg.n, s: #agg.s}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	out, e, sum := replay(t, sc, `{"t": 1000, "k": "a", "v": 9223372036854775807}
{"t": 2000, "k": "a", "v": 1}
`)
	expectLines(t, out, `{"sink":"out","value":{"k":"a","n":2,"s":null}}`)
	errs, n := e.Errors()
	if n != 1 || sum.Errors != 1 || errs[0].NodeID != "agg" || errs[0].Field != "aggregations[1]" || errs[0].Line != 0 ||
		errs[0].Message != "window [0, 10000) of key [\"a\"]: aggregation \"s\": aggregate: integer sum overflows int64" {
		t.Fatalf("errors %d: %+v", n, errs)
	}
}

// Each aggregation of a window that fails is an error of its own, not the first alone (hostile
// round 164): key "a"'s integer Sum of MaxInt64 and 1 and its float Sum of 1.7e308 twice both
// overflow; its Count does not.
func TestWindowErrorsOfEachAggregation(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [
				{"name": "i", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.i"}},
				{"name": "n", "aggregator": "Count"},
				{"name": "f", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.f"}}]},
			{"name": "windowLength", "value": "10s"}]}`,
		sinkNode("out", "{i: #agg.i, n: #agg.n, f: #agg.f}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	out, e, _ := replay(t, sc, `{"t": 1000, "k": "a", "i": 9223372036854775807, "f": 1.7e308}
{"t": 2000, "k": "a", "i": 1, "f": 1.7e308}
`)
	expectLines(t, out, `{"sink":"out","value":{"i":null,"n":2,"f":null}}`)
	errs, n := e.Errors()
	if n != 2 || errs[0].Field != "aggregations[0]" || errs[1].Field != "aggregations[2]" ||
		errs[1].Message != "window [0, 10000) of key [\"a\"]: aggregation \"f\": aggregate: float sum beyond ±1.8e308" {
		t.Fatalf("errors %d: %+v; want aggregations[0] and aggregations[2]", n, errs)
	}
}
