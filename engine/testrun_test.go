package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// ObserveEmitted reports each record a source emits and each window result
// of an aggregate (also one with nothing below it), with the line Line gives
// at that moment; Observe still sees every node; counts are unchanged.
func TestObserveEmittedAndLine(t *testing.T) {
	// A tumbling 10 s count: line 2 is not JSON; the event of line 4
	// (t=12000) closes window [0,10s) of key a, the end of input closes
	// [10s,20s). A second aggregate has only a dead end below it.
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "10s"}, {"name": "emitWhen", "value": "OnEnd"}]}`,
		`{"id": "loose", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "all", "parameters": [
			{"name": "groupBy", "value": []},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "1h"}, {"name": "emitWhen", "value": "OnEnd"}]}`,
		sinkNode("out", "#agg.n"),
		`{"id": "split", "type": "Split"}`,
		`{"id": "end", "type": "Sink", "ref": {"typ": "dead-end"}}`,
	}, []string{link("in", "split"), link("split", "agg"), link("split", "loose"), link("agg", "out"), link("loose", "end")})
	s, err := scenario.Decode([]byte(sc))
	if err != nil {
		t.Fatal(err)
	}
	var e *Engine
	var observed, emitted, outputs []string
	e, err = New(s, Options{
		Observe: func(id string, vars map[string]value.Value, et int64) {
			observed = append(observed, fmt.Sprintf("%s@%d line %d", id, et, e.Line()))
		},
		Output: func(id string, v value.Value, et int64) {
			outputs = append(outputs, fmt.Sprintf("%s=%s line %d", id, value.AppendJSON(nil, v), e.Line()))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.ObserveEmitted(func(id string, vars map[string]value.Value, et int64) {
		var names []string
		for name := range vars {
			names = append(names, name)
		}
		slices.Sort(names)
		emitted = append(emitted, fmt.Sprintf("%s@%d line %d %s", id, et, e.Line(), strings.Join(names, ",")))
	})
	if _, err := Replay(context.Background(), e, strings.NewReader(`{"t": 1000, "k": "a"}
{"t": 1500, "k":
{"t": 2000, "k": "a"}
{"t": 12000, "k": "a"}
`)); err != nil {
		t.Fatal(err)
	}
	wantEmitted := []string{
		"in@1000 line 1 " + nodes.VarInput,
		"in@2000 line 3 " + nodes.VarInput,
		"in@12000 line 4 " + nodes.VarInput,
		"agg@9999 line 4 agg,key,window",  // closed by line 4's watermark step
		"agg@19999 line 0 agg,key,window", // closed by the end of input
		"loose@3599999 line 0 all,key,window",
	}
	if !slices.Equal(emitted, wantEmitted) {
		t.Errorf("emitted:\n%s\nwant:\n%s", strings.Join(emitted, "\n"), strings.Join(wantEmitted, "\n"))
	}
	wantObserved := []string{
		"split@1000 line 1", "agg@1000 line 1", "loose@1000 line 1",
		"split@2000 line 3", "agg@2000 line 3", "loose@2000 line 3",
		"split@12000 line 4", "agg@12000 line 4", "loose@12000 line 4",
		"out@9999 line 4",
		"out@19999 line 0",
		"end@3599999 line 0",
	}
	if !slices.Equal(observed, wantObserved) {
		t.Errorf("observed:\n%s\nwant:\n%s", strings.Join(observed, "\n"), strings.Join(wantObserved, "\n"))
	}
	if want := []string{"out=2 line 4", "out=1 line 0"}; !slices.Equal(outputs, want) {
		t.Errorf("outputs %q, want %q", outputs, want)
	}
	counts := e.Counts()
	if len(counts) != 6 {
		t.Errorf("counts of %d nodes, want 6 (no probes): %v", len(counts), counts)
	}
	if c := counts["in"]; c.In != 4 || c.Out != 3 || c.Errors != 1 {
		t.Errorf("source counts %+v", c)
	}
	if c := counts["agg"]; c.In != 3 || c.Out != 2 {
		t.Errorf("agg counts %+v", c)
	}
	if c := counts["loose"]; c.In != 3 || c.Out != 1 {
		t.Errorf("loose counts %+v", c)
	}
}
