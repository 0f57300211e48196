package engine

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// An aggregate whose one output is a sink with a record of result variables writes each
// result straight into the sink's value (aggregator.direct); what comes out, and the counts,
// are what the results going through the graph give: worked out by hand here, and equal to
// the path through the graph, which an Observe callback forces.
func TestDirectSink(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}, {"language": "expr", "expression": "#input.r"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
				{"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.x"}},
				{"name": "hi", "aggregator": "Max", "aggregateBy": {"language": "expr", "expression": "#input.x"}}]},
			{"name": "windowLength", "value": "10s"}]}`,
		sinkNode("out", "{region: #key[1], from: #window.start, to: #window.end, n: #agg.n, total: #agg.total, hi: #agg.hi}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	input := strings.Join([]string{
		`{"t": 1000, "k": "a", "r": "eu", "x": 2}`,
		`{"t": 2000, "k": "a", "r": "eu", "x": 3.5}`,
		`{"t": 3000, "k": "b", "r": "us", "x": 1}`,
		`{"t": 12000, "k": "a", "r": "eu", "x": 10}`,
	}, "\n")
	want := []string{
		`{"sink":"out","value":{"region":"eu","from":0,"to":10000,"n":2,"total":5.5,"hi":3.5}}`,
		`{"sink":"out","value":{"region":"eu","from":10000,"to":20000,"n":1,"total":10,"hi":10}}`,
		`{"sink":"out","value":{"region":"us","from":0,"to":10000,"n":1,"total":1,"hi":1}}`,
	}
	for _, observe := range []bool{false, true} {
		out, errs, counts, _ := runMode(t, []byte(sc), []byte(input), observe)
		out = out[:len(out)-1] // the text ends with a newline
		sort.Strings(out)
		if strings.Join(out, "\n") != strings.Join(want, "\n") {
			t.Fatalf("observe %v: outputs\n%s\nwant\n%s", observe, strings.Join(out, "\n"), strings.Join(want, "\n"))
		}
		if len(errs) != 0 {
			t.Fatalf("observe %v: errors %v", observe, errs)
		}
		for _, c := range []string{"agg(in=4 out=3 err=0", "out(in=3 out=3 err=0"} {
			if !strings.Contains(counts, c) {
				t.Fatalf("observe %v: counts %s, want %q in them", observe, counts, c)
			}
		}
	}
	e := newTestEngine(t, sc, false)
	if e.nodes["agg"].agg.direct == nil {
		t.Fatal("the aggregate does not write into its sink directly")
	}
	if e = newTestEngine(t, sc, true); e.nodes["agg"].agg.direct != nil {
		t.Fatal("with Observe, the aggregate writes into its sink directly")
	}
	// A sink value that reads anything but result variables goes through the graph.
	other := strings.Replace(sc, "hi: #agg.hi}", "hi: #agg.hi, k: #key[2]}", 1)
	if e = newTestEngine(t, other, false); e.nodes["agg"].agg.direct != nil {
		t.Fatal("a sink reading #key[2] of a two-value key is written directly")
	}
}

// newTestEngine builds the engine of scenario text sc, with an Observe callback or without.
func newTestEngine(t *testing.T, sc string, observe bool) *Engine {
	t.Helper()
	s, err := scenario.Decode([]byte(sc))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Bounded: true}
	if observe {
		opts.Observe = func(string, map[string]value.Value, int64) {}
	}
	e, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Every window kind and emit mode, with a Late edge and a Sum that overflows: the direct
// path gives the same outputs, errors and counts as the path through the graph (the same
// engine with direct turned off), over disordered input with late events.
func TestDirectSinkAgreesWithGraph(t *testing.T) {
	shapes := []string{
		`"aggregate-tumbling", "parameters": [{"name": "windowLength", "value": "10s"}, {"name": "emitWhen", "value": "OnEnd"}`,
		`"aggregate-tumbling", "parameters": [{"name": "windowLength", "value": "10s"}, {"name": "emitWhen", "value": "OnEndWithExtraWindow"}`,
		`"aggregate-tumbling", "parameters": [{"name": "windowLength", "value": "10s"}, {"name": "emitWhen", "value": "OnEvent"}`,
		`"aggregate-hopping", "parameters": [{"name": "windowLength", "value": "20s"}, {"name": "slide", "value": "5s"}`,
		`"aggregate-sliding", "parameters": [{"name": "windowLength", "value": "10s"}`,
		`"aggregate-sliding", "parameters": [{"name": "windowLength", "value": "10s"}, {"name": "emitWhenEventLeft", "value": true}`,
		`"aggregate-session", "parameters": [{"name": "sessionTimeout", "value": "4s"}`,
		`"aggregate-count", "parameters": [{"name": "windowLength", "value": 3}`,
	}
	var lines []string
	for i := range 300 {
		t := 1000*i - (i*7919)%25000 // up to 25 s of disorder against a 2 s bound: many late
		x := fmt.Sprint(i % 17)
		switch i {
		case 40, 50, 60, 70:
			x = "9223372036854775807" // the Sum of its window overflows: r.Err
		case 90:
			x = "2.5"
		}
		lines = append(lines, fmt.Sprintf(`{"t": %d, "k": "k%d", "r": %d, "x": %s}`, t, i%5, i%2, x))
	}
	input := []byte(strings.Join(lines, "\n"))
	all := ""
	for _, shape := range shapes {
		sinkValue := "{k: #key[0], r: #key[1], from: #window.start, to: #window.end, n: #agg.n, total: #agg.total}"
		if strings.Contains(shape, "OnEvent") || strings.Contains(shape, "sliding") { // results carry the event: no #window
			sinkValue = "{k: #key[0], r: #key[1], n: #agg.n, total: #agg.total}"
		}
		nodes := []string{
			srcNode("in", "#input.t", "2s"),
			`{"id": "agg", "type": "CustomNode", "nodeType": ` + shape + `,
				{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}, {"language": "expr", "expression": "#input.r"}]},
				{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
					{"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.x"}}]}], "outputVar": "agg"}`,
			sinkNode("out", sinkValue),
		}
		edges := []string{link("in", "agg"), link("agg", "out")}
		if !strings.Contains(shape, "aggregate-count") { // the time windows have late events
			nodes, edges = append(nodes, sinkNode("late", "#input.t")), append(edges, typedEdge("agg", "late", "Late"))
		}
		sc := scenarioJSON(nodes, edges)
		run := func(direct bool) string {
			e := newTestEngine(t, sc, false)
			a := e.nodes["agg"].agg
			if !direct {
				a.direct = nil
			}
			if direct && a.direct == nil {
				t.Fatalf("%s: no direct path", shape)
			}
			var buf strings.Builder
			e.opts.Output = func(id string, v value.Value, at int64) {
				fmt.Fprintf(&buf, "%s@%d %s\n", id, at, value.AppendJSON(nil, v))
			}
			sum, err := Replay(context.Background(), e, bytes.NewReader(input))
			if err != nil {
				t.Fatal(err)
			}
			kept, _ := e.Errors()
			for _, x := range kept {
				buf.WriteString(x.String() + "\n")
			}
			sum.Elapsed = 0
			return buf.String() + sum.String()
		}
		got, want := run(true), run(false)
		if got != want {
			t.Fatalf("%s: direct path\n%s\nthrough the graph\n%s", shape, got, want)
		}
		if testing.Verbose() {
			t.Logf("%s: %d lines, %d late, overflow %v", shape, strings.Count(got, "\n"), strings.Count(got, "late@"), strings.Contains(got, "overflow"))
		}
		if !strings.Contains(got, "out@") {
			t.Fatalf("%s: no results:\n%s", shape, got)
		}
		all += got
	}
	if !strings.Contains(all, "late@") || !strings.Contains(all, "overflow") {
		t.Fatalf("the runs lack late events or an overflow:\n%s", all)
	}
}
