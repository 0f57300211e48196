package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// ObserveEmitted on an engine built without Options.Observe (which the doc of
// TestObserveEmittedSeesWholeRecords says is supported) must report each record a source
// emits. Expected by hand: the three records, then (at Flush) the two window results.
func TestObserveEmittedSeesSourceThatFeedsAggregate(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		countSumNode("aggregate-tumbling"),
		sinkNode("out", "{k: #key[0], n: #agg.n, s: #agg.s}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	e := newTestEngine(t, sc, false)
	var seen []string
	e.ObserveEmitted(func(nodeID string, vars map[string]value.Value, at int64) {
		seen = append(seen, nodeID)
	})
	for i, l := range []string{`{"t": 1000, "k": "a", "v": 1}`, `{"t": 2000, "k": "b", "v": 2}`, `{"t": 3000, "k": "a", "v": 3}`} {
		if err := e.PushJSON("in", []byte(l), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	e.Flush()
	got := strings.Join(seen, " ")
	if want := "in in in agg agg"; got != want {
		t.Fatalf("ObserveEmitted saw %q, want %q (source feeds=%v)", got, want, e.sources["in"].feeds != nil)
	}
}

// the fed path (source.feeds, source.tsField) against the path through the graph
// (both turned off on the same engine), on random scenarios (typed or untyped sources, one
// or two sources into the aggregate, several window kinds, a Late edge, #meta, a live
// partitioned source) and random inputs: JSON lines (hostile ones too) and values pushed
// with PushValue (records, non-records, given event times), a snapshot and restore in the
// middle. Everything observable goes into a transcript: outputs, errors, counts, late
// events (ObserveLate and the Late edge).
func TestFedAgreesWithGraphRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		live := rapid.Bool().Draw(rt, "live")
		typed := rapid.Bool().Draw(rt, "typed")
		two := rapid.Bool().Draw(rt, "two")
		meta := rapid.Bool().Draw(rt, "meta")
		lateEdge := rapid.Bool().Draw(rt, "lateEdge")
		kind := rapid.SampledFrom([]string{"aggregate-tumbling", "aggregate-sliding", "aggregate-hopping"}).Draw(rt, "kind")
		fieldsPool := []string{"k", "r", "x", "t"}
		nGroup := rapid.IntRange(1, 2).Draw(rt, "nGroup")
		var groupBy []string
		for i := 0; i < nGroup; i++ {
			groupBy = append(groupBy, `{"language": "expr", "expression": "#input.`+rapid.SampledFrom(fieldsPool).Draw(rt, "g")+`"}`)
		}
		aggBy := rapid.SampledFrom([]string{"x", "t", "k"}).Draw(rt, "aggBy")
		agg := rapid.SampledFrom([]string{"Sum", "Max", "Min", "Last"}).Draw(rt, "agg")
		tsExpr := rapid.SampledFrom([]string{"#input.t", "#input.t", "#input.x"}).Draw(rt, "ts")
		params := `{"name": "windowLength", "value": "10s"}`
		if kind == "aggregate-hopping" {
			params += `, {"name": "slide", "value": "5s"}`
		}
		srcKind := "file"
		if live {
			srcKind = "http"
		}
		src := func(id string) string {
			p := `{"name": "timestamp", "expression": {"language": "expr", "expression": "` + tsExpr + `"}},
				{"name": "maxOutOfOrderness", "value": "2s"}`
			if srcKind == "file" {
				p += `, {"name": "path", "value": "in.jsonl"}`
			}
			if typed {
				p += `, {"name": "schema", "value": {"type": "object", "properties": {"t": {"type": "integer"}, "x": {"type": "number"}, "k": {"type": "string"}, "r": {"type": "integer"}}, "required": ["t", "x", "k", "r"]}}`
			}
			return `{"id": "` + id + `", "type": "Source", "ref": {"typ": "` + srcKind + `", "parameters": [` + p + `]}}`
		}
		sinkValue := "{k: #key[0], n: #agg.n, a: #agg.a, s: #window.start}"
		if kind == "aggregate-sliding" {
			sinkValue = "{k: #key[0], n: #agg.n, a: #agg.a, i: #input.x}"
		}
		if meta {
			sinkValue = "{k: #key[0], n: #agg.n, a: #agg.a, m: #meta.eventTime}"
		}
		aggNode := func(id string) string {
			return `{"id": "` + id + `", "type": "CustomNode", "nodeType": "` + kind + `", "outputVar": "agg", "parameters": [
				{"name": "groupBy", "value": [` + strings.Join(groupBy, ",") + `]},
				{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"},
					{"name": "a", "aggregator": "` + agg + `", "aggregateBy": {"language": "expr", "expression": "#input.` + aggBy + `"}}]},
				` + params + `]}`
		}
		nodesList := []string{src("in"), aggNode("agg"), sinkNode("out", sinkValue)}
		edges := []string{link("in", "agg"), link("agg", "out")}
		if two { // a second source and aggregate, into a Join and one sink
			nodesList = append(nodesList, src("in2"), aggNode("agg2"), sinkNode("out2", sinkValue))
			edges = append(edges, link("in2", "agg2"), link("agg2", "out2"))
		}
		if lateEdge {
			nodesList = append(nodesList, sinkNode("late", "{t: #input.t, w: #late.windowStart}"))
			edges = append(edges, typedEdge("agg", "late", "Late"))
		}
		sc := scenarioJSON(nodesList, edges)
		s, err := scenario.Decode([]byte(sc))
		if err != nil {
			rt.Fatal(err)
		}
		if _, err := New(s, Options{Bounded: true}); errors.Is(err, ErrInvalidScenario) {
			rt.Skip("invalid scenario drawn")
		}
		// Inputs.
		fieldVal := rapid.SampledFrom([]string{`1000`, `2000`, `15000`, `3500`, `-1`, `2.5`, `1e3`, `"a"`, `"b"`, `null`, `true`,
			`[1]`, `{"a": 1}`, `9223372036854775807`, `1700000000000`, `12.0`, `"soon"`})
		type op struct {
			line string
			push bool // PushValue
			at   int64
			src  string
			part int32
			snap bool
		}
		var ops []op
		for i := range rapid.IntRange(1, 40).Draw(rt, "n") {
			var b strings.Builder
			switch rapid.IntRange(0, 12).Draw(rt, "shape") {
			case 0:
				b.WriteString(rapid.SampledFrom([]string{`[1, 2]`, `"text"`, `3`, `null`, `{`, `{"t": }`}).Draw(rt, "bad"))
			default:
				b.WriteString("{")
				first := true
				for _, f := range []string{"t", "k", "r", "x", "z"} {
					if rapid.IntRange(0, 5).Draw(rt, "miss") == 0 {
						continue
					}
					if !first {
						b.WriteString(", ")
					}
					first = false
					v := fieldVal.Draw(rt, "v")
					if f == "t" && rapid.Bool().Draw(rt, "goodT") {
						v = fmt.Sprint(1000 * rapid.IntRange(0, 40).Draw(rt, "sec"))
					}
					fmt.Fprintf(&b, "%q: %s", f, v)
				}
				b.WriteString("}")
			}
			o := op{line: b.String(), src: "in", part: -1, at: math.MinInt64}
			if two && rapid.Bool().Draw(rt, "second") {
				o.src = "in2"
			}
			if rapid.IntRange(0, 2).Draw(rt, "how") == 0 {
				o.push = true
				if rapid.IntRange(0, 3).Draw(rt, "given") == 0 {
					o.at = int64(1000 * rapid.IntRange(0, 40).Draw(rt, "gat"))
				}
			}
			if live {
				o.part = int32(rapid.IntRange(-1, 2).Draw(rt, "part"))
			}
			o.snap = i > 0 && rapid.IntRange(0, 15).Draw(rt, "snap") == 0
			ops = append(ops, o)
		}
		run := func(fed bool) string {
			var tr strings.Builder
			opts := Options{Bounded: true, ScenarioName: "sc", Output: func(id string, v value.Value, at int64) {
				fmt.Fprintf(&tr, "out %s@%d %s\n", id, at, value.AppendJSON(nil, v))
			}}
			e, err := New(s, opts)
			if err != nil {
				rt.Fatal(err)
			}
			setup := func(e *Engine) {
				e.ObserveLate(func(id string, vars map[string]value.Value, at int64, le aggregate.LateError) {
					fmt.Fprintf(&tr, "late %s@%d %s %+v\n", id, at, value.AppendJSON(nil, vars["input"]), le)
				})
				e.OnError(func(x EventError) { fmt.Fprintf(&tr, "err %s\n", x) })
				if !fed {
					for _, src := range e.sources {
						src.feeds, src.tsField = nil, false
					}
				} else if !live && !typed && e.sources["in"].feeds == nil {
					rt.Fatalf("not fed: %s", sc)
				}
			}
			setup(e)
			for i, o := range ops {
				if o.snap {
					snap := e.AppendSnapshot(nil)
					if e, err = New(s, opts); err != nil {
						rt.Fatal(err)
					}
					setup(e)
					if err := e.Restore(snap); err != nil {
						rt.Fatal(err)
					}
				}
				e.SetInputPartition(o.part)
				if o.push {
					v, err := value.ParseJSON([]byte(o.line))
					if err != nil {
						continue
					}
					if err := e.PushValue(o.src, v, o.at, int64(i+1)); err != nil {
						rt.Fatal(err)
					}
				} else if err := e.PushJSON(o.src, []byte(o.line), int64(i+1)); err != nil {
					rt.Fatal(err)
				}
			}
			e.Flush()
			for _, id := range sortedIDs(e.Counts()) {
				fmt.Fprintf(&tr, "count %s %+v\n", id, e.Counts()[id])
			}
			_, n := e.Errors()
			fmt.Fprintf(&tr, "late %d partly %d errors %d\n", e.Late(), e.PartlyLate(), n)
			return tr.String()
		}
		if got, want := run(true), run(false); got != want {
			rt.Fatalf("scenario %s\nfed:\n%s\ngraph:\n%s", sc, got, want)
		}
	})
}

