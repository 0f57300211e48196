package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/scenario"
	"pgregory.net/rapid"
)

// pauseGraph is a scenario of one window kind (params: its parameters after groupBy and
// aggregations), fed by an HTTP source of #input.t with 3 s of disorder and an idle timeout
// of 1 s (Tick moves its watermark on); downstream, when given (down: a tumbling window of
// 1 min, or a session window of 10 s), a second aggregate counts the first one's windows per
// key (two aggregates: the one downstream must see all of the first's windows of a step
// before it closes any; a session merges what it is given late otherwise).
func pauseGraph(kind, params, down string) string {
	out := `{"language": "expr", "expression": "{k: #key[0], t: #meta.eventTime, n: #agg.n, x: #agg.x}"}`
	nodes := `
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
    {"name": "maxOutOfOrderness", "value": "3s"}, {"name": "idleTimeout", "value": "1s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "` + kind + `", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
    {"name": "aggregations", "value": [
      {"name": "n", "aggregator": "Count"},
      {"name": "x", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.x"}}]}` + params + `]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": ` + out + `}]}}`
	edges := `{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}`
	if down != "" {
		params := `{"name": "windowLength", "value": "1m"}`
		if down == "aggregate-session" {
			params = `{"name": "sessionTimeout", "value": "10s"}`
		}
		nodes += `,
  {"id": "split", "type": "Split"},
  {"id": "win2", "type": "CustomNode", "nodeType": "` + down + `", "outputVar": "agg2", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#key[0]"}]},
    {"name": "aggregations", "value": [{"name": "w", "aggregator": "Count"}]},
    ` + params + `]},
  {"id": "out2", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{n: #key[0], w: #agg2.w, t: #meta.eventTime}"}}]}}`
		edges = `{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "split", "edgeType": null},
  {"from": "split", "to": "out", "edgeType": null}, {"from": "split", "to": "win2", "edgeType": null}, {"from": "win2", "to": "out2", "edgeType": null}`
	}
	return `{"nodes": [` + nodes + `], "edges": [` + edges + `]}`
}

