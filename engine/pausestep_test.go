package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
	"pgregory.net/rapid"
)

// pauseGraph is a scenario of one window kind (params: its parameters after groupBy and
// aggregations), fed by a source of #input.t with 3 s of disorder; with chained, a tumbling
// window of 1 min downstream counts the first one's windows per key (two aggregates: the one
// downstream must see all of the first's windows of a step before it closes any).
func pauseGraph(kind, params string, chained bool) string {
	out := `{"language": "expr", "expression": "{k: #key[0], t: #meta.eventTime, n: #agg.n, x: #agg.x}"}`
	nodes := `
  {"id": "in", "type": "Source", "ref": {"typ": "file", "parameters": [
    {"name": "path", "value": "in.jsonl"},
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
    {"name": "maxOutOfOrderness", "value": "3s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "` + kind + `", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
    {"name": "aggregations", "value": [
      {"name": "n", "aggregator": "Count"},
      {"name": "x", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.x"}}]}` + params + `]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": ` + out + `}]}}`
	edges := `{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}`
	if chained {
		nodes += `,
  {"id": "split", "type": "Split"},
  {"id": "win2", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg2", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#agg.n"}]},
    {"name": "aggregations", "value": [{"name": "w", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "1m"}]},
  {"id": "out2", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{n: #key[0], w: #agg2.w, e: #window.end}"}}]}}`
		edges = `{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "split", "edgeType": null},
  {"from": "split", "to": "out", "edgeType": null}, {"from": "split", "to": "win2", "edgeType": null}, {"from": "win2", "to": "out2", "edgeType": null}`
	}
	return `{"nodes": [` + nodes + `], "edges": [` + edges + `]}`
}

// A step split by Options.PauseStep, taken up by ContinueStep, by the next event, or by an
// engine restored from a snapshot taken while it was paused, emits what the whole step emits,
// in the same order, for every window kind that closes on the watermark, alone and with an
// aggregate downstream: random events of a few keys, in disorder and with jumps of the
// watermark over many windows, pushed with a pause at random closes, against the same events
// through an engine whose steps are whole.
func TestPausedStepsEmitAsWholeSteps(t *testing.T) {
	kinds := []struct{ kind, params string }{
		{"aggregate-tumbling", `, {"name": "windowLength", "value": "2s"}`},
		{"aggregate-tumbling", `, {"name": "windowLength", "value": "2s"}, {"name": "emitWhen", "value": "OnEndWithExtraWindow"}`},
		{"aggregate-hopping", `, {"name": "windowLength", "value": "10s"}, {"name": "slide", "value": "1s"}`},
		{"aggregate-sliding", `, {"name": "windowLength", "value": "5s"}, {"name": "emitWhenEventLeft", "value": true}`},
		{"aggregate-session", `, {"name": "sessionTimeout", "value": "3s"}`},
	}
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.SampledFrom(kinds).Draw(rt, "kind")
		chained := rapid.Bool().Draw(rt, "chained")
		sc, err := scenario.Decode([]byte(pauseGraph(k.kind, k.params, chained)))
		if err != nil {
			rt.Fatal(err)
		}
		n := rapid.IntRange(1, 60).Draw(rt, "events")
		lines := make([][]byte, n)
		t0 := int64(1_700_000_000_000)
		for i := range lines {
			if rapid.IntRange(0, 9).Draw(rt, "jump") == 0 {
				t0 += rapid.Int64Range(10_000, 120_000).Draw(rt, "by") // many windows close at once
			}
			ts := t0 + rapid.Int64Range(-4_000, 4_000).Draw(rt, "ts") // some late
			t0 += rapid.Int64Range(0, 700).Draw(rt, "step")
			lines[i] = fmt.Appendf(nil, `{"t": %d, "k": "k%d", "x": %d}`, ts, rapid.IntRange(0, 4).Draw(rt, "k"), i)
		}

		whole := newPauseEngine(rt, sc, nil)
		for i, l := range lines {
			if err := whole.e.PushJSON("in", l, int64(i+1)); err != nil {
				rt.Fatal(err)
			}
		}
		whole.e.Flush()

		pause := func() bool { return rapid.IntRange(0, 2).Draw(rt, "pause") == 0 }
		split := newPauseEngine(rt, sc, pause)
		paused := 0
		for i, l := range lines {
			if err := split.e.PushJSON("in", l, int64(i+1)); err != nil {
				rt.Fatal(err)
			}
			for split.e.StepOpen() {
				paused++
				switch rapid.IntRange(0, 2).Draw(rt, "then") {
				case 0:
					split.e.ContinueStep()
				case 1: // a checkpoint, then a restart from it
					snap := split.e.AppendSnapshot(nil)
					next := newPauseEngine(rt, sc, pause)
					if err := next.e.Restore(snap); err != nil {
						rt.Fatal(err)
					}
					next.prev = split.output()
					split = next
					if !split.e.StepOpen() {
						rt.Fatal("a restored engine's step is not open")
					}
				default: // the next event finishes it first
				}
				if i+1 < len(lines) && rapid.Bool().Draw(rt, "push") {
					break
				}
			}
		}
		split.e.Flush()
		got, want := split.output(), whole.output()
		if g, w := perKey(rt, got), perKey(rt, want); !reflect.DeepEqual(g, w) {
			rt.Fatalf("after %d pauses, the split steps emitted\n%s\nthe whole steps\n%s", paused, got, want)
		}
	})
}

