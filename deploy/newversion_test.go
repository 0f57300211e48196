package deploy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
)

// A new version keeps the open windows of the aggregates it did not change (and its sources'
// watermarks), as Flink restores an operator's state by its uid and Nussknacker by node id;
// an aggregate it changed starts empty. By hand, windows of 10 s from 1,700,000,000,000:
// version 1 counts k1 at 1 s (v 1) and 2 s (v 2) and k2 at 3 s (v 5); version 2 only adds a
// field to the sink's value: its event at 15 s (k3, v 0) closes [0 s, 10 s) with k1 n 2 sum 3
// and k2 n 1 sum 5, which version 1 counted (before, the window was dropped: nothing). Version
// 3 makes the window 20 s long: it starts empty (k3's event of 15 s, which version 2 had in
// its open window [10 s, 20 s), is not in its [0 s, 20 s)), and its events at 25 s (k3, v 7)
// and 45 s close [0 s, 20 s) with nothing and [20 s, 40 s) with k3 n 1 sum 7.
func TestNewVersionKeepsUnchangedWindows(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "w", tumblingGraph(""))
	r := newRuntime(t, st)
	deploy(t, r, "w", 0)
	ev := func(at int64, k string, v int) []byte {
		return fmt.Appendf(nil, `{"ts": %d, "key": "%s", "v": %d}`, t0+at, k, v)
	}
	recs := [][]byte{ev(1000, "k1", 1), ev(2000, "k1", 2), ev(3000, "k2", 5)}
	ingestAll(t, r, "w", recs, 0, 3)
	waitCommitted(t, r, "w", 3)

	v2 := tumblingGraph(`{"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n, sum: #agg.sum, v: 2}"}}]}`)
	if _, err := st.SaveVersion(t.Context(), "w", 1, store.Draft{Graph: json.RawMessage(v2)}); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, "w", 0)
	recs = append(recs, ev(15_000, "k3", 0))
	ingestAll(t, r, "w", recs, 3, 1)
	waitFor(t, "version 2's results", func() bool { return len(collected(t, st, "w")) >= 2 })
	want := []string{
		fmt.Sprintf(`{"key":"k1","start":%d,"n":2,"sum":3,"v":2}`, t0),
		fmt.Sprintf(`{"key":"k2","start":%d,"n":1,"sum":5,"v":2}`, t0),
	}
	if got := collected(t, st, "w"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("version 2 emitted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	v3 := strings.Replace(v2, `"10s"`, `"20s"`, 1)
	if _, err := st.SaveVersion(t.Context(), "w", 2, store.Draft{Graph: json.RawMessage(v3)}); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, "w", 0)
	recs = append(recs, ev(25_000, "k3", 7), ev(45_000, "k4", 1))
	ingestAll(t, r, "w", recs, 4, 1)
	waitFor(t, "version 3's result", func() bool { return len(collected(t, st, "w")) >= 3 })
	want = append(want, fmt.Sprintf(`{"key":"k3","start":%d,"n":1,"sum":7,"v":2}`, t0+20_000))
	waitCommitted(t, r, "w", 6)
	if got := collected(t, st, "w"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("version 3 emitted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A node keeps its state in a new version when it, the edges into it and everything
// upstream of it are the same (its layout aside). By hand, for in → f → win → out: moving
// nodes keeps all four; a changed sink keeps the three before it; a changed filter keeps in
// alone (win is fed by another f); a changed source keeps nothing; win fed straight from in
// (f left out of its path) keeps in alone.
func TestUnchangedNodes(t *testing.T) {
	graph := func(filter, sink, src string, direct bool) *scenario.Scenario {
		edges := `{"from": "in", "to": "f", "edgeType": null}, {"from": "f", "to": "win", "edgeType": null}`
		if direct {
			edges = `{"from": "in", "to": "win", "edgeType": null}`
		}
		sc, err := scenario.Decode([]byte(`{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "timestamp", "expression": {"language": "expr", "expression": "` + src + `"}}]}, "additionalFields": {"description": "moved", "layoutData": {"x": 1, "y": 2}}},
  {"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "` + filter + `"}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "10s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "` + sink + `"}}]}}
], "edges": [` + edges + `, {"from": "win", "to": "out", "edgeType": null}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	before := graph("#input.k != ''", "#agg", "#input.t", false)
	moved := graph("#input.k != ''", "#agg", "#input.t", false)
	moved.Nodes[0].AdditionalFields = nil
	for _, c := range []struct {
		name string
		now  *scenario.Scenario
		want string
	}{
		{"moved", moved, "f,in,out,win"},
		{"sink", graph("#input.k != ''", "{n: #agg.n}", "#input.t", false), "f,in,win"},
		{"filter", graph("#input.k != 'x'", "#agg", "#input.t", false), "in"},
		{"source", graph("#input.k != ''", "#agg", "#input.t2", false), ""},
		{"rewired", graph("#input.k != ''", "#agg", "#input.t", true), "in"},
	} {
		var got []string
		for id := range unchangedNodes(before, c.now) {
			got = append(got, id)
		}
		slices.Sort(got)
		if strings.Join(got, ",") != c.want {
			t.Errorf("%s: kept %v; want %s", c.name, got, c.want)
		}
	}
}