// A step split by Options.PauseStep, taken up by ContinueStep, by the next event, by an idle
// Tick that moves the watermark on meanwhile, or by an engine restored from a snapshot taken
// while it was paused, emits what the whole step emits, in the same order for each key, for
// every window kind that closes on the watermark, alone and with an aggregate downstream
// (tumbling or session): random events of a few keys, in disorder and with jumps of the
// watermark over many windows, and idle ticks between them, pushed with a pause at random
// closes, against the same events and ticks through an engine whose steps are whole. (A
// review found a Tick while a step was open advanced the upstream aggregate past the step's
// watermark before the downstream session had caught up: its sessions merged otherwise.)
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
		down := rapid.SampledFrom([]string{"", "aggregate-tumbling", "aggregate-session"}).Draw(rt, "down")
		sc, err := scenario.Decode([]byte(pauseGraph(k.kind, k.params, down)))
		if err != nil {
			rt.Fatal(err)
		}
		n := rapid.IntRange(1, 60).Draw(rt, "events")
		lines := make([][]byte, n)
		ticks := make([]int64, n) // after event i, the clock goes on ticks[i] ms and the engine ticks (0: none)
		t0 := int64(1_700_000_000_000)
		for i := range lines {
			if rapid.IntRange(0, 9).Draw(rt, "jump") == 0 {
				t0 += rapid.Int64Range(10_000, 120_000).Draw(rt, "by") // many windows close at once
			}
			ts := t0 + rapid.Int64Range(-4_000, 4_000).Draw(rt, "ts") // some late
			t0 += rapid.Int64Range(0, 700).Draw(rt, "step")
			lines[i] = fmt.Appendf(nil, `{"t": %d, "k": "k%d", "x": %d}`, ts, rapid.IntRange(0, 4).Draw(rt, "k"), i)
			if rapid.IntRange(0, 3).Draw(rt, "tick") == 0 {
				ticks[i] = rapid.Int64Range(1_000, 30_000).Draw(rt, "tickBy")
			}
		}
		start := time.UnixMilli(t0 + time.Hour.Milliseconds()) // the clock, ahead of every event

		wholeClock := start
		whole := newPauseEngine(rt, sc, nil, &wholeClock)
		for i, l := range lines {
			if err := whole.e.PushJSON("in", l, int64(i+1)); err != nil {
				rt.Fatal(err)
			}
			if ticks[i] > 0 {
				wholeClock = wholeClock.Add(time.Duration(ticks[i]) * time.Millisecond)
				whole.e.Tick(wholeClock)
			}
		}
		whole.e.Flush()

		pause := func() bool { return rapid.IntRange(0, 2).Draw(rt, "pause") == 0 }
		clock := start
		split := newPauseEngine(rt, sc, pause, &clock)
		paused := 0
		// settle handles an open step: goes on with it, restarts from a snapshot (only while
		// the clock has not moved since the last event: a restore counts a source's silence
		// from then), or leaves it for what comes next.
		settle := func(mayRestore bool) {
			for split.e.StepOpen() {
				paused++
				switch rapid.IntRange(0, 2).Draw(rt, "then") {
				case 0:
					split.e.ContinueStep()
				case 1:
					if !mayRestore {
						continue
					}
					snap := split.e.AppendSnapshot(nil)
					next := newPauseEngine(rt, sc, pause, &clock)
					if err := next.e.Restore(snap); err != nil {
						rt.Fatal(err)
					}
					next.prev = split.output()
					split = next
					if !split.e.StepOpen() {
						rt.Fatal("a restored engine's step is not open")
					}
				default: // left open: the next event, tick or flush finishes it first
					return
				}
			}
		}
		for i, l := range lines {
			if err := split.e.PushJSON("in", l, int64(i+1)); err != nil {
				rt.Fatal(err)
			}
			settle(true)
			if ticks[i] > 0 {
				clock = clock.Add(time.Duration(ticks[i]) * time.Millisecond)
				split.e.Tick(clock)
				settle(false)
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

// newPauseEngine builds an engine of sc writing to its buffer, with pause as its PauseStep,
// reading *clock as the wall clock (nil: a bounded run, which reads none).
func newPauseEngine(t interface{ Fatal(...any) }, sc *scenario.Scenario, pause func() bool, clock *time.Time) *pauseEngine {
	p := &pauseEngine{buf: new(bytes.Buffer)}
	p.w = bufio.NewWriter(p.buf)
	var n int64
	opts := Options{ScenarioName: "x", Output: WriteOutput(p.w, &n), Bounded: clock == nil, PauseStep: pause}
	if clock != nil {
		opts.Now = func() time.Time { return *clock }
	}
	e, err := New(sc, opts)
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
	sc, err := scenario.Decode([]byte(pauseGraph("aggregate-tumbling", `, {"name": "windowLength", "value": "2s"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	p := newPauseEngine(t, sc, func() bool { asked++; return true }, nil)
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

// One close pauses between two keys' results too: five keys' events in the tumbling window
// [1,700,000,000,000, +2 s), then an event 10 s on (the watermark 3 s behind it) closes that
// window, five results in one close; so does one 5 s on, whose watermark is the window's end
// exactly (the last close of a step, at its target, pauses too). PauseStep saying true each
// time it is asked, it is asked before the second result and each one after: four pauses,
// one more result at each, in the order of the whole close.
func TestStepPausesWithinAClose(t *testing.T) {
	sc, err := scenario.Decode([]byte(pauseGraph("aggregate-tumbling", `, {"name": "windowLength", "value": "2s"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	for _, jump := range []int64{10_000, 5_000} {
		lines := []string{}
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			lines = append(lines, fmt.Sprintf(`{"t": 1700000000500, "k": "%s", "x": 1}`, k))
		}
		lines = append(lines, fmt.Sprintf(`{"t": %d, "k": "a", "x": 1}`, 1_700_000_000_000+jump))
		asked := 0
		p := newPauseEngine(t, sc, func() bool { asked++; return true }, nil)
		for i, l := range lines {
			if err := p.e.PushJSON("in", []byte(l), int64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		pauses := 0
		for p.e.StepOpen() {
			pauses++
			if got := strings.Count(p.output(), "\n"); got != pauses {
				t.Fatalf("jump %d: after pause %d, %d results; want %d", jump, pauses, got, pauses)
			}
			p.e.ContinueStep()
		}
		if pauses != 4 || asked != 4 {
			t.Fatalf("jump %d: %d pauses, PauseStep asked %d times; want 4 and 4", jump, pauses, asked)
		}
		var keys []string
		for _, l := range strings.Split(strings.TrimSpace(p.output()), "\n") {
			var r struct{ Value struct{ K string } }
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, r.Value.K)
		}
		if got := strings.Join(keys, ""); got != "abcde" {
			t.Fatalf("jump %d: the close emitted keys %q; want abcde, in the order they came", jump, got)
		}
	}
}

// A step paused part way goes on to the watermark it set out for before a later one: a
// tumbling window of 10 s feeds a session window of 10 s per key, with 20 s of disorder and
// an idle timeout of 1 s. Events of key a at 5 s, 15 s, 25 s and 49.999 s move the watermark
// to 29.999 s: the tumbling window closes [0 s, 10 s) and [10 s, 20 s) (emitted at 9.999 s
// and 19.999 s), and the session of those two closes at 29.999 s with count 2. An idle tick
// 5 s later moves the watermark past 50 s: [20 s, 30 s) reaches the session late (its
// session closed), [40 s, 50 s) starts one of count 1. By hand: {c 2, 9.999 s to 29.999 s},
// then {c 1, from 49.999 s} at the flush, whole or paused after the first close and ticked
// before ContinueStep (a review: the tick advanced the tumbling window to the new watermark
// before the session had closed at the old one, and the session counted 3).
func TestPausedStepGoesOnToItsWatermark(t *testing.T) {
	sc, err := scenario.Decode([]byte(`{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
    {"name": "maxOutOfOrderness", "value": "20s"}, {"name": "idleTimeout", "value": "1s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "10s"}]},
  {"id": "sess", "type": "CustomNode", "nodeType": "aggregate-session", "outputVar": "s", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#key[0]"}]},
    {"name": "aggregations", "value": [{"name": "c", "aggregator": "Count"}]},
    {"name": "sessionTimeout", "value": "10s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{k: #key[0], c: #s.c, st: #window.start}"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "sess", "edgeType": null}, {"from": "sess", "to": "out", "edgeType": null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sink":"out","value":{"k":"a","c":2,"st":9999}}` + "\n" + `{"sink":"out","value":{"k":"a","c":1,"st":49999}}` + "\n"
	for _, pauseOnce := range []bool{false, true} {
		clock := time.UnixMilli(1_000_000)
		asked := 0
		p := newPauseEngine(t, sc, func() bool { asked++; return pauseOnce && asked == 1 }, &clock)
		for i, ts := range []int64{5000, 15000, 25000, 49999} {
			if err := p.e.PushJSON("in", fmt.Appendf(nil, `{"t": %d, "k": "a"}`, ts), int64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		if p.e.StepOpen() != pauseOnce {
			t.Fatalf("paused %v: StepOpen %v", pauseOnce, p.e.StepOpen())
		}
		clock = clock.Add(5 * time.Second) // silent past its idle timeout
		p.e.Tick(clock)
		for p.e.StepOpen() {
			p.e.ContinueStep()
		}
		p.e.Flush()
		if got := p.output(); got != want {
			t.Errorf("paused %v: emitted\n%s\nwant\n%s", pauseOnce, got, want)
		}
	}
}