// perKey splits output lines by sink and key, in their order: the order of results is
// given for one key (docs/semantics.md §6); keys closed by one close come in the order of
// their slots, which a pause may change (a close frees the slots of keys left with nothing,
// and later keys take them).
func perKey(t interface{ Fatal(...any) }, out string) map[string][]string {
	m := map[string][]string{}
	for l := range strings.Lines(out) {
		var r struct {
			Sink  string
			Value struct{ K, N any }
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprint(r.Sink, r.Value.K)
		if r.Sink == "out2" {
			k = fmt.Sprint(r.Sink, r.Value.N)
		}
		m[k] = append(m[k], l)
	}
	return m
}

// pauseEngine is an engine writing its output to buf; prev is what the engines it was
// restored after wrote.
type pauseEngine struct {
	e    *Engine
	w    *bufio.Writer
	buf  *bytes.Buffer
	prev string
}

func newPauseEngine(t interface{ Fatal(...any) }, sc *scenario.Scenario, pause func() bool) *pauseEngine {
	p := &pauseEngine{buf: new(bytes.Buffer)}
	p.w = bufio.NewWriter(p.buf)
	var n int64
	e, err := New(sc, Options{ScenarioName: "x", Output: WriteOutput(p.w, &n), Bounded: true, PauseStep: pause})
	if err != nil {
		t.Fatal(err)
	}
	p.e = e
	return p
}

func (p *pauseEngine) output() string {
	p.w.Flush()
	return p.prev + p.buf.String()
}

// A step pauses between two closes when PauseStep says so, and ContinueStep goes on from
// there: 40 events a tumbling window of 2 s apart close 37 windows (the watermark 3 s behind
// the 40th), one at a time, with no pause; then an event 2 minutes on closes the last 3 (the
// empty windows between are not closed one by one), PauseStep saying true each time it is
// asked: it is asked before the second and the third, so the step pauses twice, one more
// window closed at each.
func TestStepPausesAtEachClose(t *testing.T) {
	sc, err := scenario.Decode([]byte(pauseGraph("aggregate-tumbling", `, {"name": "windowLength", "value": "2s"}`, false)))
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	p := newPauseEngine(t, sc, func() bool { asked++; return true })
	var lines []string
	for i := range 40 { // one event in each of 40 windows of 2 s
		lines = append(lines, fmt.Sprintf(`{"t": %d, "k": "a", "x": 1}`, 1_700_000_000_000+int64(i)*2000))
	}
	for i, l := range lines {
		if err := p.e.PushJSON("in", []byte(l), int64(i+1)); err != nil {
			t.Fatal(err)
		}
		if p.e.StepOpen() {
			t.Fatalf("a step paused at event %d, which closes one window at most", i+1)
		}
	}
	// The windows closed so far: those ending at or before 1,700,000,078,000 - 3,000.
	before := strings.Count(p.output(), "\n")
	if before != 37 {
		t.Fatalf("%d windows closed before the jump; want 37 (ends 1,700,000,002,000 to 1,700,000,074,000)", before)
	}
	if err := p.e.PushJSON("in", []byte(`{"t": 1700000200000, "k": "a", "x": 1}`), 41); err != nil {
		t.Fatal(err)
	}
	pauses := 0
	for p.e.StepOpen() {
		pauses++
		if got := strings.Count(p.output(), "\n"); got != before+pauses {
			t.Fatalf("after pause %d, %d windows closed; want %d", pauses, got, before+pauses)
		}
		p.e.ContinueStep()
	}
	// 3 windows left (ends ...076,000 to ...080,000): the first closes without a pause,
	// the two others each after one.
	if pauses != 2 || asked != 2 {
		t.Fatalf("%d pauses, PauseStep asked %d times; want 2 and 2", pauses, asked)
	}
	if got := strings.Count(p.output(), "\n"); got != 40 {
		t.Fatalf("%d windows closed; want 40", got)
	}
}
