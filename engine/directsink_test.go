package engine

import (
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
