package engine

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// fuzzAggregations uses every kind of aggregator on the event's fields.
const fuzzAggregations = `[
 {"name": "n", "aggregator": "Count"},
 {"name": "sum", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "avg", "aggregator": "Average", "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "min", "aggregator": "Min", "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "max", "aggregator": "Max", "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "first", "aggregator": "First", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
 {"name": "last", "aggregator": "Last", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
 {"name": "list", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
 {"name": "set", "aggregator": "Set", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
 {"name": "cd", "aggregator": "CountDistinct", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
 {"name": "hll", "aggregator": "ApproximateSetCardinality", "aggregateBy": {"language": "expr", "expression": "#input.k"}},
 {"name": "med", "aggregator": "Median", "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "p90", "aggregator": "Percentile", "quantile": 0.9, "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "ap", "aggregator": "ApproximatePercentile", "quantile": 0.5, "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "var", "aggregator": "VarSamp", "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "sd", "aggregator": "StddevPop", "aggregateBy": {"language": "expr", "expression": "#input.v"}},
 {"name": "cw", "aggregator": "CountWhen", "aggregateBy": {"language": "expr", "expression": "#input.v > 0"}}]`

// fuzzScenarios: a tumbling and a sliding aggregate of every aggregator grouped by #input.k,
// from an HTTP source whose event time is #input.t; the first with an enforced schema
// (#input typed, fields read by name), the second with #input unknown.
func fuzzScenarios(t testing.TB) []*scenario.Scenario {
	schema := `, {"name": "enforceSchema", "value": true}, {"name": "schema", "value": {"type": "object",
	  "properties": {"t": {"type": "integer"}, "k": {"type": ["string", "null"]}, "v": {"type": "number", "minimum": -1e300, "multipleOf": 0.5}}, "required": ["t", "v"], "additionalProperties": true}}`
	var out []*scenario.Scenario
	for _, c := range []struct{ params, agg, extra string }{
		{schema, "aggregate-tumbling", `{"name": "emitWhen", "value": "OnEnd"}`},
		{"", "aggregate-sliding", `{"name": "emitWhenEventLeft", "value": true}`},
	} {
		sc := scenarioJSON([]string{
			`{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
			{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
			{"name": "maxOutOfOrderness", "value": "5s"}` + c.params + `]}}`,
			`{"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "#input.v != 13"}}`,
			`{"id": "agg", "type": "CustomNode", "nodeType": "` + c.agg + `", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": ` + fuzzAggregations + `},
			{"name": "windowLength", "value": "10s"}, ` + c.extra + `]}`,
			sinkNode("out", "{key: #key, agg: #agg}"),
		}, []string{link("in", "f"), typedEdge("f", "agg", "FilterTrue"), link("agg", "out")})
		s, err := scenario.Decode([]byte(sc))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// FuzzPushEvents pushes arbitrary lines as events through scenarios with every aggregator:
// no line may panic the engine (a bad one is a per-event error), and an engine snapshotted
// after the first half of the lines and restored gives, for the second half, what the
// engine that never stopped gives.
func FuzzPushEvents(f *testing.F) {
	for _, s := range []string{
		`{"t": 1000, "k": "a", "v": 1}` + "\n" + `{"t": 2000, "k": "b", "v": 2.5}` + "\n" + `{"t": 30000, "k": "a", "v": -1}`,
		`{"t": 1000, "k": "a", "v": 1e308}` + "\n" + `{"t": 1001, "k": "a", "v": 1e308}` + "\n" + `{"t": 99999, "k": null, "v": -1e308}`,
		`{"t": 9223372036854775807, "k": "a", "v": 1}` + "\n" + `{"t": -9223372036854775808, "k": "a", "v": 1}`,
		`{"t": 1000, "k": ["x", {"y": 1}], "v": 9223372036854775807}` + "\n" + `{"t": 1000, "k": ["x", {"y": 1}], "v": 9223372036854775807}`,
		`{"t": 1.5, "k": "a", "v": "x"}` + "\n" + `{"t": 1000}` + "\n" + `[1]` + "\n" + `{"t": 1000, "v": 0, "k": "\ud800"}`,
		`{"t": 5000, "v": 0e99999, "k": "z"}` + "\n" + `{"t": 5000, "v": -0.0e-99999, "k": "z"}`,
		`{"t": 5000, "v": 13, "k": "z"}` + "\n" + `{"t": 1e3, "v": 1, "k": "z"}` + "\n" + `{"t": 0, "v": 0, "k": ""}`,
	} {
		f.Add([]byte(s))
	}
	scs := fuzzScenarios(f)
	run := func(t *testing.T, s *scenario.Scenario, lines [][]byte, cut int) (string, string) {
		var out bytes.Buffer
		opts := Options{Now: func() time.Time { return time.UnixMilli(1_000_000_000) },
			Output: func(sink string, v value.Value, at int64) {
				fmt.Fprintf(&out, "%s %d %s\n", sink, at, value.AppendJSON(nil, v))
			}}
		e, err := New(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		var errs strings.Builder
		for i, l := range lines {
			if i == cut {
				snap := e.AppendSnapshot(nil)
				if e, err = New(s, opts); err != nil {
					t.Fatal(err)
				}
				if err := e.Restore(snap); err != nil {
					t.Fatalf("restoring a snapshot: %v", err)
				}
			}
			if err := e.PushJSON("in", l, int64(i+1)); err != nil {
				fmt.Fprintf(&errs, "%d: %v\n", i+1, err)
			}
		}
		e.Flush()
		evs, n := e.Errors()
		fmt.Fprintf(&errs, "%d errors\n", n)
		for _, ev := range evs {
			// The schema library lists an event's problems in no fixed order (known, left open).
			parts := strings.Split(ev.Message, "; ")
			sort.Strings(parts)
			ev.Message = strings.Join(parts, "; ")
			fmt.Fprintf(&errs, "%+v\n", ev)
		}
		return out.String(), errs.String()
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lines := bytes.Split(b, []byte("\n"))
		if len(lines) > 64 {
			return
		}
		for _, s := range scs {
			out, errs := run(t, s, lines, -1)
			out2, errs2 := run(t, s, lines, len(lines)/2)
			if out != out2 || errs != errs2 {
				t.Fatalf("through a snapshot after %d lines:\n%s%s\nwithout:\n%s%s", len(lines)/2, out2, errs2, out, errs)
			}
		}
	})
}
