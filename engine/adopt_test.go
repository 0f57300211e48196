package engine

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
)

// adoptGraph counts per key in tumbling windows of length, of #input.t with no disorder, into
// the collect sink "out" of value sinkExpr.
func adoptGraph(length, sinkExpr string) *scenario.Scenario {
	sc, err := scenario.Decode([]byte(`{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "file", "parameters": [
    {"name": "path", "value": "in.jsonl"},
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
    {"name": "maxOutOfOrderness", "value": "0s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "` + length + `"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "` + sinkExpr + `"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}]}`))
	if err != nil {
		panic(err)
	}
	return sc
}

// Another version adopts the states of the nodes the caller says did not change, and only
// those: a on 1 s and 2 s and b on 3 s in a window of 10 s, a snapshot, then a version whose
// sink writes more: its event of 15 s closes [0 s, 10 s) with a counted 2 and b 1, which the
// first version counted (by hand); a version whose window is 20 s long (not adopted) closes
// nothing there, and its 25 s event closes [0 s, 20 s) with its own event of 15 s alone.
func TestAdoptStates(t *testing.T) {
	v1 := adoptGraph("10s", "{k: #key[0], n: #agg.n}")
	first, e1 := runLines(t, v1, [][]byte{[]byte(`{"t": 1000, "k": "a"}`), []byte(`{"t": 2000, "k": "a"}`), []byte(`{"t": 3000, "k": "b"}`)}, 1, nil, false)
	if first != "" {
		t.Fatalf("the first version emitted %q before its windows closed", first)
	}
	snap := e1.AppendSnapshot(nil)
	states, err := e1.NodeStates(snap)
	if err != nil || len(states) != 2 || states["in"] == nil || states["win"] == nil {
		t.Fatalf("node states %v, %v; want in's and win's", states, err)
	}

	for _, c := range []struct {
		name, length string
		adopt        []string
		lines        []string
		want         string
	}{
		{"the sink changed", "10s", []string{"in", "win"}, []string{`{"t": 15000, "k": "c"}`},
			`{"sink":"out","value":{"k":"a","n":2,"v":2}}` + "\n" + `{"sink":"out","value":{"k":"b","n":1,"v":2}}` + "\n"},
		{"the window changed", "20s", []string{"in"}, []string{`{"t": 15000, "k": "c"}`, `{"t": 25000, "k": "c"}`},
			`{"sink":"out","value":{"k":"c","n":1,"v":2}}` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v2 := adoptGraph(c.length, "{k: #key[0], n: #agg.n, v: 2}")
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			e2, err := New(v2, Options{ScenarioName: "x", Output: WriteOutput(w, new(int64))})
			if err != nil {
				t.Fatal(err)
			}
			adopted, err := e2.AdoptStates(states, func(id string) bool { return slices.Contains(c.adopt, id) })
			if err != nil || strings.Join(adopted, ",") != strings.Join(c.adopt, ",") {
				t.Fatalf("adopted %v, %v; want %v", adopted, err, c.adopt)
			}
			for i, l := range c.lines {
				if err := e2.PushJSON("in", []byte(l), int64(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			if out.String() != c.want {
				t.Errorf("emitted\n%s\nwant\n%s", out.String(), c.want)
			}
		})
	}
}