// a run whose context ends (cancelled from within Output after the nth result)
// stops at the same node entry on the fed path as through the graph: same outputs, counts
// and error.
func TestFedCancelsLikeGraph(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		countSumNode("aggregate-tumbling"),
		sinkNode("out", "{k: #key[0], n: #agg.n, s: #agg.s}"),
	}, []string{link("in", "agg"), link("agg", "out")})
	var lines []string
	for i := range 400 {
		lines = append(lines, fmt.Sprintf(`{"t": %d, "k": "k%d", "v": %d}`, i*700, i%7, i))
	}
	input := strings.Join(lines, "\n")
	for cut := 1; cut <= 40; cut += 3 {
		run := func(fed bool) string {
			e := newTestEngine(t, sc, false)
			if !fed {
				e.sources["in"].feeds, e.sources["in"].tsField = nil, false
			} else if e.sources["in"].feeds == nil {
				t.Fatal("not fed")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var b strings.Builder
			n := 0
			e.opts.Output = func(id string, v value.Value, at int64) {
				fmt.Fprintf(&b, "%s@%d %s\n", id, at, value.AppendJSON(nil, v))
				if n++; n == cut {
					cancel()
				}
			}
			_, err := Replay(ctx, e, strings.NewReader(input))
			for _, id := range sortedIDs(e.Counts()) {
				fmt.Fprintf(&b, "count %s %+v\n", id, e.Counts()[id])
			}
			fmt.Fprintf(&b, "err %v\n", err)
			return b.String()
		}
		if got, want := run(true), run(false); got != want {
			t.Fatalf("cut %d: fed\n%s\ngraph\n%s", cut, got, want)
		}
	}
}
